package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The control channel: an HTTP server on a Unix socket in StateDir (socket 0600 in a
// 0700 directory; on Linux the peer's uid is also checked with SO_PEERCRED), so that
// `tabwarden pair`, run by the same OS user, can ask the running agent for a code.
//
//	POST /pair-code → 200 {"code":"123-456","expiresAt":"<RFC 3339>"}
//	POST /unpair    → 200 {"unpaired":true|false} (false: there was no pairing)

// maxSocketPath is the portable bound on a Unix socket path (sun_path).
const maxSocketPath = 104

func (h *Host) listenControl() (net.Listener, error) {
	path := h.sockPath
	if len(path) >= maxSocketPath {
		return nil, fmt.Errorf("extension host: control socket path %s is too long for a Unix socket; use a shorter state directory", path)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("extension host: %s exists and is not a socket; remove it", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close() // best effort: the connection is going away either way
			return nil, fmt.Errorf("extension host: another tabwarden agent is already serving %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("extension host: stale control socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("extension host: control socket: %w", err)
	}
	// The directory is 0700 already; the socket itself is tightened too.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close() // best-effort cleanup
		return nil, fmt.Errorf("extension host: control socket: %w", err)
	}
	return &peerCheckListener{Listener: ln, host: h}, nil
}

// peerCheckListener drops connections from other users before any byte is read.
type peerCheckListener struct {
	net.Listener
	host *Host
}

func (l *peerCheckListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.host.mu.Lock()
		uid := l.host.ctlUID
		l.host.mu.Unlock()
		if err := checkPeerUID(c, uid); err != nil {
			l.host.log.Info("refused control connection", "reason", err.Error())
			_ = c.Close() // best effort: the connection is going away either way
			continue
		}
		return c, nil
	}
}

type unpairResponse struct {
	Unpaired bool `json:"unpaired"`
}

type pairCodeResponse struct {
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Addr is where the host listens for the extension (host:port): the
	// port the person types into the popup.
	Addr string `json:"addr"`
}

func (h *Host) serveControl(w http.ResponseWriter, r *http.Request) {
	// Browsers cannot reach a Unix socket; refuse anything that looks like one anyway.
	if r.Header.Get("Origin") != "" {
		deny(w, http.StatusForbidden, "origin_not_allowed")
		return
	}
	switch r.URL.Path {
	case "/pair-code":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			deny(w, http.StatusMethodNotAllowed, "method_not_allowed")
			return
		}
		code, exp := h.NewPairingCode()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(pairCodeResponse{Code: code, ExpiresAt: exp.UTC(), Addr: h.Addr()})
	case "/unpair":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			deny(w, http.StatusMethodNotAllowed, "method_not_allowed")
			return
		}
		was, err := h.Unpair()
		if err != nil {
			h.log.Error(err, "unpair failed")
			deny(w, http.StatusInternalServerError, "internal")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(unpairResponse{Unpaired: was})
	default:
		deny(w, http.StatusNotFound, "not_found")
	}
}

// SocketPath is where the agent with this state directory listens for `tabwarden pair`.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, socketFileName) }

// Pairing is a pairing code and where to use it.
type Pairing struct {
	Code    string
	Expires time.Time
	// Addr is the host's listening address (host:port) as it runs, which may
	// differ from DefaultAddr.
	Addr string
}

// RequestPairing asks the agent running with stateDir for a pairing code, over
// its control socket. Only the OS user running the agent can do this.
func RequestPairing(ctx context.Context, stateDir string) (Pairing, error) {
	var out pairCodeResponse
	if err := controlCall(ctx, stateDir, "/pair-code", "asking the agent for a pairing code", &out); err != nil {
		return Pairing{}, err
	}
	if out.Code == "" || out.Addr == "" {
		return Pairing{}, fmt.Errorf("agent sent a malformed pairing code answer")
	}
	return Pairing{Code: out.Code, Expires: out.ExpiresAt, Addr: out.Addr}, nil
}

// RequestUnpair asks the agent running with stateDir to forget its pairing (the
// state file goes, the live extension connection is closed with 4401). It reports
// whether there was a pairing to forget.
func RequestUnpair(ctx context.Context, stateDir string) (bool, error) {
	var out unpairResponse
	if err := controlCall(ctx, stateDir, "/unpair", "asking the agent to forget the pairing", &out); err != nil {
		return false, err
	}
	return out.Unpaired, nil
}

// controlCall POSTs to path on the control socket of the agent with stateDir and
// decodes its JSON answer into out.
func controlCall(ctx context.Context, stateDir, path, what string, out any) error {
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	sock := SocketPath(dir)
	if _, err := os.Lstat(sock); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no tabwarden agent is running with state directory %s (no socket %s)", dir, sock)
	}
	client := &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
			DisableKeepAlives: true,
		},
		Timeout: 10 * time.Second,
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://tabwarden-agent"+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: the agent refused: %s %s", what, resp.Status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: the agent sent a malformed answer", what)
	}
	return nil
}
