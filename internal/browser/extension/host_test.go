package extension

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr/funcr"
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

func TestHelloRules(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	var challengedEpochs []float64

	t.Run("no nonce", func(t *testing.T) {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		_ = writeJSON(t, c, map[string]string{"type": "hello", "version": "0.1.0", "kid": extKeyID(token)})
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("short nonce", func(t *testing.T) {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": "abc", "kid": extKeyID(token)})
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("the old protocol: the token itself in hello", func(t *testing.T) {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		_ = writeJSON(t, c, map[string]string{"type": "hello", "token": token, "version": "0.1.0"})
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("wrong key", func(t *testing.T) {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		wrong := token[:len(token)-2] + "AA"
		_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID(wrong), "version": "0.1.0"})
		expectClose(t, c, CloseUnauthorized) // no challenge: nothing to learn
	})
	t.Run("right key id, wrong proof", func(t *testing.T) {
		// A peer that saw an earlier hello knows the key id; it still cannot prove the key.
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		ch, _, err := challenged(t, c, token)
		if err != nil {
			t.Fatal(err)
		}
		challengedEpochs = append(challengedEpochs, ch["epoch"].(float64))
		_ = writeJSON(t, c, map[string]string{"type": "auth", "proof": hmacB64(extKey("guess"), "tabwarden-ext-v1\n"+ch["nonce"].(string))})
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("replayed auth", func(t *testing.T) {
		// A full, valid exchange is recorded; its auth is replayed on a new connection.
		c, _, _ := dialRaw(t, th, testOrigin, "")
		ch, nonceE, err := challenged(t, c, token)
		if err != nil {
			t.Fatal(err)
		}
		challengedEpochs = append(challengedEpochs, ch["epoch"].(float64))
		recorded := hmacB64(extKey(token), "tabwarden-ext-v1\n"+ch["nonce"].(string)+"\n"+nonceE)
		_ = c.CloseNow() // best effort: the connection is going away either way
		c2, _, _ := dialRaw(t, th, testOrigin, "")
		ch2, _, err := challenged(t, c2, token)
		if err != nil {
			t.Fatal(err)
		}
		if ch2["nonce"] == ch["nonce"] {
			t.Fatal("the host repeated its nonce")
		}
		challengedEpochs = append(challengedEpochs, ch2["epoch"].(float64))
		_ = writeJSON(t, c2, map[string]string{"type": "auth", "proof": recorded})
		expectClose(t, c2, CloseUnauthorized)
	})
	t.Run("not a hello first", func(t *testing.T) {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		_ = writeJSON(t, c, map[string]any{"type": "command", "id": "1", "op": "observe", "kid": extKeyID(token)})
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("binary hello", func(t *testing.T) {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID(token)})
		_ = c.Write(context.Background(), websocket.MessageBinary, b)
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("silent", func(t *testing.T) {
		th := startHost(t, "", func(o *Options) { o.HelloTimeout = 300 * time.Millisecond })
		pair(t, th)
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		expectClose(t, c, websocket.StatusPolicyViolation)
		if time.Since(start) > 3*time.Second {
			t.Fatal("hello timeout not enforced")
		}
	})
	t.Run("silent after the challenge", func(t *testing.T) {
		th := startHost(t, "", func(o *Options) { o.HelloTimeout = 300 * time.Millisecond })
		token := pair(t, th)
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := challenged(t, c, token); err != nil {
			t.Fatal(err)
		}
		expectClose(t, c, websocket.StatusPolicyViolation)
	})
	t.Run("oversized hello", func(t *testing.T) {
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		big := strings.Repeat("x", DefaultMaxFrameBytes+1)
		_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": big})
		expectClose(t, c, websocket.StatusMessageTooBig)
	})
	if th.Driver().Connected() {
		t.Fatal("a refused connection counts as connected")
	}
	fe := connectExt(t, th, token, nil)
	for _, e := range challengedEpochs {
		if float64(fe.epoch) <= e {
			t.Fatalf("epoch %d after refused attempts that were challenged with %v", fe.epoch, challengedEpochs)
		}
	}
	if fe.epoch == 1 {
		t.Fatal("epochs start at 1: they must start at a random value per process")
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

func TestExpiredCodeRefused(t *testing.T) {
	th := startHost(t, "", nil)
	code, exp := th.NewPairingCode()
	if got := exp.Sub(th.clock.Now()); got != 5*time.Minute {
		t.Fatalf("code valid for %s, want 5m", got)
	}
	th.clock.Advance(5*time.Minute + time.Second)
	resp, body := postPair(t, th, testOrigin, codeBody(code))
	if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "token") {
		t.Fatalf("expired code: %d %q", resp.StatusCode, body)
	}
	// Just inside the five minutes a fresh code works.
	code, _ = th.NewPairingCode()
	th.clock.Advance(5*time.Minute - time.Second)
	pairWith(t, th, testOrigin, code)
}

func TestReusedCodeRefused(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	first := pairWith(t, th, testOrigin, code)
	for _, origin := range []string{testOrigin, otherOrigin} {
		resp, body := postPair(t, th, origin, codeBody(code))
		if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "token") {
			t.Fatalf("reused code from %s: %d %q", origin, resp.StatusCode, body)
		}
	}
	// The first token still works: a refused reuse revokes nothing.
	connectExt(t, th, first, nil)
}

func TestMintingReplacesEarlierCode(t *testing.T) {
	th := startHost(t, "", nil)
	old, _ := th.NewPairingCode()
	code, _ := th.NewPairingCode()
	if old != code {
		if resp, _ := postPair(t, th, testOrigin, codeBody(old)); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("superseded code: %d", resp.StatusCode)
		}
	}
	pairWith(t, th, testOrigin, code)
}

// An attacker's wrong guesses never make the real user's correct code fail: there is
// no time lockout that is shared between them, only a per-code budget of wrong guesses.
func TestWrongGuessesNeverLockOutTheRealCode(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	guess := 0
	for i := 0; i < maxFailuresPerCode-1; i++ { // everything below the burn, as fast as possible
		g := wrongGuess(code, &guess)
		resp, body := postPair(t, th, testOrigin, codeBody(g))
		if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "token") || !strings.Contains(body, "invalid_code") {
			t.Fatalf("wrong guess %d: %d %q", i, resp.StatusCode, body)
		}
		if resp.Header.Get("Retry-After") != "" {
			t.Fatal("a wrong guess started a lockout")
		}
	}
	// The user types the right code at once: it works.
	pairWith(t, th, testOrigin, code)

	// Wrong guesses against an old code do not count against the next one.
	code, _ = th.NewPairingCode()
	for i := 0; i < maxFailuresPerCode-1; i++ {
		postPair(t, th, testOrigin, codeBody(wrongGuess(code, &guess)))
	}
	code, _ = th.NewPairingCode()
	for i := 0; i < maxFailuresPerCode-1; i++ {
		postPair(t, th, testOrigin, codeBody(wrongGuess(code, &guess)))
	}
	pairWith(t, th, testOrigin, code)
}

func wrongGuess(code string, n *int) string {
	for {
		g := fmt.Sprintf("%06d", *n)
		*n++
		if g[:3]+"-"+g[3:] != code {
			return g[:3] + "-" + g[3:]
		}
	}
}

func TestBruteForceBurnsCode(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	guess := 0
	var last string
	for i := 0; i < maxFailuresPerCode; i++ {
		resp, body := postPair(t, th, testOrigin, codeBody(wrongGuess(code, &guess)))
		if resp.StatusCode == http.StatusOK {
			t.Fatal("wrong code paired")
		}
		last = body
	}
	if !strings.Contains(last, "code_burned") {
		t.Fatalf("the %dth wrong guess: %q, want code_burned", maxFailuresPerCode, last)
	}
	// The right code is burned too, with an error that says what to do.
	resp, body := postPair(t, th, testOrigin, codeBody(code))
	if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "token") ||
		!strings.Contains(body, "code_burned") || !strings.Contains(body, "run `tabwarden pair` again") {
		t.Fatalf("code after %d wrong guesses: %d %q", maxFailuresPerCode, resp.StatusCode, body)
	}
	// A new code works at once.
	code, _ = th.NewPairingCode()
	pairWith(t, th, testOrigin, code)
}

func TestSecondConnectionRefusedFirstStays(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	fe := connectExt(t, th, token, func(c cmd) reply {
		return reply{result: observeResult{Windows: []wireWindow{{ID: 1, Type: "normal"}}, Tabs: []wireTab{{ID: 7, WindowID: 1, URL: "https://a.example/"}}}}
	})
	d := th.Driver()
	if ev := nextEvent(t, d); ev.Type != "Connected" || ev.Epoch != fe.epoch {
		t.Fatalf("event %+v", ev)
	}
	c, _, err := dialRaw(t, th, testOrigin, "")
	if err != nil {
		t.Fatal(err)
	}
	ch, _, err := challenged(t, c, token)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.CloseNow() // best effort: the connection is going away either way
	c, _, _ = dialRaw(t, th, testOrigin, "")
	if _, err := authenticate(t, c, token); err != nil {
		t.Fatal(err)
	}
	expectClose(t, c, CloseAlreadyConnected)
	// A second connection with a wrong key learns nothing about the first: 4401.
	c, _, _ = dialRaw(t, th, testOrigin, "")
	_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID("nope")})
	expectClose(t, c, CloseUnauthorized)
	// The first is untouched.
	if !d.Connected() {
		t.Fatal("first connection dropped")
	}
	if ch["epoch"].(float64) <= float64(fe.epoch) {
		t.Fatalf("a later handshake was challenged with epoch %v, not after %d", ch["epoch"], fe.epoch)
	}
	snap, err := d.Snapshot(context.Background())
	if err != nil || len(snap.Pages) != 1 || snap.Epoch != fe.epoch {
		t.Fatalf("snapshot through the first connection: %+v %v", snap, err)
	}
	fe.send(map[string]string{"type": "ping"})
	if m := <-fe.other; m["type"] != "pong" {
		t.Fatalf("got %v", m)
	}
	noEvent(t, d, 100*time.Millisecond)
}

func TestRepairRevokesOldToken(t *testing.T) {
	th := startHost(t, "", nil)
	old := pair(t, th)
	fe := connectExt(t, th, old, nil)
	d := th.Driver()
	nextEvent(t, d) // Connected
	// Re-pair (the extension id is pinned: the same extension, e.g. after its storage was cleared).
	code, _ := th.NewPairingCode()
	resp, body := postPair(t, th, testOrigin, codeBody(code))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("re-pair: %d %q", resp.StatusCode, body)
	}
	var out struct{ Token string }
	_ = json.Unmarshal([]byte(body), &out)
	if ev := nextEvent(t, d); ev.Type != "Disconnected" {
		t.Fatalf("event %+v, want Disconnected", ev)
	}
	fe.closedWith(CloseUnauthorized)
	// The old key is refused.
	c, _, err := dialRaw(t, th, testOrigin, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID(old)})
	expectClose(t, c, CloseUnauthorized)
	// The new one connects (the old connection no longer blocks it), in a later epoch.
	c, _, err = dialRaw(t, th, testOrigin, "")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := handshake(t, c, out.Token); err != nil || m["type"] != "welcome" || m["epoch"].(float64) <= float64(fe.epoch) {
		t.Fatalf("new token: %v %v", m, err)
	}
}

// Only the pinned extension id may pair or connect: another extension (or a build of
// ours with another key) is refused, the code stays valid, and it is not charged.
func TestPinnedExtensionID(t *testing.T) {
	th := startHost(t, "", nil)
	if th.ExtensionOrigin() != testOrigin {
		t.Fatalf("pinned origin %q", th.ExtensionOrigin())
	}
	code, _ := th.NewPairingCode()
	for i := 0; i < maxFailuresPerCode+1; i++ {
		resp, body := postPair(t, th, otherOrigin, codeBody(code))
		if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "token") || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("pairing from another extension: %d %q", resp.StatusCode, body)
		}
	}
	token := pairWith(t, th, testOrigin, code)
	if _, resp, err := dialRaw(t, th, otherOrigin, ""); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("connect from another extension: %v %v", err, resp)
	}
	connectExt(t, th, token, nil)

	// The default is the id of extension/ (its manifest key); the environment overrides it.
	h, err := New(Options{Addr: "127.0.0.1:0", StateDir: stateDir(t)})
	if err != nil || h.ExtensionOrigin() != "chrome-extension://"+DefaultExtensionID {
		t.Fatalf("default pinned origin %q %v", h.ExtensionOrigin(), err)
	}
	t.Setenv(ExtensionIDEnv, "ponmlkjihgfedcbaponmlkjihgfedcba")
	if h, err := New(Options{Addr: "127.0.0.1:0", StateDir: stateDir(t)}); err != nil || h.ExtensionOrigin() != otherOrigin {
		t.Fatalf("pinned origin from the environment %q %v", h.ExtensionOrigin(), err)
	}
	if _, err := New(Options{Addr: "127.0.0.1:0", StateDir: stateDir(t), ExtensionID: "not-an-id"}); err == nil {
		t.Fatal("a malformed extension id was accepted")
	}
}

// The manifest's key gives the extension the pinned id: Chrome's id is the first 128
// bits of sha256(the DER public key), written with the letters a-p.
func TestManifestKeyGivesThePinnedID(t *testing.T) {
	data, err := os.ReadFile("../../../extension/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Key == "" {
		t.Fatalf("manifest key: %v", err)
	}
	der, err := base64.StdEncoding.DecodeString(m.Key)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	var id strings.Builder
	for _, c := range hex.EncodeToString(sum[:16]) {
		n, _ := strconv.ParseUint(string(c), 16, 8)
		id.WriteByte(byte('a' + n))
	}
	if id.String() != DefaultExtensionID {
		t.Fatalf("the manifest key gives id %s, the host pins %s", id.String(), DefaultExtensionID)
	}
}

// The whole life of a pairing with the logger at maximum verbosity: the token, its
// hash (hex or base64) and the code never appear in the log.
func TestSecretsNeverLogged(t *testing.T) {
	th := startHost(t, "", nil)
	code, _ := th.NewPairingCode()
	digits := strings.ReplaceAll(code, "-", "")
	postPair(t, th, testOrigin, codeBody("000-001"))
	token := pairWith(t, th, testOrigin, code)
	fe := connectExt(t, th, token, nil)
	c, _, _ := dialRaw(t, th, testOrigin, "")
	if _, err := authenticate(t, c, token); err != nil {
		t.Fatal(err)
	}
	expectClose(t, c, CloseAlreadyConnected)
	c, _, _ = dialRaw(t, th, testOrigin, "")
	_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID(token + "x")})
	expectClose(t, c, CloseUnauthorized)
	c, _, _ = dialRaw(t, th, testOrigin, "")
	_ = writeJSON(t, c, map[string]string{"type": "hello", "token": token})
	expectClose(t, c, CloseUnauthorized)
	_ = fe.c.Close(websocket.StatusNormalClosure, "") // best effort: the connection is going away either way
	waitFor(t, "disconnect", func() bool { return !th.Driver().Connected() })
	code2, _ := th.NewPairingCode()
	token2 := pairWith(t, th, testOrigin, code2)
	_ = th.Close() // best-effort cleanup
	// And a restart loading the state.
	th2 := startHost(t, th.dir, nil)
	connectExt(t, th2, token2, nil)

	logs := th.logs.String() + th2.logs.String()
	if !strings.Contains(logs, "paired") || !strings.Contains(logs, "extension connected") {
		t.Fatalf("log capture is not working:\n%s", logs)
	}
	for _, tok := range []string{token, token2} {
		sum := sha256.Sum256([]byte(tok))
		k := extKey(tok)
		for name, secret := range map[string]string{
			"token": tok, "hex hash": hex.EncodeToString(sum[:]), "HEX hash": strings.ToUpper(hex.EncodeToString(sum[:])),
			"b64 hash": base64.StdEncoding.EncodeToString(sum[:]), "b64url hash": base64.RawURLEncoding.EncodeToString(sum[:]),
			"hex key": hex.EncodeToString(k), "b64 key": base64.StdEncoding.EncodeToString(k), "b64url key": base64.RawURLEncoding.EncodeToString(k),
		} {
			if strings.Contains(logs, secret) {
				t.Errorf("%s appears in the log", name)
			}
		}
	}
	if strings.Contains(logs, code) || strings.Contains(logs, digits) {
		t.Error("the pairing code appears in the log")
	}
}

func TestStateFile(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	fi, err := os.Stat(th.dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v %v", fi.Mode().Perm(), err)
	}
	path := filepath.Join(th.dir, stateFileName)
	fi, err = os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v %v", fi.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(path)
	raw, _ := base64.RawURLEncoding.DecodeString(token)
	if len(raw) != 32 {
		t.Fatalf("token is %d bytes, want 32", len(raw))
	}
	if strings.Contains(string(data), token) || strings.Contains(string(data), string(raw)) ||
		strings.Contains(string(data), hex.EncodeToString(raw)) || strings.Contains(string(data), base64.StdEncoding.EncodeToString(raw)) {
		t.Fatal("state file holds the token")
	}
	// It holds the derived key k (0600): what the handshake needs, not the token.
	if !strings.Contains(string(data), base64.RawURLEncoding.EncodeToString(extKey(token))) || !strings.Contains(string(data), testOrigin) {
		t.Fatalf("state file lacks the key or origin: %s", data)
	}
	entries, _ := os.ReadDir(th.dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	// A state directory created loose is tightened; a loose state file too.
	loose := stateDir(t)
	if err := os.MkdirAll(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	if err := os.WriteFile(filepath.Join(loose, stateFileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(loose, stateFileName), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Addr: "127.0.0.1:0", StateDir: loose}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o700 {
		t.Errorf("loose dir left %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(loose, stateFileName)); fi.Mode().Perm() != 0o600 {
		t.Errorf("loose state file left %v", fi.Mode().Perm())
	}
	// A corrupt state file is an error, not a silent unpairing.
	for _, corrupt := range []string{`{"origin":"http://evil.example","tokenSha256":"00"}`,
		`{"version":2,"origin":"` + testOrigin + `","key":"short"}`, `{"version":3,"origin":"` + testOrigin + `"}`, `nope`} {
		if err := os.WriteFile(filepath.Join(loose, stateFileName), []byte(corrupt), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Options{Addr: "127.0.0.1:0", StateDir: loose}); err == nil {
			t.Errorf("corrupt state accepted: %s", corrupt)
		}
	}
	// A pairing of the previous version (only sha256(token)) cannot authenticate the
	// handshake: the host starts unpaired and says so.
	if err := os.WriteFile(filepath.Join(loose, stateFileName), []byte(`{"version":1,"origin":"`+testOrigin+`","tokenSha256":"`+strings.Repeat("ab", 32)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	h, err := New(Options{Addr: "127.0.0.1:0", StateDir: loose, Logger: funcr.New(func(p, a string) { logs.write(p + a) }, funcr.Options{})})
	if err != nil || h.Paired() || !strings.Contains(logs.String(), "run `tabwarden pair` again") {
		t.Errorf("version 1 state: paired=%v err=%v log %q", h != nil && h.Paired(), err, logs.String())
	}
}

func TestPairingSurvivesRestart(t *testing.T) {
	dir := stateDir(t)
	th := startHost(t, dir, nil)
	token := pair(t, th)
	connectExt(t, th, token, nil)
	_ = th.Close() // best-effort cleanup

	th2 := startHost(t, dir, nil)
	if th2.PairedOrigin() != testOrigin {
		t.Fatalf("paired origin after restart: %q", th2.PairedOrigin())
	}
	connectExt(t, th2, token, nil)
	// Other keys still are not.
	c, _, _ := dialRaw(t, th2, testOrigin, "")
	_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID("AAAA")})
	expectClose(t, c, CloseUnauthorized)
}

func TestControlSocket(t *testing.T) {
	th := startHost(t, "", nil)
	sock := SocketPath(th.dir)
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi.Mode(), err)
	}
	p, err := RequestPairing(context.Background(), th.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Expires.Equal(th.clock.Now().Add(CodeTTL)) || len(p.Code) != 7 || p.Code[3] != '-' {
		t.Fatalf("code %q expires %v", p.Code, p.Expires)
	}
	// The port to type is the one the host listens on (a free one here), not the default.
	if p.Addr != th.Addr() || p.Addr == DefaultAddr {
		t.Fatalf("pairing names address %q, want the host's %q", p.Addr, th.Addr())
	}
	pairWith(t, th, testOrigin, p.Code)

	// A second agent on the same state directory is refused while the first runs.
	h2, err := New(Options{Addr: "127.0.0.1:0", StateDir: th.dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Start(context.Background()); err == nil {
		_ = h2.Close() // best-effort cleanup
		t.Fatal("second agent started on the same state directory")
	}

	// A peer with another uid is dropped before it is served (simulated by
	// changing the uid the socket serves).
	th.mu.Lock()
	th.ctlUID = os.Getuid() + 1
	th.mu.Unlock()
	if _, err := RequestPairing(context.Background(), th.dir); err == nil {
		t.Fatal("control socket served another uid")
	}
	// No agent: a clear error.
	if _, err := RequestPairing(context.Background(), stateDir(t)); err == nil || !strings.Contains(err.Error(), "no tabwarden agent") {
		t.Fatalf("no agent: %v", err)
	}
	// Close removes the socket; a restart finds no stale socket in its way.
	_ = th.Close() // best-effort cleanup
	if _, err := os.Lstat(sock); err == nil {
		t.Fatal("socket left after Close")
	}
	startHost(t, th.dir, nil)
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
