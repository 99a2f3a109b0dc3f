package wire_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

var chrome *chromium.Process

// TestMain launches the package's Chromium: never skipped, the client is only
// proven against a real browser.
func TestMain(m *testing.M) {
	chromiumtest.Main(m, chromium.Options{}, false, func(s chromiumtest.Shared) { chrome = s.Chrome })
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// events collects a connection's events.
type events struct {
	mu  sync.Mutex
	evs []wire.Event
}

func (e *events) add(ev wire.Event) { e.mu.Lock(); e.evs = append(e.evs, ev); e.mu.Unlock() }

// wait returns the first typed event pred accepts, polling generously.
func (e *events) wait(t *testing.T, what string, pred func(any) bool) any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		for _, ev := range e.evs {
			if v := wire.ParseEvent(ev); v != nil && pred(v) {
				e.mu.Unlock()
				return v
			}
		}
		e.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s within 20s", what)
	return nil
}

func dial(t *testing.T) (*wire.Conn, *events) {
	t.Helper()
	evs := &events{}
	c, err := wire.Dial(tctx(t), chrome.WebSocketURL, evs.add)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(c.Close)
	return c, evs
}

// A page's life over typed commands: created (event and reply agree), its
// window, a session on it that evaluates and types, closed (event).
func TestPageLifecycle(t *testing.T) {
	ctx := tctx(t)
	c, evs := dial(t)
	v, err := wire.Call(ctx, c, "", wire.GetVersion{})
	if err != nil || !strings.Contains(v.Product, "Chrome") {
		t.Fatalf("Browser.getVersion = %+v, %v; want a Chrome product", v, err)
	}
	if _, err := wire.Call(ctx, c, "", wire.SetDiscoverTargets{Discover: true}); err != nil {
		t.Fatal(err)
	}
	ct, err := wire.Call(ctx, c, "", wire.CreateTarget{URL: "about:blank", Background: true, NewWindow: true})
	if err != nil || ct.TargetID == "" {
		t.Fatalf("Target.createTarget = %+v, %v", ct, err)
	}
	evs.wait(t, "targetCreated of the new page", func(v any) bool {
		e, ok := v.(*wire.TargetCreated)
		return ok && e.TargetInfo.TargetID == ct.TargetID && e.TargetInfo.Type == "page"
	})
	ts, err := wire.Call(ctx, c, "", wire.GetTargets{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ti := range ts.TargetInfos {
		found = found || ti.TargetID == ct.TargetID
	}
	if !found {
		t.Fatalf("Target.getTargets does not list %s: %+v", ct.TargetID, ts.TargetInfos)
	}
	w, err := wire.Call(ctx, c, "", wire.GetWindowForTarget{TargetID: ct.TargetID})
	if err != nil || w.WindowID == 0 {
		t.Fatalf("Browser.getWindowForTarget = %+v, %v", w, err)
	}

	a, err := wire.Call(ctx, c, "", wire.AttachToTarget{TargetID: ct.TargetID, Flatten: true})
	if err != nil || a.SessionID == "" {
		t.Fatalf("Target.attachToTarget = %+v, %v", a, err)
	}
	r, err := wire.Call(ctx, c, a.SessionID, wire.Evaluate{Expression: "document.body.innerHTML = '<input id=i autofocus>'; document.getElementById('i').focus(); 6*7", ReturnByValue: true})
	if err != nil || string(r.Result.Value) != "42" || r.ExceptionDetails != nil {
		t.Fatalf("Runtime.evaluate = %s (%+v), %v; want 42", r.Result.Value, r.ExceptionDetails, err)
	}
	if _, err := wire.Call(ctx, c, a.SessionID, wire.InsertText{Text: "héllo"}); err != nil {
		t.Fatal(err)
	}
	r, err = wire.Call(ctx, c, a.SessionID, wire.Evaluate{Expression: "document.getElementById('i').value", ReturnByValue: true})
	var typed string
	if err != nil || json.Unmarshal(r.Result.Value, &typed) != nil || typed != "héllo" {
		t.Fatalf("the input holds %s (%v); want the inserted text", r.Result.Value, err)
	}
	r, err = wire.Call(ctx, c, a.SessionID, wire.Evaluate{Expression: "throw new Error('boom')", ReturnByValue: true})
	if err != nil || r.ExceptionDetails == nil || !strings.Contains(r.ExceptionDetails.Exception.Description, "boom") {
		t.Fatalf("a throwing script = %+v, %v; want exception details naming boom", r, err)
	}
	if _, err := wire.Call(ctx, c, "", wire.DetachFromTarget{SessionID: a.SessionID}); err != nil {
		t.Fatal(err)
	}
	evs.wait(t, "detachedFromTarget", func(v any) bool {
		e, ok := v.(*wire.DetachedFromTarget)
		return ok && e.SessionID == a.SessionID
	})

	if _, err := wire.Call(ctx, c, "", wire.CloseTarget{TargetID: ct.TargetID}); err != nil {
		t.Fatal(err)
	}
	evs.wait(t, "targetDestroyed of the page", func(v any) bool {
		e, ok := v.(*wire.TargetDestroyed)
		return ok && e.TargetID == ct.TargetID
	})
}

// An error reply is a *wire.Error naming the method; a gone target is IsGone.
func TestErrors(t *testing.T) {
	ctx := tctx(t)
	c, _ := dial(t)
	_, err := wire.Call(ctx, c, "", wire.CloseTarget{TargetID: "0000000000000000000000000000DEAD"})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code == 0 || we.Message == "" {
		t.Fatalf("closing an unknown target: %v; want a *wire.Error", err)
	}
	if !strings.Contains(err.Error(), "Target.closeTarget") {
		t.Errorf("error %q does not name the method", err)
	}
	if !wire.IsGone(err) {
		t.Errorf("IsGone(%v) = false; want true for an unknown target", err)
	}
	_, err = wire.Call(ctx, c, "no-such-session", wire.PageEnable{})
	if !wire.IsGone(err) {
		t.Errorf("IsGone(%v) = false; want true for an unknown session", err)
	}
	if wire.IsGone(errors.New("target not found")) {
		t.Error("IsGone of a plain error = true; want only browser replies")
	}
}

// Browser contexts: created, listed, disposed.
func TestBrowserContexts(t *testing.T) {
	ctx := tctx(t)
	c, _ := dial(t)
	bc, err := wire.Call(ctx, c, "", wire.CreateBrowserContext{})
	if err != nil || bc.BrowserContextID == "" {
		t.Fatalf("Target.createBrowserContext = %+v, %v", bc, err)
	}
	has := func() bool {
		l, err := wire.Call(ctx, c, "", wire.GetBrowserContexts{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range l.BrowserContextIDs {
			if id == bc.BrowserContextID {
				return true
			}
		}
		return false
	}
	if !has() {
		t.Fatalf("Target.getBrowserContexts does not list %s", bc.BrowserContextID)
	}
	if _, err := wire.Call(ctx, c, "", wire.DisposeBrowserContext{BrowserContextID: bc.BrowserContextID}); err != nil {
		t.Fatal(err)
	}
	if has() {
		t.Fatalf("context %s still listed after dispose", bc.BrowserContextID)
	}
}

// A closed connection fails calls with ErrClosed and says so through Done and Err.
func TestClosed(t *testing.T) {
	ctx := tctx(t)
	c, _ := dial(t)
	if c.Err() != nil {
		t.Fatalf("Err of a live connection = %v", c.Err())
	}
	c.Close()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after Close")
	}
	if c.Err() == nil {
		t.Error("Err of a closed connection = nil; want why it dropped")
	}
	if _, err := wire.Call(ctx, c, "", wire.GetVersion{}); !errors.Is(err, wire.ErrClosed) {
		t.Errorf("call on a closed connection: %v; want ErrClosed", err)
	}
}

// ParseEvent types the events tabwarden reads and leaves others out.
func TestParseEvent(t *testing.T) {
	v := wire.ParseEvent(wire.Event{Method: "Page.javascriptDialogOpening", Params: json.RawMessage(`{"type":"confirm","message":"sure?"}`)})
	if d, ok := v.(*wire.JavaScriptDialogOpening); !ok || d.Type != "confirm" || d.Message != "sure?" {
		t.Errorf("dialog event = %#v", v)
	}
	if v := wire.ParseEvent(wire.Event{Method: "Network.requestWillBeSent", Params: json.RawMessage(`{}`)}); v != nil {
		t.Errorf("unknown event = %#v; want nil", v)
	}
	if v := wire.ParseEvent(wire.Event{Method: "Target.targetDestroyed", Params: json.RawMessage(`[1]`)}); v != nil {
		t.Errorf("undecodable event = %#v; want nil", v)
	}
}

// TestParamsOnTheWire pins the JSON of the commands whose optional fields
// matter to the browser: no button on a bare mouse move, editing commands on a
// key, a promise awaited, the ServiceWorker domain's names.
func TestParamsOnTheWire(t *testing.T) {
	for _, c := range []struct {
		cmd  any
		want string
	}{
		{wire.DispatchMouseEvent{Type: wire.MouseMoved, X: 1, Y: 2}, `{"type":"mouseMoved","x":1,"y":2,"buttons":0,"clickCount":0}`},
		{wire.DispatchMouseEvent{Type: wire.MousePressed, X: 1, Y: 2, Button: wire.ButtonLeft, Buttons: 1, ClickCount: 1}, `{"type":"mousePressed","x":1,"y":2,"button":"left","buttons":1,"clickCount":1}`},
		{wire.DispatchKeyEvent{Type: "rawKeyDown", Key: "a", Code: "KeyA", WindowsVirtualKeyCode: 65, Modifiers: 2, Commands: []string{"selectAll"}},
			`{"type":"rawKeyDown","key":"a","code":"KeyA","windowsVirtualKeyCode":65,"nativeVirtualKeyCode":0,"modifiers":2,"commands":["selectAll"]}`},
		{wire.Evaluate{Expression: "1", ReturnByValue: true, AwaitPromise: true}, `{"expression":"1","returnByValue":true,"awaitPromise":true}`},
		{wire.StartWorker{ScopeURL: "chrome-extension://x/"}, `{"scopeURL":"chrome-extension://x/"}`},
		{wire.StopWorker{VersionID: "7"}, `{"versionId":"7"}`},
	} {
		got, err := json.Marshal(c.cmd)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%T: got %s, want %s", c.cmd, got, c.want)
		}
	}
	for cmd, want := range map[interface{ Method() string }]string{
		wire.ServiceWorkerEnable{}: "ServiceWorker.enable", wire.ServiceWorkerDisable{}: "ServiceWorker.disable",
		wire.StartWorker{}: "ServiceWorker.startWorker", wire.StopWorker{}: "ServiceWorker.stopWorker",
		wire.RuntimeEnable{}: "Runtime.enable", wire.RunIfWaitingForDebugger{}: "Runtime.runIfWaitingForDebugger",
	} {
		if got := cmd.Method(); got != want {
			t.Errorf("%T.Method() = %s, want %s", cmd, got, want)
		}
	}
	e := wire.Event{Method: "ServiceWorker.workerVersionUpdated", Params: json.RawMessage(`{"versions":[{"versionId":"3","scriptURL":"chrome-extension://x/background.js","runningStatus":"running","status":"activated"}]}`)}
	u, ok := wire.ParseEvent(e).(*wire.WorkerVersionUpdated)
	if !ok || len(u.Versions) != 1 || u.Versions[0].RunningStatus != "running" || u.Versions[0].VersionID != "3" {
		t.Errorf("wire.ParseEvent(workerVersionUpdated) = %#v", wire.ParseEvent(e))
	}
}

// TestUnixPath: the endpoints of tabwarden cdp-bridge.
func TestUnixPath(t *testing.T) {
	for in, want := range map[string]string{
		"unix:/run/tabwarden/cdp/cdp.sock":   "/run/tabwarden/cdp/cdp.sock",
		"unix:///run/tabwarden/cdp/cdp.sock": "/run/tabwarden/cdp/cdp.sock",
	} {
		if got, ok, err := wire.UnixPath(in); !ok || err != nil || got != want {
			t.Errorf("UnixPath(%q) = %q, %v, %v; want %q", in, got, ok, err, want)
		}
	}
	for _, in := range []string{"unix:cdp.sock", "unix://host/cdp.sock", "unix:"} {
		if _, ok, err := wire.UnixPath(in); !ok || err == nil {
			t.Errorf("UnixPath(%q): ok %v, err %v; want an error", in, ok, err)
		}
	}
	if _, ok, _ := wire.UnixPath("http://127.0.0.1:9222"); ok {
		t.Error("an http endpoint taken for a unix one")
	}
}

// Send puts commands on the wire back to back; the browser handles a
// session's commands in order, so a page created, attached, then sent
// Page.enable and a navigation without waiting between the last two gets both
// replies, in order, and is where the navigation says.
func TestSendPipelines(t *testing.T) {
	ctx := tctx(t)
	c, _ := dial(t)
	tr, err := wire.Call(ctx, c, "", wire.CreateTarget{URL: "about:blank", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = wire.Call(ctx, c, "", wire.CloseTarget{TargetID: tr.TargetID}) }()
	a, err := wire.Call(ctx, c, "", wire.AttachToTarget{TargetID: tr.TargetID, Flatten: true})
	if err != nil {
		t.Fatal(err)
	}
	enable, err := wire.Send(c, a.SessionID, wire.PageEnable{})
	if err != nil {
		t.Fatal(err)
	}
	nav, err := wire.Send(c, a.SessionID, wire.Navigate{URL: "about:blank#sent"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nav.Wait(ctx); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	if _, err := enable.Wait(ctx); err != nil {
		t.Fatalf("Page.enable, awaited after the navigate's reply: %v", err)
	}
	// An error reply comes back through Wait.
	bad, err := wire.Send(c, "no-such-session", wire.PageEnable{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Wait(ctx); err == nil {
		t.Fatal("Page.enable on no session: no error")
	}
}
