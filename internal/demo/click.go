package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// devtools is the demo's own hand on Chromium: a minimal, sequential Chrome
// DevTools Protocol client that clicks one element as an agent driving the
// browser does. tabwarden's agent never uses it.
type devtools struct {
	ws *websocket.Conn
	id int64
}

func (c *devtools) call(ctx context.Context, session, method string, params, out any) error {
	c.id++
	msg := map[string]any{"id": c.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return err
	}
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		var r struct {
			ID     int64           `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &r) != nil || r.ID != c.id {
			continue // an event, or an older reply
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	}
}

// clickInPage clicks the element matching selector in the page whose url is
// pageURL with a real mouse press and release at its centre (a user gesture, so
// the page's window.open is allowed), once the page shows it.
func clickInPage(ctx context.Context, wsURL, pageURL, selector string) error {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		return fmt.Errorf("connecting to Chromium's DevTools: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	c := &devtools{ws: ws}
	var targets struct {
		TargetInfos []struct {
			TargetID, Type, URL string
		} `json:"targetInfos"`
	}
	if err := c.call(ctx, "", "Target.getTargets", nil, &targets); err != nil {
		return err
	}
	target := ""
	for _, t := range targets.TargetInfos {
		if t.Type == "page" && t.URL == pageURL {
			target = t.TargetID
		}
	}
	if target == "" {
		return fmt.Errorf("no page shows %s in Chromium", pageURL)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &att); err != nil {
		return err
	}
	defer func() {
		_ = c.call(context.Background(), "", "Target.detachFromTarget", map[string]any{"sessionId": att.SessionID}, nil)
	}()
	s := att.SessionID
	var node int64
	for node == 0 {
		var doc struct {
			Root struct {
				NodeID int64 `json:"nodeId"`
			} `json:"root"`
		}
		if err := c.call(ctx, s, "DOM.getDocument", nil, &doc); err != nil {
			return err
		}
		var q struct {
			NodeID int64 `json:"nodeId"`
		}
		if err := c.call(ctx, s, "DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": selector}, &q); err != nil {
			return err
		}
		if node = q.NodeID; node == 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("the page never showed %s: %w", selector, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	_ = c.call(ctx, s, "DOM.scrollIntoViewIfNeeded", map[string]any{"nodeId": node}, nil)
	var box struct {
		Model struct {
			Content []float64 `json:"content"`
		} `json:"model"`
	}
	if err := c.call(ctx, s, "DOM.getBoxModel", map[string]any{"nodeId": node}, &box); err != nil {
		return err
	}
	q := box.Model.Content
	if len(q) < 8 {
		return errors.New("the element has no box")
	}
	x, y := (q[0]+q[2]+q[4]+q[6])/4, (q[1]+q[3]+q[5]+q[7])/4
	for _, ev := range []map[string]any{
		{"type": "mousePressed", "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1},
		{"type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0, "clickCount": 1},
	} {
		if err := c.call(ctx, s, "Input.dispatchMouseEvent", ev, nil); err != nil {
			return err
		}
	}
	return nil
}

// openUserTab opens a tab at pageURL as the user does (typing an address): a
// page tabwarden did not open and must never touch.
func openUserTab(ctx context.Context, wsURL, pageURL string) error {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		return fmt.Errorf("connecting to Chromium's DevTools: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	c := &devtools{ws: ws}
	return c.call(ctx, "", "Target.createTarget", map[string]any{"url": pageURL, "background": true}, nil)
}
