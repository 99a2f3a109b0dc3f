package cdp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
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
	if strings.HasPrefix(p.URL, markerPrefix) {
		p.URL = req.URL // loading: the browser reports it soon
	}
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
			return id, b.leaveMarker(ctx, c, id, req.URL)
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
	id, err := b.createTarget(ctx, c, params)
	if err != nil {
		// The intent stays: a create whose reply was lost may still have made
		// the page, and the next Open resolves it.
		return "", err
	}
	if err := b.faultAt(faultAfterCreate, id); err != nil {
		return "", err
	}
	if err := b.ledger.Opened(req.Key, id); err != nil {
		return "", err
	}
	return id, b.leaveMarker(ctx, c, id, req.URL)
}

// markerPrefix starts the url an Open creates its page at (Intent.Marker).
const markerPrefix = "about:blank#tw-"

// leaveMarker navigates a recorded page from its intent's marker to the url
// the Open asked for (about:blank for none). A url that fails to load leaves
// the browser's error page, as a create at it would.
func (b *Browser) leaveMarker(ctx context.Context, c *wire.Conn, id, u string) error {
	if u == "" {
		u = "about:blank"
	}
	ps, err := b.session(ctx, c, id)
	if err != nil {
		return fmt.Errorf("open: load %s in page %s: %w", u, id, err)
	}
	defer ps.mu.Unlock()
	// The navigate goes out right behind the attach's Page.enable (session).
	_, err = call(ctx, ps.c, ps.id, wire.Navigate{URL: u})
	if eerr := ps.enabled(ctx); err == nil {
		err = eerr
	}
	if err != nil {
		return fmt.Errorf("open: load %s in page %s: %w", u, id, err)
	}
	// Open returns once the browser reports the page at its url, as a create
	// at the url would: callers and observers see the url, never the marker.
	deadline := time.Now().Add(markerWait)
	for {
		b.mu.Lock()
		t, ok := b.targets[id]
		left := !ok || !strings.HasPrefix(t.info.URL, markerPrefix)
		b.mu.Unlock()
		if left || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// markerWait bounds leaveMarker's wait for the browser to report the url.
const markerWait = 5 * time.Second

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
