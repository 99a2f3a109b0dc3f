package extension

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/go-logr/logr/funcr"
)

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
