package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// errConnClosed is returned by calls on a connection that has dropped.
var errConnClosed = errors.New("cdp: connection closed")

// rpcError is an error reply from the browser.
type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	if e.Data != "" {
		return fmt.Sprintf("cdp error %d: %s (%s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message)
}

type message struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *rpcError       `json:"error,omitempty"`
}

type reply struct {
	result json.RawMessage
	err    error
}

// conn is one browser-level DevTools websocket, flattened sessions included.
// Events are handed, in order, to onEvent from the reader goroutine; onEvent must
// not block on calls over the same conn.
type conn struct {
	ws      *websocket.Conn
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan reply
	closed  chan struct{}
	err     error
	onEvent func(method, session string, params json.RawMessage)
	wmu     sync.Mutex
}

func dial(ctx context.Context, wsURL string, onEvent func(string, string, json.RawMessage)) (*conn, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPClient: &http.Client{Timeout: 10 * time.Second},
	})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(256 << 20)
	c := &conn{ws: ws, pending: map[int64]chan reply{}, closed: make(chan struct{}), onEvent: onEvent}
	go c.readLoop()
	return c, nil
}

func (c *conn) readLoop() {
	var err error
	for {
		var data []byte
		_, data, err = c.ws.Read(context.Background())
		if err != nil {
			break
		}
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
			c.onEvent(m.Method, m.SessionID, m.Params)
		}
	}
	c.shutdown(err)
}

func (c *conn) shutdown(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return
	default:
	}
	if err == nil {
		err = errConnClosed
	}
	c.err = err
	close(c.closed)
	for id, ch := range c.pending {
		ch <- reply{err: fmt.Errorf("%w: %v", errConnClosed, err)}
		delete(c.pending, id)
	}
}

// close drops the connection.
func (c *conn) close() {
	_ = c.ws.CloseNow()
	c.shutdown(errConnClosed)
}

// call sends method with params on session ("" for the browser) and decodes the
// result into out (when not nil).
func (c *conn) call(ctx context.Context, session, method string, params, out any) error {
	id := c.nextID.Add(1)
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		raw = b
	}
	b, err := json.Marshal(message{ID: id, Method: method, Params: raw, SessionID: session})
	if err != nil {
		return err
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		return fmt.Errorf("%w: %v", errConnClosed, c.err)
	default:
	}
	c.pending[id] = ch
	c.mu.Unlock()

	c.wmu.Lock()
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = c.ws.Write(wctx, websocket.MessageText, b)
	cancel()
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		// A failed or interrupted write leaves the websocket unusable.
		c.close()
		return fmt.Errorf("%s: %w: %v", method, errConnClosed, err)
	}
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

// isGone reports whether err says the target or session does not exist (any more).
func isGone(err error) bool {
	var re *rpcError
	if !errors.As(err, &re) {
		return false
	}
	m := strings.ToLower(re.Message + " " + re.Data)
	return strings.Contains(m, "no target") || strings.Contains(m, "not found") ||
		strings.Contains(m, "no session") || strings.Contains(m, "no web contents") ||
		strings.Contains(m, "no page")
}
