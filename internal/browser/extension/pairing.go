package extension

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// Pairing parameters.
const (
	// CodeTTL is how long a pairing code is valid.
	CodeTTL = 5 * time.Minute
	// failWindow / maxFailures: this many wrong codes within the window start a
	// lockout of baseLockout, doubling with every further lockout up to maxLockout.
	// Within one code's five minutes that allows about 20 guesses of 10^6.
	failWindow  = time.Minute
	maxFailures = 5
	baseLockout = 30 * time.Second
	maxLockout  = 15 * time.Minute
	// maxFailuresPerCode burns the outstanding code after this many wrong guesses,
	// whatever the clock says: brute force of one code is impossible, not just slow.
	maxFailuresPerCode = 20
	tokenBytes         = 32
)

// pairState is what the host remembers of a pairing, in StateDir, mode 0600. It
// never holds the token itself.
type pairState struct {
	Version     int       `json:"version"`
	Origin      string    `json:"origin"`
	TokenSHA256 string    `json:"tokenSha256"`
	PairedAt    time.Time `json:"pairedAt"`

	hash [sha256.Size]byte
}

// pendingCode is the one outstanding pairing code (minting a new one replaces it).
type pendingCode struct {
	hash     [sha256.Size]byte // sha256 of the normalized code
	expires  time.Time
	failures int
}

// limiter throttles wrong pairing codes; all peers are loopback so it is global.
type limiter struct {
	failures    []time.Time
	lockedUntil time.Time
	lockouts    int
}

func (l *limiter) wait(now time.Time) time.Duration {
	if now.Before(l.lockedUntil) {
		return l.lockedUntil.Sub(now)
	}
	// A long quiet period forgives earlier lockouts.
	if l.lockouts > 0 && now.Sub(l.lockedUntil) > time.Hour {
		l.lockouts = 0
	}
	return 0
}

// fail records a wrong code and returns the lockout it started, if any.
func (l *limiter) fail(now time.Time) time.Duration {
	kept := l.failures[:0]
	for _, t := range l.failures {
		if now.Sub(t) < failWindow {
			kept = append(kept, t)
		}
	}
	l.failures = append(kept, now)
	if len(l.failures) < maxFailures {
		return 0
	}
	d := baseLockout
	for i := 0; i < l.lockouts && d < maxLockout; i++ {
		d *= 2
	}
	d = min(d, maxLockout)
	l.lockouts++
	l.lockedUntil = now.Add(d)
	l.failures = nil
	return d
}

func (l *limiter) reset() { *l = limiter{} }

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
	h.log.Info("pairing code issued", "expiresAt", expires.UTC().Format(time.RFC3339))
	return digits[:3] + "-" + digits[3:], expires
}

var (
	errBadCode = errors.New("pairing code invalid, expired or already used")
)

type rateLimitedError struct{ wait time.Duration }

func (e rateLimitedError) Error() string {
	return fmt.Sprintf("too many wrong pairing codes; retry in %s", e.wait.Round(time.Second))
}

// pair trades a code for a new token and stores its hash with the origin.
func (h *Host) pair(origin, code string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if d := h.limiter.wait(now); d > 0 {
		return "", rateLimitedError{d}
	}
	digits, wellFormed := normalizeCode(code)
	got := sha256.Sum256([]byte(digits))
	var want [sha256.Size]byte // no code: compare against zeros, never equal to a hash
	live := h.code != nil && now.Before(h.code.expires)
	if live {
		want = h.code.hash
	}
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	if !(wellFormed && live && match) {
		if h.code != nil {
			h.code.failures++
			if h.code.failures >= maxFailuresPerCode || !live {
				h.code = nil
			}
		}
		if d := h.limiter.fail(now); d > 0 {
			h.log.Info("pairing locked out after repeated wrong codes", "lockout", d.String())
			return "", rateLimitedError{d}
		}
		return "", errBadCode
	}

	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	st := &pairState{Version: 1, Origin: origin, PairedAt: now.UTC(), hash: sha256.Sum256([]byte(token))}
	st.TokenSHA256 = hex.EncodeToString(st.hash[:])
	if err := writeStateFile(h.statePath, st); err != nil {
		return "", err // the code stays valid: nothing changed
	}
	previous := h.state
	h.state = st
	h.code = nil // single use
	h.limiter.reset()
	if s := h.sess; s != nil {
		// The live connection authenticated with the revoked token: drop it now, so
		// that the extension's reconnect with the new token is not refused with 4409.
		h.detachLocked(s)
		go s.c.Close(CloseUnauthorized, "token revoked by a new pairing")
	}
	if previous != nil {
		h.log.Info("paired; previous token revoked", "origin", origin, "previousOrigin", previous.Origin)
	} else {
		h.log.Info("paired", "origin", origin)
	}
	return token, nil
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
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		deny(w, http.StatusUnsupportedMediaType, "json_required")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.log.V(1).Info("refused pairing: body too large", "remote", r.RemoteAddr)
			deny(w, http.StatusRequestEntityTooLarge, "body_too_large")
			return
		}
		deny(w, http.StatusBadRequest, "bad_body")
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
	var limited rateLimitedError
	switch {
	case errors.As(err, &limited):
		secs := int((limited.wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		deny(w, http.StatusTooManyRequests, "rate_limited")
	case errors.Is(err, errBadCode):
		h.log.Info("refused pairing: wrong, expired or used code", "origin", origin)
		deny(w, http.StatusForbidden, "invalid_code")
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
	sum, err := hex.DecodeString(st.TokenSHA256)
	if err != nil || len(sum) != sha256.Size || !validExtensionOrigin(st.Origin) {
		return nil, fmt.Errorf("extension host: pairing state %s is corrupt (delete it and pair again)", path)
	}
	copy(st.hash[:], sum)
	return &st, nil
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
			f.Close()
			os.Remove(tmp)
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
		d.Close()
	}
	return nil
}
