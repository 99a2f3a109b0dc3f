package extension

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr/funcr"

	"github.com/tabwarden/tabwarden/internal/browser"
)

const (
	testExtID   = "abcdefghijklmnopabcdefghijklmnop"
	testOrigin  = "chrome-extension://" + testExtID
	otherOrigin = "chrome-extension://ponmlkjihgfedcbaponmlkjihgfedcba"
)

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) write(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type testHost struct {
	*Host
	dir   string
	logs  *logBuf
	clock *fakeClock
}

// stateDir is short on purpose: Unix socket paths are limited to ~104 bytes.
func stateDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "twx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) }) // best-effort cleanup
	return base + "/state"
}

func startHost(t *testing.T, dir string, mod func(*Options)) *testHost {
	t.Helper()
	if dir == "" {
		dir = stateDir(t)
	}
	logs := &logBuf{}
	clk := &fakeClock{t: time.Date(2026, 10, 4, 12, 0, 0, 0, time.UTC)}
	opts := Options{
		Addr:     "127.0.0.1:0",
		StateDir: dir,
		Logger: funcr.New(func(prefix, args string) { logs.write(prefix + " " + args + "\n") },
			funcr.Options{Verbosity: 10}),
		Now:         clk.Now,
		ExtensionID: testExtID,
	}
	if mod != nil {
		mod(&opts)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := h.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() }) // best-effort cleanup
	return &testHost{Host: h, dir: dir, logs: logs, clock: clk}
}

func (th *testHost) url(path string) string { return "http://" + th.Addr() + path }

// postPair POSTs body to /v1/pair with the given Origin ("" for none).
func postPair(t *testing.T, th *testHost, origin, body string, mods ...func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, th.url("/v1/pair"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for _, m := range mods {
		m(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/pair: %v", err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func codeBody(code string) string {
	b, _ := json.Marshal(map[string]string{"code": code})
	return string(b)
}

// pairWith trades code for a token as the extension at origin; fails the test otherwise.
func pairWith(t *testing.T, th *testHost, origin, code string) string {
	t.Helper()
	resp, body := postPair(t, th, origin, codeBody(code))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pair: %d %s", resp.StatusCode, body)
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.Token == "" {
		t.Fatalf("pair: no token in %q", body)
	}
	return out.Token
}

func pair(t *testing.T, th *testHost) string {
	t.Helper()
	code, _ := th.NewPairingCode()
	return pairWith(t, th, testOrigin, code)
}

// dialRaw opens /v1/connect with an Origin ("" for none) and an optional Host override.
func dialRaw(t *testing.T, th *testHost, origin, host string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{}
	if origin != "" {
		hdr.Set("Origin", origin)
	}
	c, resp, err := websocket.Dial(ctx, "ws://"+th.Addr()+"/v1/connect", &websocket.DialOptions{HTTPHeader: hdr, Host: host})
	if c != nil {
		c.SetReadLimit(-1)
		t.Cleanup(func() { _ = c.CloseNow() }) // best effort: the connection is going away either way
	}
	return c, resp, err
}

func writeJSON(t *testing.T, c *websocket.Conn, v any) error {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, b)
}

func readJSON(t *testing.T, c *websocket.Conn) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("frame %q: %v", b, err)
	}
	return m, nil
}

// expectClose reads until the connection ends and checks its close status.
func expectClose(t *testing.T, c *websocket.Conn, want websocket.StatusCode) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, b, err := c.Read(ctx)
		cancel()
		if err != nil {
			if got := websocket.CloseStatus(err); got != want {
				t.Fatalf("close status %d (%v), want %d", got, err, want)
			}
			return
		}
		if strings.Contains(string(b), `"welcome"`) {
			t.Fatalf("got a welcome, want close %d", want)
		}
	}
}

// --- a fake extension -------------------------------------------------------------

type cmd struct {
	ID   string          `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// reply is a handler's answer; noReply leaves the command unanswered.
type reply struct {
	result  any
	err     *wireError
	noReply bool
}

type fakeExt struct {
	t       *testing.T
	c       *websocket.Conn
	epoch   int64
	cmds    chan cmd
	other   chan map[string]any
	done    chan struct{}
	err     error // why the connection ended, once done is closed
	handler func(cmd) reply
}

// closedWith waits for the connection to end and checks the close status.
func (fe *fakeExt) closedWith(want websocket.StatusCode) {
	fe.t.Helper()
	select {
	case <-fe.done:
	case <-time.After(10 * time.Second):
		fe.t.Fatalf("connection still open, want close %d", want)
	}
	if got := websocket.CloseStatus(fe.err); got != want {
		fe.t.Fatalf("close status %d (%v), want %d", got, fe.err, want)
	}
}

// The extension's side of the handshake, written from the protocol document (not
// with the host's helpers): k = SHA-256("tabwarden-key-v1\n" + token).
func extKey(token string) []byte {
	k := sha256.Sum256([]byte("tabwarden-key-v1\n" + token))
	return k[:]
}

func hmacB64(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func extKeyID(token string) string {
	m := hmac.New(sha256.New, extKey(token))
	m.Write([]byte("tabwarden-key-id-v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

func testNonce() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// challenged says hello on c for the key of token and returns the host's challenge,
// after checking the host's proof. (The nonce used is returned too.)
func challenged(t *testing.T, c *websocket.Conn, token string) (challenge map[string]any, nonceE string, err error) {
	t.Helper()
	nonceE = testNonce()
	if err := writeJSON(t, c, map[string]string{"type": "hello", "version": "0.1.0", "nonce": nonceE, "kid": extKeyID(token)}); err != nil {
		return nil, nonceE, err
	}
	m, err := readJSON(t, c)
	if err != nil {
		return nil, nonceE, err
	}
	if m["type"] != "challenge" {
		t.Fatalf("answer to hello %v, want challenge", m)
	}
	nonceH, _ := m["nonce"].(string)
	epoch := int64(m["epoch"].(float64))
	want := hmacB64(extKey(token), fmt.Sprintf("tabwarden-host-v1\n%s\n%s\n%d", nonceE, nonceH, epoch))
	if m["proof"] != want {
		t.Fatalf("the host's proof is wrong: %v", m)
	}
	return m, nonceE, nil
}

// authenticate runs the extension's side of the handshake with token's key up to
// its auth frame, and returns the challenge; the host's answer is left unread.
func authenticate(t *testing.T, c *websocket.Conn, token string) (map[string]any, error) {
	t.Helper()
	ch, nonceE, err := challenged(t, c, token)
	if err != nil {
		return nil, err
	}
	nonceH := ch["nonce"].(string)
	proof := hmacB64(extKey(token), "tabwarden-ext-v1\n"+nonceH+"\n"+nonceE)
	return ch, writeJSON(t, c, map[string]string{"type": "auth", "proof": proof})
}

// handshake runs the extension's side of the handshake with token's key; it returns
// the welcome (or the error reading it).
func handshake(t *testing.T, c *websocket.Conn, token string) (map[string]any, error) {
	t.Helper()
	ch, err := authenticate(t, c, token)
	if err != nil {
		return nil, err
	}
	m, err := readJSON(t, c)
	if err == nil && (m["type"] != "welcome" || m["epoch"] != ch["epoch"]) {
		t.Fatalf("after auth: %v, want welcome for epoch %v", m, ch["epoch"])
	}
	return m, err
}

// connectExt connects as the paired extension, runs the handshake and waits for welcome.
func connectExt(t *testing.T, th *testHost, token string, handler func(cmd) reply) *fakeExt {
	t.Helper()
	c, _, err := dialRaw(t, th, testOrigin, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	m, err := handshake(t, c, token)
	if err != nil {
		t.Fatalf("waiting for welcome: %v", err)
	}
	fe := &fakeExt{t: t, c: c, epoch: int64(m["epoch"].(float64)), cmds: make(chan cmd, 100),
		other: make(chan map[string]any, 100), done: make(chan struct{}), handler: handler}
	go fe.loop()
	return fe
}

func (fe *fakeExt) loop() {
	defer close(fe.done)
	for {
		_, b, err := fe.c.Read(context.Background())
		if err != nil {
			fe.err = err
			return
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m["type"] != "command" {
			fe.other <- m
			continue
		}
		var c cmd
		_ = json.Unmarshal(b, &c)
		fe.cmds <- c
		go func() {
			r := reply{result: map[string]any{}}
			if fe.handler != nil {
				r = fe.handler(c)
			}
			if r.noReply {
				return
			}
			f := map[string]any{"type": "result", "id": c.ID, "ok": r.err == nil}
			if r.err != nil {
				f["error"] = r.err
			} else {
				f["result"] = r.result
			}
			b, _ := json.Marshal(f)
			_ = fe.c.Write(context.Background(), websocket.MessageText, b)
		}()
	}
}

func (fe *fakeExt) send(v any) {
	fe.t.Helper()
	if err := writeJSON(fe.t, fe.c, v); err != nil {
		fe.t.Fatalf("send: %v", err)
	}
}

func (fe *fakeExt) event(name string, body map[string]any) {
	fe.t.Helper()
	f := map[string]any{"type": "event", "event": name}
	for k, v := range body {
		f[k] = v
	}
	fe.send(f)
}

// nextCmd returns the next command the host sent with op (skipping others).
func (fe *fakeExt) nextCmd(op string) cmd {
	fe.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-fe.cmds:
			if c.Op == op {
				return c
			}
		case <-deadline:
			fe.t.Fatalf("no %s command", op)
		}
	}
}

func nextEvent(t *testing.T, d *Driver) browser.Event {
	t.Helper()
	select {
	case ev := <-d.Events():
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return browser.Event{}
}

func noEvent(t *testing.T, d *Driver, wait time.Duration) {
	t.Helper()
	select {
	case ev := <-d.Events():
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(wait):
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
