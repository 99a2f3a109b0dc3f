package extension

import (
	"context"
	"crypto/hmac"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// maxHandshaking bounds WebSocket connections waiting for their hello.
const maxHandshaking = 8

// session is one accepted extension connection.
type session struct {
	c        *websocket.Conn
	epoch    int64
	version  string
	remote   string
	pending  map[string]chan inFrame // command id → its result; guarded by Host.mu
	welcomed chan struct{}           // closed once welcome is written
	done     chan struct{}           // closed when the session is detached
	syncing  *syncCall               // the observe in flight; guarded by Host.mu
	doneOnce sync.Once
}

func (h *Host) handleConnect(w http.ResponseWriter, r *http.Request, origin string) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		deny(w, http.StatusMethodNotAllowed, "method_not_allowed")
		return
	}
	h.mu.Lock()
	paired := h.state != nil && h.state.Origin == origin
	h.mu.Unlock()
	if !paired {
		h.log.V(1).Info("refused connection: origin is not the paired extension", "remote", r.RemoteAddr, "origin", origin)
		deny(w, http.StatusForbidden, "origin_not_paired")
		return
	}
	// Bound connections that have not said hello yet (each lives at most HelloTimeout).
	h.mu.Lock()
	if h.handshaking >= maxHandshaking {
		h.mu.Unlock()
		deny(w, http.StatusServiceUnavailable, "busy")
		return
	}
	h.handshaking++
	h.mu.Unlock()
	handshaking := true
	doneHandshaking := func() {
		if handshaking {
			handshaking = false
			h.mu.Lock()
			h.handshaking--
			h.mu.Unlock()
		}
	}
	defer doneHandshaking()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:  []string{origin}, // checked exactly above; belt and braces
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		h.log.V(1).Info("websocket upgrade failed", "remote", r.RemoteAddr, "err", err.Error())
		return
	}
	c.SetReadLimit(h.opts.MaxFrameBytes)
	s := h.handshake(c, origin, r.RemoteAddr)
	doneHandshaking()
	if s == nil {
		return
	}
	h.readLoop(s)
}

// handshake runs the mutual proof of docs/extension-protocol.md "Handshake" within
// HelloTimeout: hello{nonce, kid} → challenge{nonce, epoch, proof} (we prove we hold
// the key) → auth{proof} (the extension proves it) → welcome{epoch}. It registers
// the session, or returns nil when the connection was refused. Neither side sends
// anything from which the key could be recovered or a proof replayed.
func (h *Host) handshake(c *websocket.Conn, origin, remote string) *session {
	timer := time.AfterFunc(h.opts.HelloTimeout, func() {
		c.Close(websocket.StatusPolicyViolation, "handshake timeout")
	})
	defer timer.Stop()
	read := func(what string) (inFrame, bool) {
		typ, data, err := c.Read(context.Background())
		if err != nil {
			h.log.Info("connection closed during the handshake", "waitingFor", what, "remote", remote,
				"status", int(websocket.CloseStatus(err)), "err", err.Error())
			return inFrame{}, false
		}
		var f inFrame
		if typ != websocket.MessageText || json.Unmarshal(data, &f) != nil {
			h.log.Info("refused connection: not a JSON text frame", "waitingFor", what, "remote", remote)
			c.Close(CloseUnauthorized, "unauthorized")
			return inFrame{}, false
		}
		return f, true
	}
	refuse := func(why string) *session {
		h.log.Info("refused connection: "+why, "remote", remote, "origin", origin)
		c.Close(CloseUnauthorized, "unauthorized")
		return nil
	}

	hello, ok := read("hello")
	if !ok {
		return nil
	}
	if hello.Type != frameHello || !validNonce(hello.Nonce) || hello.KeyID == "" {
		return refuse("first frame is not a hello with a nonce and a key id")
	}
	h.mu.Lock()
	st := h.state
	if h.closed {
		h.mu.Unlock()
		c.Close(websocket.StatusGoingAway, "agent shutting down")
		return nil
	}
	if st == nil || st.Origin != origin || subtle.ConstantTimeCompare([]byte(hello.KeyID), []byte(st.kid)) != 1 {
		h.mu.Unlock()
		return refuse("unknown or revoked pairing key")
	}
	// Each handshake that gets this far reserves the next epoch: the proof binds it.
	h.epoch++
	epoch := h.epoch
	h.mu.Unlock()

	nonceH := newNonce()
	challenge := challengeFrame{Type: frameChallenge, Nonce: nonceH, Epoch: epoch,
		Proof: b64.EncodeToString(hostProof(st.key, hello.Nonce, nonceH, epoch))}
	if err := h.write(&session{c: c}, challenge); err != nil {
		h.log.Info("connection lost during the handshake", "remote", remote, "err", err.Error())
		c.CloseNow()
		return nil
	}
	auth, ok := read("auth")
	if !ok {
		return nil
	}
	if !timer.Stop() {
		return nil // the handshake timed out meanwhile: the connection is closing
	}
	got, err := b64.DecodeString(auth.Proof)
	if auth.Type != frameAuth || err != nil || !hmac.Equal(got, extProof(st.key, nonceH, hello.Nonce)) {
		return refuse("wrong proof")
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.Close(websocket.StatusGoingAway, "agent shutting down")
		return nil
	}
	if h.state != st {
		h.mu.Unlock()
		return refuse("the pairing changed during the handshake")
	}
	if h.sess != nil {
		h.mu.Unlock()
		h.log.Info("refused connection: another extension connection is active", "remote", remote)
		c.Close(CloseAlreadyConnected, "already_connected")
		return nil
	}
	s := &session{
		c:        c,
		epoch:    epoch,
		version:  clip(hello.Version, 64),
		remote:   remote,
		pending:  map[string]chan inFrame{},
		welcomed: make(chan struct{}),
		done:     make(chan struct{}),
	}
	h.sess = s
	h.model = newModel()
	h.mu.Unlock()

	if err := h.write(s, welcomeFrame{Type: frameWelcome, Epoch: s.epoch}); err != nil {
		h.log.Info("extension connection lost during welcome", "remote", remote, "err", err.Error())
		h.detach(s)
		c.CloseNow()
		return nil
	}
	close(s.welcomed)
	h.mu.Lock()
	if h.sess == s {
		h.emitLocked(browser.Event{Type: browser.Connected, Epoch: s.epoch})
	}
	h.mu.Unlock()
	h.log.Info("extension connected", "epoch", s.epoch, "version", s.version, "origin", origin)
	go h.initialObserve(s)
	return s
}

func (h *Host) write(s *session, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.c.Write(ctx, websocket.MessageText, data)
}

func (h *Host) readLoop(s *session) {
	defer func() {
		h.detach(s)
		s.c.CloseNow()
	}()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), h.opts.IdleTimeout)
		typ, data, err := s.c.Read(ctx)
		cancel()
		if err != nil {
			select {
			case <-s.done: // we dropped it on purpose
			default:
				h.log.Info("extension disconnected", "epoch", s.epoch, "status", int(websocket.CloseStatus(err)), "err", err.Error())
			}
			return
		}
		if typ != websocket.MessageText {
			s.c.Close(websocket.StatusUnsupportedData, "text frames only")
			return
		}
		var f inFrame
		if err := json.Unmarshal(data, &f); err != nil {
			s.c.Close(websocket.StatusInvalidFramePayloadData, "frames are JSON objects")
			return
		}
		switch f.Type {
		case framePing:
			go func() {
				if err := h.write(s, map[string]string{"type": framePong}); err != nil {
					h.log.V(1).Info("pong failed", "err", err.Error())
				}
			}()
		case frameEvent:
			h.handleEvent(s, f)
		case frameResult:
			h.handleResult(s, f)
		case frameForget:
			// The user pressed Forget in the extension: this authenticated connection
			// asks the host to forget the pairing too.
			h.mu.Lock()
			if h.sess == s {
				if _, err := h.unpairLocked("forgotten by the extension"); err != nil {
					h.log.Error(err, "forgetting the pairing on the extension's request")
				}
			}
			h.mu.Unlock()
		default:
			// hello again, or something newer than this host: ignore.
		}
	}
}

// detach forgets the session: Connected() turns false, pending commands fail with
// ErrNotConnected, Disconnected is emitted. The socket is closed by the caller.
func (h *Host) detach(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.detachLocked(s)
}

func (h *Host) detachLocked(s *session) {
	if h.sess == s {
		h.sess = nil
		h.model.synced = false
		h.model.buffer = nil
		h.emitLocked(browser.Event{Type: browser.Disconnected, Epoch: s.epoch})
		h.log.Info("extension connection ended", "epoch", s.epoch)
	}
	s.doneOnce.Do(func() { close(s.done) })
}

// handleResult matches a result to a command sent on the same connection: a result
// that arrives on another connection (an old socket's reply) matches nothing.
func (h *Host) handleResult(s *session, f inFrame) {
	h.mu.Lock()
	ch, ok := s.pending[f.ID]
	delete(s.pending, f.ID)
	h.mu.Unlock()
	if !ok {
		h.log.V(1).Info("result for an unknown or abandoned command", "id", clip(f.ID, 64))
		return
	}
	ch <- f // buffered
}

// CommandError is a command the extension refused or failed. errors.Is maps the
// reasons not_found, not_owned, in_use and not_observed to browser.ErrNotFound,
// ErrNotOwned, ErrInUse and ErrNotObserved.
type CommandError struct {
	Op, Reason, Message string
	// Candidates are the matches of an ambiguous act target (at most maxCandidates);
	// Document (the page's own id, without the connection prefix) and Epoch the page
	// state their ids are refs of.
	Candidates []browser.Element
	Document   string
	Epoch      int64
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("extension %s: %s: %s", e.Op, e.Reason, e.Message)
}

func (e *CommandError) Is(target error) bool {
	switch e.Reason {
	case "not_found":
		return target == browser.ErrNotFound
	case "not_owned":
		return target == browser.ErrNotOwned
	case "in_use":
		return target == browser.ErrInUse
	case "not_observed":
		return target == browser.ErrNotObserved
	}
	return false
}

// command sends one command on the live connection and waits for its result,
// decoded into out (when non-nil). It fails with browser.ErrNotConnected when there
// is no connection or it drops meanwhile; commands are never replayed.
func (h *Host) command(ctx context.Context, op string, args, out any) error {
	_, err := h.commandOn(ctx, op, args, out)
	return err
}

// commandOn is command, and also returns the session the command went out on (nil
// when none), so the caller can apply the result to that connection's model only.
func (h *Host) commandOn(ctx context.Context, op string, args, out any) (*session, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.opts.CommandTimeout)
		defer cancel()
	}
	h.mu.Lock()
	s := h.sess
	if s == nil {
		h.mu.Unlock()
		return nil, fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
	}
	// Ids carry the process's random prefix and the connection's epoch: a reply meant
	// for another process or connection can never match.
	h.nextCmd++
	id := fmt.Sprintf("%s.%d.%d", h.idPrefix, s.epoch, h.nextCmd)
	ch := make(chan inFrame, 1)
	s.pending[id] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(s.pending, id)
		h.mu.Unlock()
	}()

	select {
	case <-s.welcomed:
	case <-s.done:
		return s, fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
	case <-ctx.Done():
		return s, fmt.Errorf("extension %s: %w", op, ctx.Err())
	}
	if args == nil {
		args = struct{}{}
	}
	if err := h.write(s, commandFrame{Type: frameCommand, ID: id, Op: op, Args: args}); err != nil {
		select {
		case <-s.done:
			return s, fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
		default:
		}
		if ctx.Err() != nil {
			return s, fmt.Errorf("extension %s: %w", op, ctx.Err())
		}
		return s, fmt.Errorf("extension %s: %w (%v)", op, browser.ErrNotConnected, err)
	}
	var res inFrame
	select {
	case res = <-ch:
	case <-s.done:
		select {
		case res = <-ch: // the result won the race with the drop
		default:
			return s, fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
		}
	case <-ctx.Done():
		return s, fmt.Errorf("extension %s: %w", op, ctx.Err())
	}
	if !res.OK {
		ce := &CommandError{Op: op, Reason: "failed", Message: "no error given"}
		if res.Error != nil {
			ce.Reason, ce.Message = clip(res.Error.Reason, 64), clip(res.Error.Message, 512)
			for i, c := range res.Error.Candidates {
				if i == maxCandidates {
					break
				}
				ce.Candidates = append(ce.Candidates, c.seam())
			}
			if len(ce.Candidates) > 0 {
				ce.Document, ce.Epoch = clip(res.Error.Document, 128), res.Error.Epoch
			}
		}
		return s, ce
	}
	if out != nil {
		if len(res.Result) == 0 {
			return s, fmt.Errorf("extension %s: result missing", op)
		}
		if err := json.Unmarshal(res.Result, out); err != nil {
			return s, fmt.Errorf("extension %s: malformed result: %w", op, err)
		}
	}
	return s, nil
}
