package extension

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
