package cdp_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// raw sends one command over its own browser-level DevTools connection: the
// user's hand where the driver deliberately offers nothing (a window opened in
// the foreground, as Ctrl+N does).
func raw(t *testing.T, method string, params, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, chrome.WebSocketURL, nil)
	if err != nil {
		t.Fatalf("raw CDP: %v", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	rawOn(ctx, t, ws, 1, "", method, params, out)
}

// visibility is document.visibilityState of a page: "hidden" for a background tab.
func visibility(t *testing.T, target string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, chrome.WebSocketURL, nil)
	if err != nil {
		t.Fatalf("raw CDP: %v", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	var a struct {
		SessionID string `json:"sessionId"`
	}
	rawOn(ctx, t, ws, 1, "", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &a)
	var r struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	rawOn(ctx, t, ws, 2, a.SessionID, "Runtime.evaluate", map[string]any{"expression": "document.visibilityState", "returnByValue": true}, &r)
	return r.Result.Value
}

func rawOn(ctx context.Context, t *testing.T, ws *websocket.Conn, id int, session, method string, params, out any) {
	t.Helper()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	req, _ := json.Marshal(msg)
	if err := ws.Write(ctx, websocket.MessageText, req); err != nil {
		t.Fatalf("raw CDP %s: %v", method, err)
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("raw CDP %s: %v", method, err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &r) != nil || r.ID != id {
			continue
		}
		if len(r.Error) > 0 {
			t.Fatalf("raw CDP %s: %s", method, r.Error)
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				t.Fatalf("raw CDP %s: %v", method, err)
			}
		}
		return
	}
}

// userNewWindow opens a window as the user does, in the foreground: it becomes
// Chromium's last active window.
func userNewWindow(t *testing.T, url string) browser.Page {
	t.Helper()
	var c struct {
		TargetID string `json:"targetId"`
	}
	raw(t, "Target.createTarget", map[string]any{"url": url, "newWindow": true}, &c)
	var w struct {
		WindowID int64 `json:"windowId"`
	}
	raw(t, "Browser.getWindowForTarget", map[string]any{"targetId": c.TargetID}, &w)
	return browser.Page{ID: c.TargetID, WindowID: strconv.FormatInt(w.WindowID, 10), URL: url}
}
