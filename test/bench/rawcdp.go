package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// rawCDP is a second, independent browser-level DevTools connection: the
// baseline the agent's driver is measured against, and the observer of what
// really happens in Chromium (target created, target destroyed).
type rawCDP struct {
	ws      *websocket.Conn
	next    atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan cdpReply
	wmu     sync.Mutex
	events  hub[cdpEvent]
	closed  chan struct{}
}

type cdpReply struct {
	result json.RawMessage
	err    error
}

// cdpEvent is one event with the time it was read off the socket.
type cdpEvent struct {
	Method   string
	Session  string
	TargetID string
	OpenerID string
	Type     string
	URL      string
	At       time.Time
}

func dialCDP(ctx context.Context, wsURL string) (*rawCDP, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(256 << 20)
	c := &rawCDP{ws: ws, pending: map[int64]chan cdpReply{}, closed: make(chan struct{})}
	go c.read()
	if _, err := c.call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *rawCDP) read() {
	defer close(c.closed)
	for {
		_, data, err := c.ws.Read(context.Background())
		at := time.Now()
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				ch <- cdpReply{err: err}
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var m struct {
			ID     int64           `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Sess   string          `json:"sessionId"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				r := cdpReply{result: m.Result}
				if m.Error != nil {
					r.err = fmt.Errorf("cdp %d: %s", m.Error.Code, m.Error.Message)
				}
				ch <- r
			}
			continue
		}
		ev := cdpEvent{Method: m.Method, Session: m.Sess, At: at}
		switch m.Method {
		case "Target.targetCreated", "Target.targetInfoChanged":
			var p struct {
				TargetInfo struct {
					TargetID string `json:"targetId"`
					Type     string `json:"type"`
					URL      string `json:"url"`
					OpenerID string `json:"openerId"`
				} `json:"targetInfo"`
			}
			_ = json.Unmarshal(m.Params, &p)
			ev.TargetID, ev.Type, ev.URL, ev.OpenerID = p.TargetInfo.TargetID, p.TargetInfo.Type, p.TargetInfo.URL, p.TargetInfo.OpenerID
		case "Target.targetDestroyed":
			var p struct {
				TargetID string `json:"targetId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			ev.TargetID = p.TargetID
		default:
			continue
		}
		c.events.publish(ev)
	}
}

func (c *rawCDP) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	id := c.next.Add(1)
	ch := make(chan cdpReply, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	c.wmu.Lock()
	err := c.ws.Write(ctx, websocket.MessageText, data)
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, ctx.Err()
	case <-c.closed:
		return nil, errors.New("cdp connection closed")
	}
}

func (c *rawCDP) close() { _ = c.ws.Close(websocket.StatusNormalClosure, "") }

// createTarget opens a page and returns its id when Chrome replies.
func (c *rawCDP) createTarget(ctx context.Context, url string, newWindow bool) (string, error) {
	p := map[string]any{"url": url, "background": true}
	if newWindow {
		p["newWindow"] = true
	}
	res, err := c.call(ctx, "", "Target.createTarget", p)
	if err != nil {
		return "", err
	}
	var r struct {
		TargetID string `json:"targetId"`
	}
	err = json.Unmarshal(res, &r)
	return r.TargetID, err
}

// expectDestroyed returns a waiter for the targetDestroyed of every id.
func (c *rawCDP) expectDestroyed(ids ...string) *sub[cdpEvent] {
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	return c.events.expect(func(e cdpEvent) bool {
		if e.Method != "Target.targetDestroyed" || !left[e.TargetID] {
			return false
		}
		delete(left, e.TargetID)
		return len(left) == 0
	})
}

// closeAndWait closes a page and waits for its targetDestroyed.
func (c *rawCDP) closeAndWait(ctx context.Context, id string) error {
	w := c.expectDestroyed(id)
	if _, err := c.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": id}); err != nil {
		w.cancel()
		return err
	}
	_, err := w.wait(10 * time.Second)
	return err
}

// clicker is an attached session on a page with an element's centre, ready to
// dispatch real mouse clicks.
type clicker struct {
	c    *rawCDP
	sess string
	x, y float64
}

func (c *rawCDP) clickerFor(ctx context.Context, page, selector string) (*clicker, error) {
	res, err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": page, "flatten": true})
	if err != nil {
		return nil, err
	}
	var a struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &a)
	res, err = c.call(ctx, a.SessionID, "DOM.getDocument", map[string]any{"depth": 0})
	if err != nil {
		return nil, err
	}
	var doc struct {
		Root struct {
			NodeID int64 `json:"nodeId"`
		} `json:"root"`
	}
	_ = json.Unmarshal(res, &doc)
	res, err = c.call(ctx, a.SessionID, "DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": selector})
	if err != nil {
		return nil, err
	}
	var q struct {
		NodeID int64 `json:"nodeId"`
	}
	_ = json.Unmarshal(res, &q)
	if q.NodeID == 0 {
		return nil, fmt.Errorf("no element %s in page %s", selector, page)
	}
	res, err = c.call(ctx, a.SessionID, "DOM.getBoxModel", map[string]any{"nodeId": q.NodeID})
	if err != nil {
		return nil, err
	}
	var box struct {
		Model struct {
			Content []float64 `json:"content"`
		} `json:"model"`
	}
	_ = json.Unmarshal(res, &box)
	qd := box.Model.Content
	if len(qd) < 8 {
		return nil, fmt.Errorf("element %s has no box", selector)
	}
	return &clicker{c: c, sess: a.SessionID, x: (qd[0] + qd[2] + qd[4] + qd[6]) / 4, y: (qd[1] + qd[3] + qd[5] + qd[7]) / 4}, nil
}

// click presses and releases the left button; it returns the moment the
// release (which triggers the click) was sent.
func (k *clicker) click(ctx context.Context) (time.Time, error) {
	if _, err := k.c.call(ctx, k.sess, "Input.dispatchMouseEvent", map[string]any{"type": "mousePressed", "x": k.x, "y": k.y, "button": "left", "buttons": 1, "clickCount": 1}); err != nil {
		return time.Time{}, err
	}
	t0 := time.Now()
	_, err := k.c.call(ctx, k.sess, "Input.dispatchMouseEvent", map[string]any{"type": "mouseReleased", "x": k.x, "y": k.y, "button": "left", "buttons": 0, "clickCount": 1})
	return t0, err
}
