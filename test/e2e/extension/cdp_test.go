package extension_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// cdpClient is the test's own hand and eyes on the Chromium that the extension
// lives in, over tabwarden's typed CDP client (internal/browser/cdp/wire).
// tabwarden's agent never uses it; it drives the browser through the extension
// only.
type cdpClient struct {
	conn *wire.Conn

	mu        sync.Mutex
	listeners []func(wire.Event)
}

// callTimeout bounds a call whose context has no deadline.
const callTimeout = 20 * time.Second

func dialCDP(ctx context.Context, wsURL string) (*cdpClient, error) {
	c := &cdpClient{}
	conn, err := wire.Dial(ctx, wsURL, c.dispatch)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return c, nil
}

// dispatch hands an event to every listener, in order, from the reader goroutine.
func (c *cdpClient) dispatch(e wire.Event) {
	c.mu.Lock()
	ls := slices.Clone(c.listeners)
	c.mu.Unlock()
	for _, l := range ls {
		l(e)
	}
}

// listen adds f to the listeners of every event; f must not block.
func (c *cdpClient) listen(f func(wire.Event)) {
	c.mu.Lock()
	c.listeners = append(c.listeners, f)
	c.mu.Unlock()
}

// call sends cmd on session ("" is the browser) and returns its reply; a call
// without a deadline gives up after callTimeout.
func call[R any](ctx context.Context, c *cdpClient, session string, cmd wire.Command[R]) (R, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	r, err := wire.Call(ctx, c.conn, session, cmd)
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		err = fmt.Errorf("%s: %w", cmd.Method(), err)
	}
	return r, err
}

// do sends a command whose reply carries nothing.
func (c *cdpClient) do(ctx context.Context, session string, cmd wire.Command[wire.Empty]) error {
	_, err := call(ctx, c, session, cmd)
	return err
}

func (c *cdpClient) close() { c.conn.Close() }

func (c *cdpClient) targets(ctx context.Context) ([]wire.TargetInfo, error) {
	r, err := call(ctx, c, "", wire.GetTargets{})
	return r.TargetInfos, err
}

// pages lists the browser's page targets (tabs), extension pages included.
func (c *cdpClient) pages(ctx context.Context) ([]wire.TargetInfo, error) {
	all, err := c.targets(ctx)
	if err != nil {
		return nil, err
	}
	var out []wire.TargetInfo
	for _, t := range all {
		if t.Type == "page" {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b wire.TargetInfo) int { return strings.Compare(a.TargetID, b.TargetID) })
	return out, nil
}

// pageByURL finds the one page target whose url is u.
func (c *cdpClient) pageByURL(ctx context.Context, u string) (wire.TargetInfo, error) {
	ps, err := c.pages(ctx)
	if err != nil {
		return wire.TargetInfo{}, err
	}
	var found []wire.TargetInfo
	for _, p := range ps {
		if p.URL == u {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return wire.TargetInfo{}, fmt.Errorf("%d pages with url %s", len(found), u)
	}
	return found[0], nil
}

// create opens a page target.
func (c *cdpClient) create(ctx context.Context, t wire.CreateTarget) (string, error) {
	r, err := call(ctx, c, "", t)
	return r.TargetID, err
}

// closeTarget closes a target, as the user closing the tab does.
func (c *cdpClient) closeTarget(ctx context.Context, targetID string) error {
	return c.do(ctx, "", wire.CloseTarget{TargetID: targetID})
}

// attach opens a flat session on a target.
func (c *cdpClient) attach(ctx context.Context, targetID string) (string, error) {
	r, err := call(ctx, c, "", wire.AttachToTarget{TargetID: targetID, Flatten: true})
	return r.SessionID, err
}

func (c *cdpClient) detach(ctx context.Context, session string) {
	_ = c.do(ctx, "", wire.DetachFromTarget{SessionID: session}) // the session may be gone with its target
}

// eval evaluates a read-only expression in the session's page and decodes its
// value. The test reads geometry and form state with it; it never clicks or types
// through JavaScript.
func (c *cdpClient) eval(ctx context.Context, session, expr string, out any) error {
	r, err := call(ctx, c, session, wire.Evaluate{Expression: expr, ReturnByValue: true, AwaitPromise: true})
	if err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		msg := e.Text
		if e.Exception.Description != "" {
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
	for _, ev := range []wire.DispatchMouseEvent{
		{Type: wire.MouseMoved, X: x, Y: y},
		{Type: wire.MousePressed, X: x, Y: y, Button: wire.ButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: wire.MouseReleased, X: x, Y: y, Button: wire.ButtonLeft, Buttons: 0, ClickCount: 1},
	} {
		if err := c.do(ctx, session, ev); err != nil {
			return err
		}
	}
	return nil
}

// typeText sends one key event per character to the focused element.
func (c *cdpClient) typeText(ctx context.Context, session, text string) error {
	for _, r := range text {
		s := string(r)
		if err := c.do(ctx, session, wire.DispatchKeyEvent{Type: "keyDown", Text: s, UnmodifiedText: s, Key: s}); err != nil {
			return err
		}
		if err := c.do(ctx, session, wire.DispatchKeyEvent{Type: "keyUp", Key: s}); err != nil {
			return err
		}
	}
	return nil
}

// selectAll presses Ctrl+A in the focused element.
func (c *cdpClient) selectAll(ctx context.Context, session string) error {
	const ctrl = 2
	if err := c.do(ctx, session, wire.DispatchKeyEvent{
		Type: "rawKeyDown", Key: "a", Code: "KeyA", WindowsVirtualKeyCode: 65, Modifiers: ctrl, Commands: []string{"selectAll"},
	}); err != nil {
		return err
	}
	return c.do(ctx, session, wire.DispatchKeyEvent{Type: "keyUp", Key: "a", Code: "KeyA", WindowsVirtualKeyCode: 65, Modifiers: ctrl})
}
