// Package wire is tabwarden's one Chrome DevTools Protocol client: a
// browser-level websocket (Dial) or the pipe of a Chromium tabwarden launched
// (NewPipe), with flattened sessions, and typed commands and
// events for exactly the part of the protocol tabwarden uses. The driver
// (internal/browser/cdp), the benchmark (test/bench) and the end-to-end tests
// (test/e2e/cdp, and test/e2e/extension's hand on the browser) all speak CDP
// through it.
//
// A command is a struct naming its method and its result type:
//
//	r, err := wire.Call(ctx, c, "", wire.CreateTarget{URL: u, Background: true})
//	// r is a wire.CreateTargetResult
//
// Events are handed, in order, to the Dial callback from the reader goroutine;
// ParseEvent turns one into its typed struct. Reconnecting is the caller's
// business: a Conn that dropped stays dropped (Done, Err).
package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// MaxMessage bounds one message read from the browser (a large
// Runtime.evaluate result or target list still fits).
const MaxMessage = 256 << 20

// writeTimeout bounds one websocket write; dialTimeout one HTTP handshake.
const (
	writeTimeout = 10 * time.Second
	dialTimeout  = 10 * time.Second
)

// ErrClosed is returned by calls on a connection that has dropped.
var ErrClosed = errors.New("cdp: connection closed")

// Error is an error reply from the browser.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if e.Data != "" {
		return fmt.Sprintf("cdp error %d: %s (%s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message)
}

// IsGone reports whether err is the browser saying that the target or session
// does not exist (any more).
func IsGone(err error) bool {
	var re *Error
	if !errors.As(err, &re) {
		return false
	}
	m := strings.ToLower(re.Message + " " + re.Data)
	return strings.Contains(m, "no target") || strings.Contains(m, "not found") ||
		strings.Contains(m, "no session") || strings.Contains(m, "no web contents") ||
		strings.Contains(m, "no page")
}

// Event is one event as read off the socket.
type Event struct {
	Method  string
	Session string // "" for the browser's own events
	Params  json.RawMessage
	At      time.Time // when it was read
}

type message struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *Error          `json:"error,omitempty"`
}

type reply struct {
	result json.RawMessage
	err    error
}

// transport carries whole messages: a websocket, or the pipe of a Chromium
// started with --remote-debugging-pipe.
type transport interface {
	read() ([]byte, error)
	write(ctx context.Context, msg []byte) error
	close() error
}

type wsTransport struct{ ws *websocket.Conn }

func (t wsTransport) read() ([]byte, error) {
	_, data, err := t.ws.Read(context.Background())
	return data, err
}

func (t wsTransport) write(ctx context.Context, msg []byte) error {
	return t.ws.Write(ctx, websocket.MessageText, msg)
}

func (t wsTransport) close() error { return t.ws.CloseNow() }

// pipeTransport is Chromium's --remote-debugging-pipe: it reads commands from
// its fd 3 and writes replies and events to its fd 4, each message a JSON text
// ended by a NUL byte.
type pipeTransport struct {
	r *bufio.Reader
	w io.Writer
	c []io.Closer
}

func (t *pipeTransport) read() ([]byte, error) {
	b, err := t.r.ReadBytes(0)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMessage {
		return nil, fmt.Errorf("cdp: a message of %d bytes exceeds %d", len(b), MaxMessage)
	}
	return b[:len(b)-1], nil
}

func (t *pipeTransport) write(ctx context.Context, msg []byte) error {
	if d, ok := ctx.Deadline(); ok {
		if f, ok := t.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
			_ = f.SetWriteDeadline(d) // a pipe that takes no deadline is written without one
		}
	}
	_, err := t.w.Write(append(msg, 0))
	return err
}

func (t *pipeTransport) close() error {
	var errs []error
	for _, c := range t.c {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Conn is one browser-level DevTools connection (a websocket or a pipe),
// flattened sessions included.
type Conn struct {
	t       transport
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan reply
	closed  chan struct{}
	err     error
	onEvent func(Event)
	wmu     sync.Mutex
}

// Dial connects to a browser websocket URL (ws://host:port/devtools/browser/…).
// onEvent (may be nil) receives every event, in order, from the reader
// goroutine: it must not block on calls over the same Conn.
func Dial(ctx context.Context, wsURL string, onEvent func(Event)) (*Conn, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPClient: &http.Client{Timeout: dialTimeout},
	})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(MaxMessage)
	return start(wsTransport{ws}, onEvent), nil
}

// NewPipe speaks CDP over the pipe of a Chromium started with
// --remote-debugging-pipe: r is the read end of its fd 4, w the write end of
// its fd 3. Nothing listens on a port. Close closes both.
func NewPipe(r io.ReadCloser, w io.WriteCloser, onEvent func(Event)) *Conn {
	return start(&pipeTransport{r: bufio.NewReaderSize(r, 64*1024), w: w, c: []io.Closer{r, w}}, onEvent)
}

// DialUnix connects to the unix socket of `tabwarden cdp-bridge`, which
// serves a Chromium's --remote-debugging-pipe and speaks its framing. Close
// closes the socket.
func DialUnix(ctx context.Context, path string, onEvent func(Event)) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	return start(&pipeTransport{r: bufio.NewReaderSize(nc, 64*1024), w: nc, c: []io.Closer{nc}}, onEvent), nil
}

// UnixPath is the socket path of a unix: endpoint (unix:/path or
// unix:///path); ok is false for any other endpoint. A relative path, or a
// host, is an error.
func UnixPath(endpoint string) (path string, ok bool, err error) {
	rest, ok := strings.CutPrefix(endpoint, "unix:")
	if !ok {
		return "", false, nil
	}
	if p, isURL := strings.CutPrefix(rest, "//"); isURL {
		if !strings.HasPrefix(p, "/") {
			return "", true, fmt.Errorf("cdp endpoint %q: want unix:/path/to.sock or unix:///path/to.sock (no host)", endpoint)
		}
		rest = p
	}
	if !strings.HasPrefix(rest, "/") {
		return "", true, fmt.Errorf("cdp endpoint %q: want an absolute socket path, unix:/path/to.sock", endpoint)
	}
	return rest, true, nil
}

func start(t transport, onEvent func(Event)) *Conn {
	c := &Conn{t: t, pending: map[int64]chan reply{}, closed: make(chan struct{}), onEvent: onEvent}
	go c.readLoop()
	return c
}

func (c *Conn) readLoop() {
	var err error
	for {
		var data []byte
		data, err = c.t.read()
		if err != nil {
			break
		}
		at := time.Now()
		var m message
		if jerr := json.Unmarshal(data, &m); jerr != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- reply{err: m.Error}
				} else {
					ch <- reply{result: m.Result}
				}
			}
			continue
		}
		if m.Method != "" && c.onEvent != nil {
			c.onEvent(Event{Method: m.Method, Session: m.SessionID, Params: m.Params, At: at})
		}
	}
	c.shutdown(err)
}

func (c *Conn) shutdown(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return
	default:
	}
	if err == nil {
		err = ErrClosed
	}
	c.err = err
	close(c.closed)
	for id, ch := range c.pending {
		ch <- reply{err: fmt.Errorf("%w: %v", ErrClosed, err)}
		delete(c.pending, id)
	}
}

// Close drops the connection.
func (c *Conn) Close() {
	_ = c.t.close() // the connection is dropped either way
	c.shutdown(ErrClosed)
}

// Done is closed when the connection has dropped.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Err says why the connection dropped (nil while it lives).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Command is a CDP command: a params struct that names its method and, by
// result, the type of its reply.
type Command[R any] interface {
	Method() string
	result() R
}

// Empty is the reply of a command that returns nothing.
type Empty struct{}

// Call sends cmd on session ("" for the browser) and returns its decoded
// reply. Errors name the method; an error reply is a *Error; a dropped
// connection is ErrClosed.
func Call[R any](ctx context.Context, c *Conn, session string, cmd Command[R]) (R, error) {
	var out R
	err := c.call(ctx, session, cmd.Method(), cmd, &out)
	return out, err
}

// Pending is a command sent whose reply has not been awaited yet: a caller
// that needs no reply before its next command sends it with Send and waits
// later, so that commands on one session go out back to back (the browser
// handles a session's commands in order) and a path's round trip is paid once.
type Pending[R any] struct {
	c      *Conn
	id     int64
	method string
	ch     chan reply
}

// Send sends cmd on session and returns at once; Wait returns its reply.
func Send[R any](c *Conn, session string, cmd Command[R]) (*Pending[R], error) {
	id, ch, err := c.send(session, cmd.Method(), cmd)
	if err != nil {
		return nil, err
	}
	return &Pending[R]{c: c, id: id, method: cmd.Method(), ch: ch}, nil
}

// Wait returns the reply of a sent command, as Call would.
func (p *Pending[R]) Wait(ctx context.Context) (R, error) {
	var out R
	err := p.c.await(ctx, p.id, p.method, p.ch, &out)
	return out, err
}

var emptyObject = []byte("{}")

func (c *Conn) call(ctx context.Context, session, method string, params, out any) error {
	id, ch, err := c.send(session, method, params)
	if err != nil {
		return err
	}
	return c.await(ctx, id, method, ch, out)
}

// send writes one command and registers for its reply.
func (c *Conn) send(session, method string, params any) (int64, chan reply, error) {
	id := c.nextID.Add(1)
	raw, err := json.Marshal(params)
	if err != nil {
		return 0, nil, err
	}
	if bytes.Equal(raw, emptyObject) {
		raw = nil // no parameters: none sent
	}
	b, err := json.Marshal(message{ID: id, Method: method, Params: raw, SessionID: session})
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		return 0, nil, fmt.Errorf("%w: %v", ErrClosed, c.err)
	default:
	}
	c.pending[id] = ch
	c.mu.Unlock()

	c.wmu.Lock()
	wctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	err = c.t.write(wctx, b)
	cancel()
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		// A failed or interrupted write leaves the websocket unusable.
		c.Close()
		return 0, nil, fmt.Errorf("%s: %w: %v", method, ErrClosed, err)
	}
	return id, ch, nil
}

// await waits for the reply of command id and decodes it into out.
func (c *Conn) await(ctx context.Context, id int64, method string, ch chan reply, out any) error {
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("%s: %w", method, r.err)
		}
		if out != nil && len(r.result) > 0 {
			if err := json.Unmarshal(r.result, out); err != nil {
				return fmt.Errorf("%s: decode: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return ctx.Err()
	}
}
