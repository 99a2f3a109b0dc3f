package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// rawCDP is a second, independent browser-level DevTools connection: the
// baseline the agent's driver is measured against, and the observer of what
// really happens in Chromium (target created, target destroyed).
type rawCDP struct {
	c      *wire.Conn
	events hub[cdpEvent]
}

// cdpEvent is one target event with the time it was read off the socket.
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
	r := &rawCDP{}
	c, err := wire.Dial(ctx, wsURL, r.onEvent)
	if err != nil {
		return nil, err
	}
	r.c = c
	if _, err := wire.Call(ctx, c, "", wire.SetDiscoverTargets{Discover: true}); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

func (r *rawCDP) onEvent(e wire.Event) {
	ev := cdpEvent{Method: e.Method, Session: e.Session, At: e.At}
	switch p := wire.ParseEvent(e).(type) {
	case *wire.TargetCreated:
		ev.TargetID, ev.Type, ev.URL, ev.OpenerID = p.TargetInfo.TargetID, p.TargetInfo.Type, p.TargetInfo.URL, p.TargetInfo.OpenerID
	case *wire.TargetInfoChanged:
		ev.TargetID, ev.Type, ev.URL, ev.OpenerID = p.TargetInfo.TargetID, p.TargetInfo.Type, p.TargetInfo.URL, p.TargetInfo.OpenerID
	case *wire.TargetDestroyed:
		ev.TargetID = p.TargetID
	default:
		return
	}
	r.events.publish(ev)
}

func (r *rawCDP) close() { r.c.Close() }

// createTarget opens a page and returns its id when Chrome replies.
func (r *rawCDP) createTarget(ctx context.Context, url string, newWindow bool) (string, error) {
	res, err := wire.Call(ctx, r.c, "", wire.CreateTarget{URL: url, Background: true, NewWindow: newWindow})
	return res.TargetID, err
}

// driverOpen makes, raw, the CDP calls the driver makes to open a page: the
// page list (the driver's crash-consistent intent records it), the create, and
// the window lookup (status.windowId). It returns the page's id.
func (r *rawCDP) driverOpen(ctx context.Context, url string, newWindow bool) (string, error) {
	if _, err := wire.Call(ctx, r.c, "", wire.GetTargets{}); err != nil {
		return "", err
	}
	id, err := r.createTarget(ctx, url, newWindow)
	if err != nil {
		return "", err
	}
	if _, err := wire.Call(ctx, r.c, "", wire.GetWindowForTarget{TargetID: id}); err != nil {
		return id, err
	}
	return id, nil
}

// closeTarget asks Chrome to close a page (it is gone at targetDestroyed).
func (r *rawCDP) closeTarget(ctx context.Context, id string) error {
	_, err := wire.Call(ctx, r.c, "", wire.CloseTarget{TargetID: id})
	return err
}

// expectDestroyed returns a waiter for the targetDestroyed of every id.
func (r *rawCDP) expectDestroyed(ids ...string) *sub[cdpEvent] {
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	return r.events.expect(func(e cdpEvent) bool {
		if e.Method != "Target.targetDestroyed" || !left[e.TargetID] {
			return false
		}
		delete(left, e.TargetID)
		return len(left) == 0
	})
}

// closeAndWait closes a page and waits for its targetDestroyed.
func (r *rawCDP) closeAndWait(ctx context.Context, id string) error {
	w := r.expectDestroyed(id)
	if err := r.closeTarget(ctx, id); err != nil {
		w.cancel()
		return err
	}
	_, err := w.wait(10 * time.Second)
	return err
}

// pageLoad opens url in a page of its own and returns the page's load time as
// the page measured it (Navigation Timing: navigation start → load event end),
// which no delay of the DevTools path is part of; then closes the page.
func (r *rawCDP) pageLoad(ctx context.Context, url string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id, err := r.createTarget(ctx, url, false)
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.closeAndWait(context.WithoutCancel(ctx), id) }()
	a, err := wire.Call(ctx, r.c, "", wire.AttachToTarget{TargetID: id, Flatten: true})
	if err != nil {
		return 0, err
	}
	const loaded = `new Promise((done) => {
  const check = () => {
    const e = performance.getEntriesByType("navigation")[0];
    if (e && e.loadEventEnd > 0 && location.href !== "about:blank") done(e.loadEventEnd - e.startTime);
    else setTimeout(check, 20);
  };
  check();
})`
	for {
		res, err := wire.Call(ctx, r.c, a.SessionID, wire.Evaluate{Expression: loaded, AwaitPromise: true, ReturnByValue: true})
		if err != nil {
			// The page's first document (about:blank) went while the call
			// waited: ask the one that replaced it.
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("load time of %s: %w (last: %v)", url, ctx.Err(), err)
			case <-time.After(20 * time.Millisecond):
				continue
			}
		}
		if res.ExceptionDetails != nil {
			return 0, fmt.Errorf("load time of %s: %s", url, res.ExceptionDetails.Text)
		}
		var msec float64
		if err := json.Unmarshal(res.Result.Value, &msec); err != nil {
			return 0, fmt.Errorf("load time of %s: %s: %w", url, res.Result.Value, err)
		}
		return time.Duration(msec * float64(time.Millisecond)), nil
	}
}

// clicker is an attached session on a page with an element's centre, ready to
// dispatch real mouse clicks.
type clicker struct {
	r    *rawCDP
	sess string
	x, y float64
}

func (r *rawCDP) clickerFor(ctx context.Context, page, selector string) (*clicker, error) {
	a, err := wire.Call(ctx, r.c, "", wire.AttachToTarget{TargetID: page, Flatten: true})
	if err != nil {
		return nil, err
	}
	doc, err := wire.Call(ctx, r.c, a.SessionID, wire.GetDocument{Depth: 0})
	if err != nil {
		return nil, err
	}
	q, err := wire.Call(ctx, r.c, a.SessionID, wire.QuerySelector{NodeID: doc.Root.NodeID, Selector: selector})
	if err != nil {
		return nil, err
	}
	if q.NodeID == 0 {
		return nil, fmt.Errorf("no element %s in page %s", selector, page)
	}
	box, err := wire.Call(ctx, r.c, a.SessionID, wire.GetBoxModel{NodeID: q.NodeID})
	if err != nil {
		return nil, err
	}
	qd := box.Model.Content
	if len(qd) < 8 {
		return nil, fmt.Errorf("element %s has no box", selector)
	}
	return &clicker{r: r, sess: a.SessionID, x: (qd[0] + qd[2] + qd[4] + qd[6]) / 4, y: (qd[1] + qd[3] + qd[5] + qd[7]) / 4}, nil
}

// click presses and releases the left button; it returns the moment the
// release (which triggers the click) was sent.
func (k *clicker) click(ctx context.Context) (time.Time, error) {
	ev := wire.DispatchMouseEvent{Type: wire.MousePressed, X: k.x, Y: k.y, Button: wire.ButtonLeft, Buttons: 1, ClickCount: 1}
	if _, err := wire.Call(ctx, k.r.c, k.sess, ev); err != nil {
		return time.Time{}, err
	}
	t0 := time.Now()
	ev.Type, ev.Buttons = wire.MouseReleased, 0
	_, err := wire.Call(ctx, k.r.c, k.sess, ev)
	return t0, err
}
