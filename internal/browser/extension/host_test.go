package extension

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestListenOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":47321", "192.168.1.10:47321", "10.0.0.1:0",
		"example.com:47321", "[fe80::1%lo]:0", "127.0.0.1"} {
		_, err := New(Options{Addr: addr, StateDir: stateDir(t)})
		if err == nil {
			t.Errorf("New(%q) accepted a non-loopback listen address", addr)
		} else {
			t.Logf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0", ""} {
		if _, err := New(Options{Addr: addr, StateDir: stateDir(t)}); err != nil {
			t.Errorf("New(%q): %v", addr, err)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without a state directory succeeded")
	}
}

func TestPeerIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:5555":          true,
		"127.8.9.10:1":            true,
		"[::1]:5555":              true,
		"[::ffff:127.0.0.1]:5555": true,
		"192.168.1.5:1234":        false,
		"10.0.0.1:80":             false,
		"[2001:db8::1]:443":       false,
		"[::ffff:10.0.0.1]:80":    false,
		"[fe80::1%lo]:80":         false,
		"garbage":                 false,
		"":                        false,
		"127.0.0.1":               false,
	} {
		if got := peerIsLoopback(addr); got != want {
			t.Errorf("peerIsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// A request that arrives from a non-loopback peer with everything else right
// (Host, Origin, the valid code) is refused, and the code is not consumed.
func TestNonLoopbackPeerRefused(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	for _, path := range []string{"/v1/pair", "/v1/connect"} {
		req := httptest.NewRequest(http.MethodPost, "http://"+th.Addr()+path, strings.NewReader(codeBody(code)))
		req.Host = th.Addr()
		req.RemoteAddr = "203.0.113.7:5555"
		req.Header.Set("Origin", testOrigin)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		th.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || strings.Contains(rec.Body.String(), "token") ||
			rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s from 203.0.113.7: %d %q %v", path, rec.Code, rec.Body, rec.Header())
		}
	}
	pairWith(t, th, testOrigin, code) // still valid
}

// Origins other than a chrome-extension:// one are refused before the code is looked
// at: no token, no CORS header, no rate-limit charge, the code stays valid.
func TestPairRefusesNonExtensionOrigins(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	cases := map[string]func(*http.Request){
		"missing":      func(r *http.Request) { r.Header.Del("Origin") },
		"web page":     func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") },
		"https page":   func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") },
		"localhost":    func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:"+strconv.Itoa(th.port)) },
		"null":         func(r *http.Request) { r.Header.Set("Origin", "null") },
		"short id":     func(r *http.Request) { r.Header.Set("Origin", "chrome-extension://abcdef") },
		"uppercase id": func(r *http.Request) { r.Header.Set("Origin", strings.ToUpper(testOrigin)) },
		"id out of a-p": func(r *http.Request) {
			r.Header.Set("Origin", "chrome-extension://abcdefghijklmnopqrstuvwxyzabcdef")
		},
		"trailing slash": func(r *http.Request) { r.Header.Set("Origin", testOrigin+"/") },
		"moz-extension":  func(r *http.Request) { r.Header.Set("Origin", "moz-extension://abcdefghijklmnopabcdefghijklmnop") },
		"two origins": func(r *http.Request) {
			r.Header.Set("Origin", "http://evil.example")
			r.Header.Add("Origin", testOrigin)
		},
	}
	for name, mod := range cases {
		for i := 0; i < 3; i++ { // more than enough to trip the limiter if it were charged
			resp, body := postPair(t, th, testOrigin, codeBody(code), mod)
			if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "token") ||
				resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s: %d %q ACAO=%q", name, resp.StatusCode, body, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		}
	}
	// A web page's CORS preflight is refused as well, without CORS headers.
	req, _ := http.NewRequest(http.MethodOptions, th.url("/v1/pair"), nil)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // the body is read; a close error changes nothing
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("web page preflight: %d %v", resp.StatusCode, resp.Header)
	}
	// The extension's own answer carries its exact origin.
	resp, body := postPair(t, th, testOrigin, codeBody(code))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != testOrigin {
		t.Fatalf("extension pairing after the attacks: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestForgedHostHeaderRefused(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	port := strconv.Itoa(th.port)
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1", "127.0.0.1:1",
		"localhost", "127.0.0.1.evil.example:" + port, "[::1]:" + port} {
		resp, body := postPair(t, th, testOrigin, codeBody(code), func(r *http.Request) { r.Host = host })
		if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "token") {
			t.Errorf("POST with Host %q: %d %q", host, resp.StatusCode, body)
		}
	}
	// The WebSocket too (after pairing, with the paired origin).
	pairWith(t, th, testOrigin, code)
	_, resp, err := dialRaw(t, th, testOrigin, "evil.example:"+port)
	if err == nil || resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("WebSocket with a forged Host: err=%v resp=%v", err, resp)
	}
	// localhost:<port> is fine.
	resp, _ = postPair(t, th, testOrigin, codeBody("000-000"), func(r *http.Request) { r.Host = "localhost:" + port })
	if resp.StatusCode != http.StatusForbidden { // reached the code check
		t.Errorf("Host localhost:port: %d", resp.StatusCode)
	}
}

func TestConnectRefusesForeignOrigins(t *testing.T) {
	th := startHost(t, "", nil)
	// Before pairing nobody may connect, not even an extension.
	if _, resp, err := dialRaw(t, th, testOrigin, ""); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("connect before pairing: err=%v resp=%v", err, resp)
	}
	token := pair(t, th)
	for _, origin := range []string{"", "http://evil.example", "https://mail.example", "null", otherOrigin,
		"http://127.0.0.1:" + strconv.Itoa(th.port)} {
		_, resp, err := dialRaw(t, th, origin, "")
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("connect with Origin %q: err=%v resp=%v", origin, err, resp)
		}
	}
	// Even knowing the key, a web page's WebSocket never gets to say hello.
	if c, _, err := dialRaw(t, th, "http://evil.example", ""); err == nil {
		_, _ = handshake(t, c, token)
		t.Fatal("web page WebSocket was upgraded")
	}
	if th.Driver().Connected() {
		t.Fatal("connected after refused attempts")
	}
}

func TestOversizedFrameCloses1009(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	fe := connectExt(t, th, token, nil)
	waitFor(t, "connected", th.Driver().Connected)
	// Exactly the limit is fine: a ping padded to 1 MiB.
	pad := DefaultMaxFrameBytes - len(`{"type":"ping","pad":""}`)
	fe.send(map[string]string{"type": "ping", "pad": strings.Repeat("p", pad)})
	select {
	case m := <-fe.other:
		if m["type"] != "pong" {
			t.Fatalf("got %v, want pong", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pong for a 1 MiB frame")
	}
	fe.send(map[string]string{"type": "ping", "pad": strings.Repeat("p", pad+1)})
	fe.closedWith(websocket.StatusMessageTooBig)
	waitFor(t, "disconnected", func() bool { return !th.Driver().Connected() })
	// The close status as the client saw it.
	c, _, _ := dialRaw(t, th, testOrigin, "")
	if m, err := handshake(t, c, token); err != nil || m["type"] != "welcome" {
		t.Fatalf("reconnect: %v %v", m, err)
	}
	_ = writeJSON(t, c, map[string]string{"type": "ping", "pad": strings.Repeat("p", pad+1)})
	expectClose(t, c, websocket.StatusMessageTooBig)
}

func TestOversizedPairBody(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	body := `{"code":"` + code + `","pad":"` + strings.Repeat("a", 2048) + `"}`
	resp, out := postPair(t, th, testOrigin, body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || strings.Contains(out, "token") {
		t.Fatalf("2 KiB body: %d %q", resp.StatusCode, out)
	}
	resp, out = postPair(t, th, testOrigin, codeBody(code), func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") })
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain body: %d %q", resp.StatusCode, out)
	}
	pairWith(t, th, testOrigin, code)
}

func TestRoutesAndMethods(t *testing.T) {
	th := startHost(t, "", nil)
	req, _ := http.NewRequest(http.MethodGet, th.url("/v1/pair"), nil)
	req.Header.Set("Origin", testOrigin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // the body is read; a close error changes nothing
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/pair: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodGet, th.url("/debug/pprof/"), nil)
	req.Header.Set("Origin", testOrigin)
	resp, _ = http.DefaultClient.Do(req)
	_ = resp.Body.Close() // the body is read; a close error changes nothing
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	// The extension's preflight (if Chrome sends one) is answered for its origin only.
	req, _ = http.NewRequest(http.MethodOptions, th.url("/v1/pair"), nil)
	req.Header.Set("Origin", testOrigin)
	resp, _ = http.DefaultClient.Do(req)
	_ = resp.Body.Close() // the body is read; a close error changes nothing
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != testOrigin {
		t.Errorf("extension preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// Connections that never say hello cannot pile up.
func TestPendingHandshakesBounded(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	var silent []*websocket.Conn
	for i := 0; i < maxHandshaking; i++ {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatalf("silent connection %d: %v", i, err)
		}
		silent = append(silent, c)
	}
	if _, resp, err := dialRaw(t, th, testOrigin, ""); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("connection beyond the bound: %v %v", err, resp)
	}
	for _, c := range silent {
		_ = c.CloseNow() // best effort: the connection is going away either way
	}
	waitFor(t, "handshakes released", func() bool {
		th.mu.Lock()
		defer th.mu.Unlock()
		return th.handshaking == 0
	})
	connectExt(t, th, token, nil)
}
