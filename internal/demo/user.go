package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// devtools is the demo's stand-in for the user's hand on Chromium: a minimal,
// sequential Chrome DevTools Protocol client that opens the user's own page.
// tabwarden's agent never uses it.
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

// openUserTab opens a tab at pageURL as the user does (typing an address): a
// page tabwarden did not open and must never touch.
func openUserTab(ctx context.Context, wsURL, pageURL string) error {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		return fmt.Errorf("connecting to Chromium's DevTools: %w", err)
	}
	defer func() { _ = ws.CloseNow() }() // best effort: the connection is going away either way
	ws.SetReadLimit(64 << 20)
	c := &devtools{ws: ws}
	return c.call(ctx, "", "Target.createTarget", map[string]any{"url": pageURL, "background": true}, nil)
}
