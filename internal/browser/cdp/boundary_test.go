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
	if got := controlPorts("ws://127.0.0.1:09222/devtools/browser/abc", nil); !got["9222"] || len(got) != 1 || !blocksRequest(got, "http://127.0.0.1:9222/json") {
		t.Errorf("an endpoint whose port has leading zeros: control ports %v, want 9222 (as a page's url names it)", got)
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

// TestInterceptPatternsPauseOnlyControlPorts: the Fetch patterns pause every
// canonical url (as Chromium matches them: without the fragment) whose port is
// a control port, under any name of the host, and not a page's ordinary
// requests; a control port that is a scheme's default pauses everything.
// test/e2e/cdp TestPagesNeverReachTheDevToolsEndpoint proves the same on
// Chromium, route by route.
func TestInterceptPatternsPauseOnlyControlPorts(t *testing.T) {
	pats := interceptPatterns(controlPorts("ws://127.0.0.1:9222/devtools/browser/abc", []int{6443}))
	paused := func(u string) bool {
		for _, p := range pats {
			if matchPattern(u, p.URLPattern) {
				return true
			}
		}
		return false
	}
	for _, u := range []string{
		"http://127.0.0.1:9222/json/close/X", "http://localhost:9222/json", "http://127.0.0.1:9222/", "http://[::1]:9222/",
		"http://[::ffff:7f00:1]:9222/json/activate/X", "http://rebind.attacker.example:9222/?q", "https://10.0.0.1:9222/",
		"https://127.0.0.1:6443/api", "http://user:pw@127.0.0.1:9222/json/close/X", "https://xn--bcher-kva.example:9222/",
	} {
		if !paused(u) {
			t.Errorf("%s is not paused", u)
		}
		if !blocksRequest(controlPorts("ws://127.0.0.1:9222/", []int{6443}), u) {
			t.Errorf("%s is paused but not blocked", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:9223/", "https://example.com/", "http://example.com/app.js", "https://example.com:8443/x", "http://127.0.0.1:19222/", "http://127.0.0.1:92220/"} {
		if paused(u) {
			t.Errorf("%s is paused", u)
		}
	}
	for _, ports := range [][]int{{80}, {443}, {21}} {
		if got := interceptPatterns(controlPorts("unix:/run/cdp.sock", ports)); len(got) != 1 || got[0].URLPattern != "*" {
			t.Errorf("control port %d (a scheme's default, not written in a url): patterns %+v, want [*]", ports[0], got)
		}
	}
}

// matchPattern is Chromium's base::MatchPattern for the patterns
// interceptPatterns makes: '*' any run of characters, '?' one.
func matchPattern(s, pat string) bool {
	if pat == "" {
		return s == ""
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if matchPattern(s[i:], pat[1:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && matchPattern(s[1:], pat[1:])
	}
	return s != "" && s[0] == pat[0] && matchPattern(s[1:], pat[1:])
}
