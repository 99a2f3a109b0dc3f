// Package bridge is `tabwarden cdp-bridge`: it runs Chromium with
// --remote-debugging-pipe (no DevTools port at all) and serves that one pipe
// on a unix socket to one client at a time, the agent of the pod, in another
// container that shares the socket's volume. The container that runs Chromium
// holds no API credentials; the agent, which holds them, never runs Chromium.
//
// The socket speaks the pipe's framing: JSON messages, each ended by a NUL
// byte. The bridge is not transparent, in three ways:
//
//   - Message ids are rewritten. Each command of the client gets a fresh id of
//     the bridge's before it reaches Chromium, and the reply gets the client's
//     id back; a reply for a client that is gone (it disconnected, another
//     connected) is dropped, so a new client never reads an answer meant for
//     the old one.
//   - While no client is connected the bridge fails closed: it answers every
//     Fetch.requestPaused itself with Fetch.failRequest (BlockedByClient), so a
//     request the agent's interception paused fails at once instead of hanging
//     or going through unexamined. The requests the gone client was sent and had
//     not answered are failed the same way when it goes. Other events are
//     dropped while no client is connected.
//   - A second client while one is connected is refused: its first command is
//     answered with an error that says so, and the connection is closed.
//
// When a client goes, the bridge also turns target discovery off
// (Target.setDiscoverTargets false) so that the next client's discovery reports
// every target again, and detaches the sessions the gone client attached.
package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// MaxMessage bounds one message, from either side (as the cdp client does).
const MaxMessage = 256 << 20

// clientWriteTimeout bounds one write to the client: a client that stops
// reading is dropped rather than stalling the browser's events.
const clientWriteTimeout = 10 * time.Second

// refuseTimeout bounds the wait for a refused client's first command.
const refuseTimeout = 5 * time.Second

// ErrBusy is what a second concurrent client is told.
var ErrBusy = errors.New("tabwarden cdp-bridge serves one client at a time, and one is connected")

// route is where the reply to one bridge id goes: a client's command (client
// and its own id) or the bridge's own (client nil: the reply is dropped).
type route struct {
	client *client
	id     json.RawMessage
	method string
}

type pausedKey struct{ session, request string }

type client struct {
	conn net.Conn
	wmu  sync.Mutex
	// paused are the Fetch.requestPaused this client was sent and has not
	// answered; sessions the sessions its attachToTarget calls created.
	paused   map[pausedKey]bool
	sessions map[string]bool
	gone     bool
}

func (c *client) write(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(clientWriteTimeout)) // a conn without deadlines is written without one
	_, err := c.conn.Write(append(msg, 0))
	return err
}

// Bridge serves one browser pipe to one client at a time.
type Bridge struct {
	log logr.Logger
	in  *bufio.Reader // the browser's replies and events (its fd 4)

	pmu sync.Mutex // one message at a time to the browser
	out io.Writer  // the browser's commands (its fd 3)

	mu     sync.Mutex
	nextID int64
	routes map[int64]route
	client *client // nil while no client is connected
	// busy holds the one client slot: from a client's accept until the
	// bridge has undone its session (gone), which is after client turns nil.
	busy bool
}

// New is a bridge over a browser pipe: in reads what the browser writes (its
// fd 4), out writes what it reads (its fd 3).
func New(in io.Reader, out io.Writer, log logr.Logger) *Bridge {
	return &Bridge{log: log, in: bufio.NewReaderSize(in, 64*1024), out: out, routes: map[int64]route{}}
}

// Run reads the browser until its pipe ends (the browser exited, or its pipe was
// closed) and returns why.
func (b *Bridge) Run() error {
	for {
		msg, err := readMessage(b.in)
		if err != nil {
			b.mu.Lock()
			c := b.client
			b.mu.Unlock()
			if c != nil {
				_ = c.conn.Close() // the browser is gone; so is the session
			}
			if errors.Is(err, io.EOF) {
				return errors.New("the browser closed its DevTools pipe")
			}
			return fmt.Errorf("reading the browser's DevTools pipe: %w", err)
		}
		b.fromBrowser(msg)
	}
}

// incoming is the part of a message the bridge looks at.
type incoming struct {
	ID        json.RawMessage `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

type requestParams struct {
	RequestID string `json:"requestId"`
}

type sessionParams struct {
	SessionID string `json:"sessionId"`
}

func (b *Bridge) fromBrowser(msg []byte) {
	var m incoming
	if err := json.Unmarshal(msg, &m); err != nil {
		b.log.V(1).Info("dropping a message of the browser that is not JSON", "err", err)
		return
	}
	if len(m.ID) > 0 {
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return
		}
		b.mu.Lock()
		r, ok := b.routes[id]
		delete(b.routes, id)
		c := b.client
		if ok && r.client != nil && r.client == c && r.method == "Target.attachToTarget" {
			var res sessionParams
			if json.Unmarshal(m.Result, &res) == nil && res.SessionID != "" {
				c.sessions[res.SessionID] = true
			}
		}
		b.mu.Unlock()
		if !ok || r.client == nil || r.client != c {
			return // the bridge's own command, or a client that is gone
		}
		out, err := withID(msg, r.id)
		if err != nil {
			return
		}
		b.send(c, out)
		return
	}
	if m.Method == "" {
		return
	}
	b.mu.Lock()
	c := b.client
	paused := m.Method == "Fetch.requestPaused"
	var req requestParams
	if paused {
		_ = json.Unmarshal(m.Params, &req)
	}
	if c != nil {
		if paused && req.RequestID != "" {
			c.paused[pausedKey{m.SessionID, req.RequestID}] = true
		}
		if m.Method == "Target.detachedFromTarget" && m.SessionID == "" {
			var sp sessionParams
			if json.Unmarshal(m.Params, &sp) == nil {
				delete(c.sessions, sp.SessionID)
			}
		}
	}
	b.mu.Unlock()
	if c != nil {
		b.send(c, msg)
		return
	}
	if paused && req.RequestID != "" {
		// Fail closed: no client examines the request, so it does not go.
		// Not on this goroutine: the browser may be waiting for us to read.
		go b.command(m.SessionID, "Fetch.failRequest", map[string]string{"requestId": req.RequestID, "errorReason": "BlockedByClient"})
	}
}

// send writes msg to client c; a failed write drops the client.
func (b *Bridge) send(c *client, msg []byte) {
	if err := c.write(msg); err != nil {
		b.log.Info("dropping the client: writing to it failed", "err", err.Error())
		_ = c.conn.Close() // its reader then ends the session (gone), off this goroutine
	}
}

// command sends a command of the bridge's own to the browser; its reply is dropped.
func (b *Bridge) command(session, method string, params any) {
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	b.routes[id] = route{method: method}
	b.mu.Unlock()
	msg, err := json.Marshal(struct {
		ID        int64           `json:"id"`
		Method    string          `json:"method"`
		SessionID string          `json:"sessionId,omitempty"`
		Params    json.RawMessage `json:"params"`
	}{id, method, session, raw})
	if err != nil {
		return
	}
	if err := b.toBrowser(msg); err != nil {
		b.log.V(1).Info("writing to the browser", "method", method, "err", err)
	}
}

func (b *Bridge) toBrowser(msg []byte) error {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	_, err := b.out.Write(append(msg, 0))
	return err
}

// Serve accepts clients on l until it is closed: one at a time, a second
// concurrent one refused.
func (b *Bridge) Serve(l net.Listener) error {
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return err
		}
		c := &client{conn: conn, paused: map[pausedKey]bool{}, sessions: map[string]bool{}}
		b.mu.Lock()
		busy := b.busy
		if !busy {
			b.client, b.busy = c, true
		}
		b.mu.Unlock()
		if busy {
			b.log.Info("refusing a second client: one is connected")
			go refuse(conn)
			continue
		}
		b.log.Info("client connected")
		go b.serveClient(c)
	}
}

// refuse answers the first command of a client that came while another is
// connected with ErrBusy, and hangs up.
func refuse(conn net.Conn) {
	defer func() { _ = conn.Close() }() // refused either way
	_ = conn.SetDeadline(time.Now().Add(refuseTimeout))
	msg, err := readMessage(bufio.NewReader(conn))
	var m incoming
	if err != nil || json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return
	}
	out, err := json.Marshal(struct {
		ID    json.RawMessage `json:"id"`
		Error any             `json:"error"`
	}{m.ID, map[string]any{"code": -32000, "message": ErrBusy.Error()}})
	if err == nil {
		_, _ = conn.Write(append(out, 0))
	}
}

// serveClient forwards c's commands to the browser, under ids of the bridge's,
// until c hangs up.
func (b *Bridge) serveClient(c *client) {
	defer b.gone(c)
	defer func() { _ = c.conn.Close() }() // the session is over either way
	r := bufio.NewReaderSize(c.conn, 64*1024)
	for {
		msg, err := readMessage(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.log.Info("client read failed", "err", err.Error())
			}
			return
		}
		var m incoming
		if err := json.Unmarshal(msg, &m); err != nil || len(m.ID) == 0 || m.Method == "" {
			b.log.Info("dropping the client: it sent a message that is not a command with an id")
			return
		}
		if _, err := strconv.ParseInt(string(m.ID), 10, 64); err != nil {
			b.log.Info("dropping the client: a command id that is not an integer", "id", string(m.ID))
			return
		}
		b.mu.Lock()
		if c.gone {
			b.mu.Unlock()
			return
		}
		b.nextID++
		id := b.nextID
		b.routes[id] = route{client: c, id: m.ID, method: m.Method}
		switch m.Method {
		case "Fetch.continueRequest", "Fetch.failRequest", "Fetch.fulfillRequest", "Fetch.continueResponse":
			var req requestParams
			if json.Unmarshal(m.Params, &req) == nil {
				delete(c.paused, pausedKey{m.SessionID, req.RequestID})
			}
		}
		b.mu.Unlock()
		out, err := withID(msg, json.RawMessage(strconv.FormatInt(id, 10)))
		if err != nil {
			return
		}
		if err := b.toBrowser(out); err != nil {
			b.log.Info("writing to the browser failed", "err", err.Error())
			return
		}
	}
}

// gone ends c's session, once: replies meant for it are dropped from now on,
// the requests it was asked about and did not answer fail, the sessions it
// attached are detached, and discovery is turned off for the next client.
func (b *Bridge) gone(c *client) {
	b.mu.Lock()
	if c.gone {
		b.mu.Unlock()
		return
	}
	c.gone = true
	if b.client == c {
		b.client = nil
	}
	paused, sessions := c.paused, c.sessions
	c.paused, c.sessions = nil, nil
	b.mu.Unlock()
	b.log.Info("client disconnected; failing paused requests until the next one", "unanswered", len(paused))
	// Before the slot is free: the next client's commands come after these.
	for k := range paused {
		b.command(k.session, "Fetch.failRequest", map[string]string{"requestId": k.request, "errorReason": "BlockedByClient"})
	}
	b.command("", "Target.setDiscoverTargets", map[string]bool{"discover": false})
	for s := range sessions {
		b.command("", "Target.detachFromTarget", map[string]string{"sessionId": s})
	}
	b.mu.Lock()
	b.busy = false
	b.mu.Unlock()
}

// withID is msg with its "id" replaced.
func withID(msg []byte, id json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, err
	}
	m["id"] = id
	return json.Marshal(m)
}

// readMessage reads one NUL-ended message, without its NUL.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice(0)
		if len(buf)+len(chunk) > MaxMessage {
			return nil, fmt.Errorf("a message exceeds %d bytes", MaxMessage)
		}
		buf = append(buf, chunk...)
		if err == nil {
			return bytes.TrimSuffix(buf, []byte{0}), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}
