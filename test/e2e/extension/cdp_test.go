package extension_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// cdpClient is a minimal Chrome DevTools Protocol client: the test's own hand and
// eyes on the Chromium that the extension lives in. tabwarden never uses it; the
// agent drives the browser through the extension only.
type cdpClient struct {
	ws     *websocket.Conn
	nextID atomic.Int64

	mu        sync.Mutex
	pending   map[int64]chan cdpReply
	listeners []func(method, session string, params json.RawMessage)
	closed    chan struct{}
}

type cdpReply struct {
	result json.RawMessage
	err    error
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func dialCDP(ctx context.Context, wsURL string) (*cdpClient, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	c := &cdpClient{ws: ws, pending: map[int64]chan cdpReply{}, closed: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

func (c *cdpClient) readLoop() {
	defer close(c.closed)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				ch <- cdpReply{err: fmt.Errorf("cdp connection closed: %w", err)}
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- cdpReply{err: fmt.Errorf("cdp error %d: %s", m.Error.Code, m.Error.Message)}
				} else {
					ch <- cdpReply{result: m.Result}
				}
			}
			continue
		}
		c.mu.Lock()
		ls := slices.Clone(c.listeners)
		c.mu.Unlock()
		for _, l := range ls {
			l(m.Method, m.SessionID, m.Params)
		}
	}
}

func (c *cdpClient) listen(f func(method, session string, params json.RawMessage)) {
	c.mu.Lock()
	c.listeners = append(c.listeners, f)
	c.mu.Unlock()
}

// call sends method on session ("" is the browser) and decodes the result into out.
func (c *cdpClient) call(ctx context.Context, session, method string, params, out any) error {
	if params == nil {
		params = struct{}{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	id := c.nextID.Add(1)
	ch := make(chan cdpReply, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	msg, _ := json.Marshal(cdpMessage{ID: id, Method: method, SessionID: session, Params: raw})
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
	}
	if err := c.ws.Write(ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("%s: %w", method, r.err)
		}
		if out != nil {
			return json.Unmarshal(r.result, out)
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *cdpClient) close() { _ = c.ws.CloseNow() }

type targetInfo struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	Title    string `json:"title"`
	URL      string `json:"url"`
	OpenerID string `json:"openerId"`
	// Attached: some debugger client (this test's session, an extension's
	// chrome.debugger) is attached to the target now.
	Attached bool `json:"attached"`
}

func (c *cdpClient) targets(ctx context.Context) ([]targetInfo, error) {
	var r struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := c.call(ctx, "", "Target.getTargets", nil, &r); err != nil {
		return nil, err
	}
	return r.TargetInfos, nil
}

// pages lists the browser's page targets (tabs), extension pages included.
func (c *cdpClient) pages(ctx context.Context) ([]targetInfo, error) {
	all, err := c.targets(ctx)
	if err != nil {
		return nil, err
	}
	var out []targetInfo
	for _, t := range all {
		if t.Type == "page" {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b targetInfo) int { return strings.Compare(a.TargetID, b.TargetID) })
	return out, nil
}

// pageByURL finds the one page target whose url is u.
func (c *cdpClient) pageByURL(ctx context.Context, u string) (targetInfo, error) {
	ps, err := c.pages(ctx)
	if err != nil {
		return targetInfo{}, err
	}
	var found []targetInfo
	for _, p := range ps {
		if p.URL == u {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return targetInfo{}, fmt.Errorf("%d pages with url %s", len(found), u)
	}
	return found[0], nil
}

// attach opens a flat session on a target.
func (c *cdpClient) attach(ctx context.Context, targetID string) (string, error) {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, &r)
	return r.SessionID, err
}

func (c *cdpClient) detach(ctx context.Context, session string) {
	_ = c.call(ctx, "", "Target.detachFromTarget", map[string]any{"sessionId": session}, nil)
}

// eval evaluates a read-only expression in the session's page and decodes its
// value. The test reads geometry and form state with it; it never clicks or types
// through JavaScript.
func (c *cdpClient) eval(ctx context.Context, session, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := c.call(ctx, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		msg := e.Text
		if e.Exception != nil {
			msg += " " + e.Exception.Description
		}
		return errors.New("evaluate: " + msg)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// center returns the centre of the first element matching selector, in CSS pixels
// of the viewport, after scrolling it into view.
func (c *cdpClient) center(ctx context.Context, session, selector string) (x, y float64, err error) {
	var pt struct{ X, Y float64 }
	sel, _ := json.Marshal(selector)
	err = c.eval(ctx, session, fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		if (!e) throw new Error("no element " + %s);
		e.scrollIntoView({block: "center", inline: "center"});
		const r = e.getBoundingClientRect();
		return {X: r.left + r.width / 2, Y: r.top + r.height / 2};
	})()`, sel, sel), &pt)
	return pt.X, pt.Y, err
}

// click dispatches a real left click (move, press, release) at the centre of the
// element: a user gesture, so the popup blocker lets its window.open through.
func (c *cdpClient) click(ctx context.Context, session, selector string) error {
	x, y, err := c.center(ctx, session, selector)
	if err != nil {
		return err
	}
	for _, ev := range []map[string]any{
		{"type": "mouseMoved", "x": x, "y": y},
		{"type": "mousePressed", "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1},
		{"type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0, "clickCount": 1},
	} {
		if err := c.call(ctx, session, "Input.dispatchMouseEvent", ev, nil); err != nil {
			return err
		}
	}
	return nil
}

// typeText sends one key event per character to the focused element.
func (c *cdpClient) typeText(ctx context.Context, session, text string) error {
	for _, r := range text {
		s := string(r)
		if err := c.call(ctx, session, "Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "text": s, "unmodifiedText": s, "key": s}, nil); err != nil {
			return err
		}
		if err := c.call(ctx, session, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": s}, nil); err != nil {
			return err
		}
	}
	return nil
}

// selectAll presses Ctrl+A in the focused element.
func (c *cdpClient) selectAll(ctx context.Context, session string) error {
	if err := c.call(ctx, session, "Input.dispatchKeyEvent", map[string]any{
		"type": "rawKeyDown", "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65, "modifiers": 2, "commands": []string{"selectAll"},
	}, nil); err != nil {
		return err
	}
	return c.call(ctx, session, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65, "modifiers": 2}, nil)
}
