package cdp

import "testing"

// TestBlocksEveryRequestToTheControlPort: a request is failed when its
// destination port is the DevTools endpoint's or one of BlockPorts, whatever
// the host is called; other ports, and urls with no network destination, pass.
func TestBlocksEveryRequestToTheControlPort(t *testing.T) {
	ports := controlPorts("ws://127.0.0.1:9222/devtools/browser/abc", []int{6443})
	for _, u := range []string{
		"http://127.0.0.1:9222/json/close/X", "http://localhost:9222/json", "http://127.1:9222/", "http://0x7f000001:9222/",
		"http://[::1]:9222/", "http://rebind.attacker.example:9222/json/activate/X", "ws://127.0.0.1:9222/devtools/page/X",
		"https://10.0.0.1:9222/", "https://127.0.0.1:6443/api", "http://%zz:9222",
	} {
		if !blocksRequest(ports, u) {
			t.Errorf("%s is not blocked", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:9223/", "https://example.com/", "http://example.com/", "data:text/html,hi", "about:blank", "blob:https://example.com/1"} {
		if blocksRequest(ports, u) {
			t.Errorf("%s is blocked", u)
		}
	}
	if got := controlPorts("http://[::1]:9333", nil); !got["9333"] || len(got) != 1 {
		t.Errorf("controlPorts(http://[::1]:9333) = %v", got)
	}
	if got := controlPorts("pipe", nil); len(got) != 0 {
		t.Errorf("a pipe has no control port, got %v", got)
	}
	// The socket of tabwarden cdp-bridge has no port; BlockPorts still apply.
	for _, e := range []string{"unix:/run/tabwarden/cdp/cdp.sock", "unix:///run/tabwarden/cdp/cdp.sock"} {
		if got := controlPorts(e, []int{8081, 8443}); len(got) != 2 || !got["8081"] || !got["8443"] {
			t.Errorf("controlPorts(%s, 8081, 8443) = %v: want the BlockPorts alone", e, got)
		}
	}
}
