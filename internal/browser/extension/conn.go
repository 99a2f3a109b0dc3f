package extension

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
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

// handshake waits for hello, checks the token and the single-connection rule, and
// registers the session. It returns nil when the connection was refused.
func (h *Host) handshake(c *websocket.Conn, origin, remote string) *session {
	timer := time.AfterFunc(h.opts.HelloTimeout, func() {
		c.Close(websocket.StatusPolicyViolation, "hello timeout")
	})
	typ, data, err := c.Read(context.Background())
	timer.Stop()
	if err != nil {
		h.log.Info("connection closed before hello", "remote", remote, "status", int(websocket.CloseStatus(err)), "err", err.Error())
		return nil
	}
	var hello inFrame
	if typ != websocket.MessageText || json.Unmarshal(data, &hello) != nil || hello.Type != frameHello || hello.Token == "" {
		h.log.Info("refused connection: first frame is not a hello with a token", "remote", remote)
		c.Close(CloseUnauthorized, "unauthorized")
		return nil
	}
	sum := sha256.Sum256([]byte(hello.Token))
	hello.Token = ""

	h.mu.Lock()
	st := h.state
	ok := st != nil && st.Origin == origin
	var want [sha256.Size]byte
	if ok {
		want = st.hash
	}
	if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
		h.mu.Unlock()
		h.log.Info("refused connection: unknown or revoked token", "remote", remote, "origin", origin)
		c.Close(CloseUnauthorized, "unauthorized")
		return nil
	}
	if h.closed {
		h.mu.Unlock()
		c.Close(websocket.StatusGoingAway, "agent shutting down")
		return nil
	}
	if h.sess != nil {
		h.mu.Unlock()
		h.log.Info("refused connection: another extension connection is active", "remote", remote)
		c.Close(CloseAlreadyConnected, "already_connected")
		return nil
	}
	h.epoch++
	s := &session{
		c:        c,
		epoch:    h.epoch,
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
// reasons not_found and not_owned to browser.ErrNotFound and browser.ErrNotOwned.
type CommandError struct {
	Op, Reason, Message string
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
	}
	return false
}

// command sends one command on the live connection and waits for its result,
// decoded into out (when non-nil). It fails with browser.ErrNotConnected when there
// is no connection or it drops meanwhile; commands are never replayed.
func (h *Host) command(ctx context.Context, op string, args, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.opts.CommandTimeout)
		defer cancel()
	}
	h.mu.Lock()
	s := h.sess
	if s == nil {
		h.mu.Unlock()
		return fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
	}
	h.nextCmd++
	id := fmt.Sprintf("c%d", h.nextCmd)
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
		return fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
	case <-ctx.Done():
		return fmt.Errorf("extension %s: %w", op, ctx.Err())
	}
	if args == nil {
		args = struct{}{}
	}
	if err := h.write(s, commandFrame{Type: frameCommand, ID: id, Op: op, Args: args}); err != nil {
		select {
		case <-s.done:
			return fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
		default:
		}
		if ctx.Err() != nil {
			return fmt.Errorf("extension %s: %w", op, ctx.Err())
		}
		return fmt.Errorf("extension %s: %w (%v)", op, browser.ErrNotConnected, err)
	}
	var res inFrame
	select {
	case res = <-ch:
	case <-s.done:
		select {
		case res = <-ch: // the result won the race with the drop
		default:
			return fmt.Errorf("extension %s: %w", op, browser.ErrNotConnected)
		}
	case <-ctx.Done():
		return fmt.Errorf("extension %s: %w", op, ctx.Err())
	}
	if !res.OK {
		ce := &CommandError{Op: op, Reason: "failed", Message: "no error given"}
		if res.Error != nil {
			ce.Reason, ce.Message = clip(res.Error.Reason, 64), clip(res.Error.Message, 512)
		}
		return ce
	}
	if out != nil {
		if len(res.Result) == 0 {
			return fmt.Errorf("extension %s: result missing", op)
		}
		if err := json.Unmarshal(res.Result, out); err != nil {
			return fmt.Errorf("extension %s: malformed result: %w", op, err)
		}
	}
	return nil
}

var errActUnsupported = errors.New("act: not supported by the extension driver yet")
