package extension

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// Pairing parameters.
const (
	// CodeTTL is how long a pairing code is valid.
	CodeTTL = 5 * time.Minute
	// maxFailuresPerCode burns the outstanding code after this many wrong guesses:
	// brute force of one code (10^6) is impossible, not just slow. Wrong guesses count
	// against the current code only; there is no time lockout, so nobody can lock the
	// real user out of a code that is not burned.
	maxFailuresPerCode = 20
	tokenBytes         = 32
	stateVersion       = 2
)

// pairState is what the host remembers of a pairing, in StateDir, mode 0600: the
// paired origin and the derived key k (not the token). k authenticates the handshake,
// so the file is as secret as the pairing itself.
type pairState struct {
	Version  int       `json:"version"`
	Origin   string    `json:"origin"`
	Key      string    `json:"key"` // base64url of k
	PairedAt time.Time `json:"pairedAt"`

	key [keyBytes]byte
	kid string
}

// pendingCode is the one outstanding pairing code (minting a new one replaces it).
type pendingCode struct {
	hash     [sha256.Size]byte // sha256 of the normalized code
	expires  time.Time
	failures int
}

// normalizeCode keeps the digits of "123-456" / "123 456"; anything else is invalid.
func normalizeCode(code string) (string, bool) {
	var b strings.Builder
	for _, r := range code {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == ' ':
		default:
			return "", false
		}
	}
	if b.Len() != 6 {
		return "", false
	}
	return b.String(), true
}

// NewPairingCode mints a single-use code, valid CodeTTL, replacing any earlier
// one. The caller shows it to the user; the host keeps only its hash.
func (h *Host) NewPairingCode() (code string, expires time.Time) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		panic("extension host: crypto/rand failed: " + err.Error())
	}
	digits := fmt.Sprintf("%06d", n.Int64())
	h.mu.Lock()
	defer h.mu.Unlock()
	expires = h.now().Add(CodeTTL)
	h.code = &pendingCode{hash: sha256.Sum256([]byte(digits)), expires: expires}
	h.burned = false
	h.log.Info("pairing code issued", "expiresAt", expires.UTC().Format(time.RFC3339))
	return digits[:3] + "-" + digits[3:], expires
}

var (
	errBadCode = errors.New("pairing code invalid, expired or already used; run `tabwarden pair` for a fresh one")
	errBurned  = fmt.Errorf("this pairing code was burned after %d wrong guesses; run `tabwarden pair` again for a new code", maxFailuresPerCode)
)

// pair trades a code for a new token and stores the key derived from it with the
// origin. A wrong guess counts against the current code only.
func (h *Host) pair(origin, code string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	digits, wellFormed := normalizeCode(code)
	got := sha256.Sum256([]byte(digits))
	var want [sha256.Size]byte // no code: compare against zeros, never equal to a hash
	live := h.code != nil && now.Before(h.code.expires)
	if live {
		want = h.code.hash
	}
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	if !(wellFormed && live && match) {
		if h.code != nil && !live {
			h.code = nil // expired
		}
		if h.code == nil {
			if h.burned {
				return "", errBurned
			}
			return "", errBadCode
		}
		h.code.failures++
		if h.code.failures >= maxFailuresPerCode {
			h.code = nil
			h.burned = true
			h.log.Info("pairing code burned after repeated wrong guesses", "guesses", maxFailuresPerCode)
			return "", errBurned
		}
		return "", errBadCode
	}

	raw := randomBytes(tokenBytes)
	token := base64.RawURLEncoding.EncodeToString(raw)
	st := newPairState(origin, deriveKey(token), now)
	if err := writeStateFile(h.statePath, st); err != nil {
		return "", err // the code stays valid: nothing changed
	}
	previous := h.state
	h.state = st
	h.code = nil // single use
	h.burned = false
	if s := h.sess; s != nil {
		// The live connection authenticated with the revoked key: drop it now, so that
		// the extension's reconnect with the new key is not refused with 4409.
		h.detachLocked(s)
		go func() { _ = s.c.Close(CloseUnauthorized, "pairing replaced by a new one") }() // best effort: the connection is going away either way
	}
	if previous != nil {
		h.log.Info("paired; previous pairing revoked", "origin", origin, "previousOrigin", previous.Origin)
	} else {
		h.log.Info("paired", "origin", origin)
	}
	return token, nil
}

func newPairState(origin string, k [keyBytes]byte, now time.Time) *pairState {
	return &pairState{Version: stateVersion, Origin: origin, Key: b64.EncodeToString(k[:]), PairedAt: now.UTC(), key: k, kid: keyID(k)}
}

// Unpair forgets the pairing: the state file is removed, the live connection closed
// with 4401, and the extension must pair again. It reports whether there was one.
func (h *Host) Unpair() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unpairLocked("unpaired")
}

func (h *Host) unpairLocked(why string) (bool, error) {
	was := h.state != nil
	if err := os.Remove(h.statePath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return was, fmt.Errorf("extension host: forgetting the pairing: %w", err)
	}
	h.state = nil
	if s := h.sess; s != nil {
		h.detachLocked(s)
		go func() { _ = s.c.Close(CloseUnauthorized, why) }() // best effort: the connection is going away either way
	}
	if was {
		h.log.Info("pairing forgotten", "why", why)
	}
	return was, nil
}

func (h *Host) handlePair(w http.ResponseWriter, r *http.Request, origin string) {
	// The origin is a chrome-extension:// one (checked by ServeHTTP): it may read the
	// answer. Web pages never get here and never get CORS headers.
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Set("Vary", "Origin")
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", "POST")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		deny(w, http.StatusMethodNotAllowed, "method_not_allowed")
		return
	}
	// The whole body within ReadTimeout: a request that sends headers and then nothing
	// does not hold its connection (and a slot of MaxConns) open.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.opts.ReadTimeout))
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		deny(w, http.StatusUnsupportedMediaType, "json_required")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooBig):
			h.log.V(1).Info("refused pairing: body too large", "remote", r.RemoteAddr)
			deny(w, http.StatusRequestEntityTooLarge, "body_too_large")
		case errors.As(err, &netErr) && netErr.Timeout():
			h.log.V(1).Info("refused pairing: body not sent in time", "remote", r.RemoteAddr)
			w.Header().Set("Connection", "close")
			deny(w, http.StatusRequestTimeout, "body_timeout")
		default:
			deny(w, http.StatusBadRequest, "bad_body")
		}
		return
	}
	var req struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		deny(w, http.StatusBadRequest, "bad_json")
		return
	}
	token, err := h.pair(origin, req.Code)
	switch {
	case errors.Is(err, errBurned):
		h.log.Info("refused pairing: the code is burned", "origin", origin)
		denyWhy(w, http.StatusForbidden, "code_burned", errBurned.Error())
	case errors.Is(err, errBadCode):
		h.log.Info("refused pairing: wrong, expired or used code", "origin", origin)
		denyWhy(w, http.StatusForbidden, "invalid_code", errBadCode.Error())
	case err != nil:
		h.log.Error(err, "pairing failed")
		deny(w, http.StatusInternalServerError, "internal")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(map[string]string{"token": token})
	}
}

// --- the state file ---------------------------------------------------------------

func loadState(path string, log logr.Logger) (*pairState, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("extension host: pairing state: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("extension host: pairing state %s must be private (0600): %w", path, err)
		}
		log.Info("tightened pairing state file to 0600", "path", path)
	}
	var st pairState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("extension host: pairing state %s is corrupt (delete it and pair again): %w", path, err)
	}
	if st.Version == 1 && validExtensionOrigin(st.Origin) {
		// Version 1 kept only sha256(token), from which the handshake's key cannot be
		// derived: that pairing cannot authenticate any more. Say so; pairing again
		// overwrites the file.
		log.Info("the pairing was made by an older tabwarden and cannot authenticate the current handshake; run `tabwarden pair` again", "path", path)
		return nil, nil
	}
	raw, err := b64.DecodeString(st.Key)
	if st.Version != stateVersion || err != nil || len(raw) != keyBytes || !validExtensionOrigin(st.Origin) {
		return nil, fmt.Errorf("extension host: pairing state %s is corrupt (delete it and pair again)", path)
	}
	var k [keyBytes]byte
	copy(k[:], raw)
	return newPairState(st.Origin, k, st.PairedAt), nil
}

// writeStateFile replaces the state atomically: a 0600 temp file in the same
// directory, fsync, rename, fsync the directory.
func writeStateFile(path string, st *pairState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".pairing-*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("pairing state: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()      // best-effort cleanup
			_ = os.Remove(tmp) // best-effort cleanup
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("pairing state: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("pairing state: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("pairing state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pairing state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pairing state: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close() // best-effort cleanup
	}
	return nil
}
