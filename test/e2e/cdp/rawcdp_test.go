package cdp_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// rawConn is a browser-level DevTools connection of the test's own (no
// driver, no ledger): the user's hand where the driver deliberately offers
// nothing (a window opened in the foreground, as Ctrl+N does), and the test's eye.
func rawConn(t *testing.T) (context.Context, *wire.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := wire.Dial(ctx, chrome.WebSocketURL, nil)
	if err != nil {
		t.Fatalf("raw CDP: %v", err)
	}
	t.Cleanup(c.Close)
	return ctx, c
}

// raw sends one browser-level command over a connection of its own.
func raw[R any](t *testing.T, cmd wire.Command[R]) R {
	t.Helper()
	ctx, c := rawConn(t)
	defer c.Close()
	r, err := wire.Call(ctx, c, "", cmd)
	if err != nil {
		t.Fatalf("raw CDP: %v", err)
	}
	return r
}

// visibility is document.visibilityState of a page: "hidden" for a background tab.
func visibility(t *testing.T, target string) string {
	t.Helper()
	ctx, c := rawConn(t)
	defer c.Close()
	a, err := wire.Call(ctx, c, "", wire.AttachToTarget{TargetID: target, Flatten: true})
	if err != nil {
		t.Fatalf("raw CDP: %v", err)
	}
	r, err := wire.Call(ctx, c, a.SessionID, wire.Evaluate{Expression: "document.visibilityState", ReturnByValue: true})
	if err != nil {
		t.Fatalf("raw CDP: %v", err)
	}
	var v string
	if err := json.Unmarshal(r.Result.Value, &v); err != nil {
		t.Fatalf("raw CDP: document.visibilityState = %s: %v", r.Result.Value, err)
	}
	return v
}

// userNewWindow opens a window as the user does, in the foreground: it becomes
// Chromium's last active window.
func userNewWindow(t *testing.T, url string) browser.Page {
	t.Helper()
	c := raw(t, wire.CreateTarget{URL: url, NewWindow: true})
	w := raw(t, wire.GetWindowForTarget{TargetID: c.TargetID})
	return browser.Page{ID: c.TargetID, WindowID: strconv.FormatInt(w.WindowID, 10), URL: url}
}
