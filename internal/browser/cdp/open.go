package cdp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
)

// Open: the crash-consistent create (intents in the ledger) and the window
// choice (place.go).

// Open implements browser.Browser.
func (b *Browser) Open(ctx context.Context, req browser.OpenRequest) (browser.Page, error) {
	c, err := b.current()
	if err != nil {
		return browser.Page{}, err
	}
	if req.Key == "" {
		return browser.Page{}, errors.New("open: a key is required: the page is recorded under it")
	}
	if _, err := url.Parse(req.URL); err != nil {
		return browser.Page{}, fmt.Errorf("open: %q is not a url a browser can load (%v): give an absolute url such as https://example.com/path", req.URL, err)
	}
	l := lockFor(b.keyLocks, &b.mu, req.Key)
	l.Lock()
	defer l.Unlock()
	if id, ok := b.ledger.PageOf(req.Key); ok {
		b.mu.Lock()
		if t, ok := b.targets[id]; ok {
			p := b.pageLocked(t)
			b.mu.Unlock()
			p, err := b.withWindow(ctx, c, p)
			return b.noteMisplaced(req, p, ""), err
		}
		b.mu.Unlock()
		// The page the key opened is gone: the record has served.
		if err := b.ledger.Closed(req.Key, id); err != nil {
			return browser.Page{}, err
		}
	}
	if req.WindowID != "" && !req.NewWindow {
		if err := b.resolveAll(ctx, c); err != nil {
			return browser.Page{}, err
		}
		b.mu.Lock()
		found := false
		for _, t := range b.targets {
			found = found || t.windowID == req.WindowID
		}
		b.mu.Unlock()
		if !found {
			return browser.Page{}, fmt.Errorf("window %s: %w", req.WindowID, browser.ErrNotFound)
		}
	}
	params := wire.CreateTarget{URL: req.URL, Background: true, NewWindow: req.NewWindow}
	if req.Context != "" {
		if !b.opts.Pool {
			return browser.Page{}, fmt.Errorf("open in context %q: the driver was not started with Pool", req.Context)
		}
		id, err := b.ensureContext(ctx, c, req.Context)
		if err != nil {
			return browser.Page{}, err
		}
		params.BrowserContextID = id
	}
	// Window choice (place.go): a tab for a named window opens from a page the
	// session owns there; createTarget (crash-consistent) otherwise.
	var id, misplaced string
	if req.WindowID != "" && !req.NewWindow {
		if id, misplaced, err = b.openInWindow(ctx, c, req); err != nil {
			return browser.Page{}, err
		}
	}
	if id == "" {
		if id, err = b.createRecorded(ctx, c, req, params); err != nil {
			return browser.Page{}, err
		}
	}
	b.mu.Lock()
	t, ok := b.targets[id]
	var p browser.Page
	if ok {
		p = b.pageLocked(t)
	} else {
		p = browser.Page{ID: id, URL: req.URL}
	}
	b.mu.Unlock()
	p, err = b.withWindow(ctx, c, p)
	if err != nil {
		return p, err
	}
	return b.noteMisplaced(req, p, misplaced), nil
}

// createRecorded creates the page of an Open and records it under the key,
// crash-consistently: an intent (the key, the url, and a marker url carrying a
// random nonce) is written to the ledger before Target.createTarget creates the
// page at the marker; once the page is recorded under the key, it is navigated
// to the url. A key that still has an intent (a driver stopped between the
// create and the record) first resolves it from what the browser shows: the
// page at the intent's marker is the one it created, and is recorded; none
// means nothing was created, and the page is created now. Only the nonce
// claims a page (invariant 10): a user's tab at the intent's url never is.
func (b *Browser) createRecorded(ctx context.Context, c *wire.Conn, req browser.OpenRequest, params wire.CreateTarget) (string, error) {
	if in, ok := b.ledger.IntentOf(req.Key); ok && in.Marker != "" {
		id, err := b.resolveIntent(ctx, c, in)
		if err != nil {
			return "", err
		}
		if id != "" {
			b.log.Info("adopted the page an interrupted open created", "key", req.Key, "page", id, "url", in.URL)
			if err := b.ledger.Opened(req.Key, id); err != nil {
				return "", err
			}
			return id, b.leaveMarker(ctx, c, id, in.Marker, req.URL)
		}
	}
	if err := b.faultAt(faultBeforeIntent, ""); err != nil {
		return "", err
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("open %s: a nonce for its intent: %w", req.Key, err)
	}
	in := ledger.Intent{Key: req.Key, URL: req.URL, NewWindow: req.NewWindow, Context: req.Context, Marker: markerPrefix + hex.EncodeToString(nonce)}
	if err := b.ledger.Intend(in); err != nil {
		return "", err
	}
	if err := b.faultAt(faultAfterIntent, ""); err != nil {
		return "", err
	}
	params.URL = in.Marker
	b.mu.Lock()
	b.leaving[in.Marker] = &leave{url: orBlank(req.URL)}
	b.mu.Unlock()
	id, err := b.createTarget(ctx, c, params)
	if err != nil {
		// The intent stays: a create whose reply was lost may still have made
		// the page, and the next Open resolves it (and reports it at its url
		// from then on).
		b.mu.Lock()
		delete(b.leaving, in.Marker)
		b.mu.Unlock()
		return "", err
	}
	b.mu.Lock()
	if e := b.leaving[in.Marker]; e != nil {
		e.id = id
	}
	b.mu.Unlock()
	if err := b.faultAt(faultAfterCreate, id); err != nil {
		return "", err
	}
	if err := b.ledger.Opened(req.Key, id); err != nil {
		return "", err
	}
	return id, b.leaveMarker(ctx, c, id, in.Marker, req.URL)
}

func orBlank(u string) string {
	if u == "" {
		return "about:blank"
	}
	return u
}

// markerPrefix starts the url an Open creates its page at (Intent.Marker).
const markerPrefix = "about:blank#tw-"

// leaveMarker navigates a recorded page from its intent's marker to the url
// the Open asked for (about:blank for none), and returns once the browser has
// taken the navigation, as a create at the url returns before the page
// commits. Until the browser shows the page leave its marker, the driver
// reports it at that url (pageLocked), so callers and observers never see the
// marker. Waiting for the commit instead cost every Open the start of the
// site's renderer (about 200 ms here) and, on a remote browser, round trips;
// a step on the page waits for its target as on any page still loading
// (locate's selectorGrace). A url that fails to load leaves the browser's
// error page, as a create at it would.
func (b *Browser) leaveMarker(ctx context.Context, c *wire.Conn, id, marker, u string) error {
	u = orBlank(u)
	b.mu.Lock()
	b.leaving[marker] = &leave{url: u, id: id}
	if t := b.targets[id]; t != nil && t.marker == "" && (t.info.URL == marker || t.info.URL == "") {
		t.marker = marker
	}
	b.mu.Unlock()
	ps, err := b.session(ctx, c, id)
	if err != nil {
		return fmt.Errorf("open: load %s in page %s: %w", u, id, err)
	}
	defer ps.mu.Unlock()
	// The navigate goes out right behind the attach's Page.enable (session),
	// whose reply the session's next user awaits (enabled). Its own reply
	// comes once the site has answered, so it is not awaited either: the
	// session's later commands go out behind it all the same.
	nav, err := wire.Send(ps.c, ps.id, wire.Navigate{URL: u})
	if err != nil {
		if errors.Is(err, wire.ErrClosed) {
			err = browser.ErrNotConnected
		}
		return fmt.Errorf("open: load %s in page %s: %w", u, id, err)
	}
	go func() {
		wctx, cancel := context.WithTimeout(context.Background(), navigateReplyWait)
		defer cancel()
		_, err := nav.Wait(wctx)
		if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, wire.ErrClosed) || wire.IsGone(err) {
			return // sent; or the connection or the page went (a reconnect finds the page as it is)
		}
		// Chromium refused the navigation: the page stays on its marker's
		// empty document. It is still reported at u (never at the marker),
		// and steps on it are refused with the reason (awaitCommit).
		b.log.Info("Chromium refused an open's navigation: its page stays blank", "page", id, "url", u, "error", err.Error())
		b.mu.Lock()
		if e := b.leaving[marker]; e != nil && e.id == id {
			e.refused = err.Error()
		}
		b.mu.Unlock()
	}()
	return nil
}

// navigateReplyWait bounds how long leaveMarker listens for the reply of its
// Page.navigate (which comes once the site answers).
const navigateReplyWait = 2 * time.Minute

// pageInfos returns every page target the browser reports now, in every context.
func (b *Browser) pageInfos(ctx context.Context, c *wire.Conn) ([]wire.TargetInfo, error) {
	r, err := call(ctx, c, "", wire.GetTargets{})
	if err != nil {
		return nil, err
	}
	out := r.TargetInfos[:0]
	for _, ti := range r.TargetInfos {
		if isPage(ti) {
			out = append(out, ti)
		}
	}
	return out, nil
}

// resolveIntent finds the page an interrupted open created: the one page at
// the intent's marker, in the intent's context, recorded under no key; "" when
// there is none (create it now). A page at the intent's url is never it.
func (b *Browser) resolveIntent(ctx context.Context, c *wire.Conn, in ledger.Intent) (string, error) {
	infos, err := b.pageInfos(ctx, c)
	if err != nil {
		return "", err
	}
	ctxID, pooled := "", in.Context != ""
	if pooled {
		id, ok := b.ledger.Context(in.Context)
		if !ok {
			return "", nil // the context is gone, and every page of it
		}
		ctxID = id
	}
	ours := map[string]bool{}
	for _, id := range b.ledger.Contexts() {
		ours[id] = true
	}
	for _, ti := range infos {
		switch {
		case ti.URL != in.Marker,
			ti.OpenerID != "",
			b.ledger.Recorded(ti.TargetID),
			pooled && ti.BrowserContextID != ctxID,
			!pooled && ours[ti.BrowserContextID]:
			continue
		}
		return ti.TargetID, nil
	}
	return "", nil
}

func (b *Browser) createTarget(ctx context.Context, c *wire.Conn, params wire.CreateTarget) (string, error) {
	u := normURL(params.URL)
	b.mu.Lock()
	b.ownCreate[u]++
	b.mu.Unlock()
	r, err := call(ctx, c, "", params)
	if err != nil {
		// The created page (if any) was not seen: forget the marker.
		b.mu.Lock()
		if b.ownCreate[u] > 0 {
			b.ownCreate[u]--
			if b.ownCreate[u] == 0 {
				delete(b.ownCreate, u)
			}
		}
		b.mu.Unlock()
		return "", err
	}
	return r.TargetID, nil
}
