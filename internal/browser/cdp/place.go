package cdp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// Window choice for a background tab (OpenRequest.WindowID without NewWindow).
//
// Target.createTarget cannot name a tab's window: Chrome puts a background tab in
// the last active normal window of the browser context (Chromium 156 has no
// windowId parameter; an unknown one is ignored). So a tab asked for in window W
// is opened from a page in W that tabwarden owns: the page of one of the
// request's anchors (the session's other windows), recorded in the ledger as
// opened or spawned, never bound, never a user's page. The driver middle-clicks
// an injected about:blank link in it, as the close placeholder does: Chrome
// opens a background tab in the anchor's own window, without an opener. The tab
// is recognized by the nonce in the link's url (tabMarkerPrefix, the
// placeholder waiters), its window verified, recorded under
// the key, and navigated to the url. The link is removed from the anchor again.
//
// When no anchor lives in W, or the click does not yield a tab in W, Open falls
// back to createTarget and says why in Page.Misplaced when the page lands
// outside W.

// anchorLinkJS appends the about:blank link to middle-click (for a tab in the
// pinned window, or the last-tab placeholder), marked so that it is removed
// again; removeAnchorLinkJS removes it.
const anchorLinkJS = `((href) => {
  const a = document.createElement('a');
  a.href = href;
  a.rel = 'noopener noreferrer';
  a.setAttribute('data-tabwarden-open', '');
  a.textContent = ' ';
  a.setAttribute('style', 'all:initial !important; position:fixed !important; left:0 !important; top:0 !important; width:24px !important; height:24px !important; display:block !important; z-index:2147483647 !important; pointer-events:auto !important; opacity:0 !important; cursor:default !important');
  (document.body || document.documentElement).appendChild(a);
  return true;
})`

// tabMarkerPrefix starts the url of the link openFrom middle-clicks: an
// about:blank with a random nonce, which only the tab that click opens
// carries. An opener-less about:blank page that appears meanwhile (the user's
// own, another client's) is never taken for it.
const tabMarkerPrefix = "about:blank#tw-tab-"

const removeAnchorLinkJS = `(() => { document.querySelectorAll('a[data-tabwarden-open]').forEach(a => a.remove()); return true; })()`

// anchorsIn returns the live pages recorded (opened or spawned) under one of
// keys that sit in window w and in the browser context named ctxName, newest first.
func (b *Browser) anchorsIn(keys []string, w, ctxName string) []string {
	if len(keys) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*target
	for _, r := range b.ledger.Records() {
		if !r.Owned() || !slices.Contains(keys, r.Key) {
			continue
		}
		t, ok := b.targets[r.Page]
		if !ok || t.windowID != w || t.popup || b.ctxNames[t.info.BrowserContextID] != ctxName {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq > out[j].seq })
	ids := make([]string, len(out))
	for i, t := range out {
		ids[i] = t.info.TargetID
	}
	return ids
}

// openInWindow opens req.URL as a background tab in req.WindowID from a page of
// one of req.Anchors in that window, and records it under req.Key. It returns
// "" and why when it could not (the caller falls back to createTarget).
func (b *Browser) openInWindow(ctx context.Context, c *wire.Conn, req browser.OpenRequest) (string, string, error) {
	anchors := b.anchorsIn(req.Anchors, req.WindowID, req.Context)
	if len(anchors) == 0 {
		return "", fmt.Sprintf("the session owns no page in window %s to open the tab from, and CDP cannot choose a new tab's window "+
			"(Chrome puts it in the last active window)", req.WindowID), nil
	}
	why := ""
	for _, a := range anchors {
		id, err := b.clickOpen(ctx, c, a, req.WindowID)
		if err != nil {
			if errors.Is(err, browser.ErrNotConnected) {
				return "", "", err
			}
			why = fmt.Sprintf("opening the tab from the session's page %s in window %s failed (%v), and CDP cannot choose a new tab's window", a, req.WindowID, err)
			b.log.V(1).Info("open in window from an owned page failed", "anchor", a, "window", req.WindowID, "err", err)
			continue
		}
		if err := b.ledger.Opened(req.Key, id); err != nil {
			_ = b.closeTarget(ctx, c, id)
			return "", "", err
		}
		if err := b.navigate(ctx, c, id, req.URL); err != nil {
			_ = b.closeTarget(ctx, c, id)
			_ = b.ledger.Closed(req.Key, id)
			return "", "", fmt.Errorf("navigating the tab opened in window %s: %w", req.WindowID, err)
		}
		return id, "", nil
	}
	return "", why, nil
}

// clickOpen opens an about:blank background tab from page anchor and checks it
// is in window w; a tab that landed elsewhere is closed again.
func (b *Browser) clickOpen(ctx context.Context, c *wire.Conn, anchor, w string) (string, error) {
	b.phLock.Lock()
	defer b.phLock.Unlock()
	pid, err := b.openFrom(ctx, c, anchor)
	if err != nil {
		return "", err
	}
	pw, err := windowFor(ctx, c, pid)
	if err != nil || pw != w {
		_ = b.closeTarget(ctx, c, pid)
		return "", fmt.Errorf("the tab landed in window %q, not %s (%v)", pw, w, err)
	}
	b.setWindow(c, pid, pw)
	return pid, nil
}

// openFrom opens an about:blank background tab from page anchor: a real middle
// click (Input.dispatchMouseEvent) on an about:blank link appended for the
// moment and removed again. Chrome opens it as a background tab in the anchor's
// window, without an opener. The click is a press and a release without a
// mouseMoved: the anchor is usually a background tab, whose hidden page never
// acknowledges a mouseMoved (it waits for an animation frame). A script click
// will not do: Chrome opens a tab from an untrusted event in the foreground.
func (b *Browser) openFrom(ctx context.Context, c *wire.Conn, anchor string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	sess, detach, err := attach(ctx, c, anchor)
	if err != nil {
		return "", err
	}
	defer detach()
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	href := tabMarkerPrefix + hex.EncodeToString(nonce)
	hrefJSON, _ := json.Marshal(href)
	r, err := call(ctx, c, sess, wire.Evaluate{Expression: anchorLinkJS + "(" + string(hrefJSON) + ")", ReturnByValue: true})
	if err != nil {
		return "", err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, _ = call(rctx, c, sess, wire.Evaluate{Expression: removeAnchorLinkJS, ReturnByValue: true})
	}()
	if injected := false; json.Unmarshal(r.Result.Value, &injected) != nil || !injected {
		exc, _ := json.Marshal(r.ExceptionDetails)
		return "", fmt.Errorf("cannot inject the link: %s", exc)
	}
	ch := make(chan string, 1)
	b.mu.Lock()
	if b.phWaiters == nil {
		b.phWaiters = map[string]chan string{}
	}
	b.phWaiters[href] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.phWaiters, href)
		b.mu.Unlock()
	}()
	for _, ev := range []wire.DispatchMouseEvent{
		{Type: wire.MousePressed, X: 12, Y: 12, Button: wire.ButtonMiddle, Buttons: 4, ClickCount: 1},
		{Type: wire.MouseReleased, X: 12, Y: 12, Button: wire.ButtonMiddle, Buttons: 0, ClickCount: 1},
	} {
		if _, err := call(ctx, c, sess, ev); err != nil {
			return "", err
		}
	}
	select {
	case pid := <-ch:
		return pid, nil
	case <-ctx.Done():
		return "", fmt.Errorf("no tab appeared after the middle click on the injected link: %w", ctx.Err())
	case <-c.Done():
		return "", browser.ErrNotConnected
	}
}

// navigate loads url in page.
func (b *Browser) navigate(ctx context.Context, c *wire.Conn, page, url string) error {
	sess, detach, err := attach(ctx, c, page)
	if err != nil {
		return err
	}
	defer detach()
	// A load error (net::ERR_…) still leaves the page at its url with an error
	// page, as createTarget would: only a failed call is an error.
	_, err = call(ctx, c, sess, wire.Navigate{URL: url})
	return err
}

// noteMisplaced sets p.Misplaced when a tab asked for in req.WindowID is in
// another window: why (remembered for the key, so that a retried Open says the
// same), else that CDP cannot choose a tab's window.
func (b *Browser) noteMisplaced(req browser.OpenRequest, p browser.Page, why string) browser.Page {
	if req.WindowID == "" || req.NewWindow || p.WindowID == "" || p.WindowID == req.WindowID {
		return p
	}
	if why != "" {
		b.misplaced.Store(req.Key, why)
		b.log.Info("background tab opened outside the requested window", "page", p.ID, "want", req.WindowID, "got", p.WindowID, "why", why)
	} else if v, ok := b.misplaced.Load(req.Key); ok {
		why = v.(string)
	} else {
		why = "CDP cannot choose a new tab's window (Chrome puts it in the last active window)"
	}
	p.Misplaced = why
	return p
}
