package cdp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// The model: page targets as Chrome reports them (events and refreshes),
// the browser.Events emitted from it, Snapshot, and what the driver observed of
// a page's origin (Adopt, Bind).

// target is one page target in the model.
type target struct {
	info       wire.TargetInfo
	windowID   string // "" until known
	popup      bool
	attributed string
	shown      bool // reported to the consumer at least once
	seq        int64
	updates    int64 // target infos applied from events, to keep refreshes from going back in time
	closing    int   // Closes in flight past the last-tab check (close.go)
	// marker is the url of an Open's marker the page was first seen at
	// (pageLocked).
	marker string
}

// actEntry is a mutating step running (or lingering, attributionLinger) on a
// page: the evidence a new page's attribution needs. page is the acted-on
// target, ctx its browser context, opens the Page.windowOpen events that page
// fired while the step ran and no new page has accounted for yet, and navOpens
// its Page.frameRequestedNavigation into a new tab or window (a windowOpen
// comes before its step's input returns, and so does the page's
// targetCreated: what is left when the input returns is dropped, and the entry
// lingers only for its count, announced).
type actEntry struct {
	key      string
	id       int64
	page     string
	ctx      string
	opens    int
	navOpens int
	running  bool
	// announced counts every Page.windowOpen the page fired while the step
	// ran (ActResult.Spawns); opens is what attribution has not given yet.
	announced int
}

func visibleURL(u string) bool {
	return !strings.HasPrefix(u, "devtools://") && !strings.HasPrefix(u, "chrome-extension://")
}

func isPage(ti wire.TargetInfo) bool { return ti.Type == "page" && ti.Subtype == "" }

func normURL(u string) string {
	if u == "" {
		return "about:blank"
	}
	return strings.TrimSuffix(u, "/")
}

func (b *Browser) onEvent(c *wire.Conn, e wire.Event) {
	switch ev := wire.ParseEvent(e).(type) {
	case *wire.TargetCreated:
		b.onTargetInfo(c, ev.TargetInfo)
	case *wire.TargetInfoChanged:
		b.onTargetInfo(c, ev.TargetInfo)
	case *wire.TargetDestroyed:
		b.onDestroyed(c, ev.TargetID)
	case *wire.AttachedToTarget:
		if e.Session != "" {
			b.onFrameAttached(c, e.Session, ev)
		}
	case *wire.DetachedFromTarget:
		b.dropSession(c, ev.SessionID)
		b.onFrameDetached(c, ev.SessionID)
	case *wire.WindowOpen:
		b.onWindowOpen(c, e.Session, "", false)
	case *wire.FrameRequestedNavigation:
		// A link the step's input opens in a new tab or window (Ctrl, Shift
		// or middle click): announced by its main frame only, with no
		// Page.windowOpen; the page comes with no opener.
		if ev.Disposition == "newTab" || ev.Disposition == "newWindow" {
			b.onWindowOpen(c, e.Session, ev.FrameID, true)
		}
	case *wire.FrameNavigated:
		if e.Session != "" && ev.Frame.ParentID == "" {
			b.onCommitted(c, e.Session, ev.Frame.URL)
		}
	case *wire.JavaScriptDialogOpening:
		b.onDialog(c, e.Session, dialog{Type: ev.Type, Message: ev.Message, DefaultPrompt: ev.DefaultPrompt})
	case *wire.JavaScriptDialogClosed:
		b.onDialogClosed(c, e.Session)
	case *wire.RequestPaused:
		b.onRequestPaused(c, e.Session, ev)
	}
}

func (b *Browser) onTargetInfo(c *wire.Conn, ti wire.TargetInfo) {
	b.mu.Lock()
	if t, ok := b.targets[ti.TargetID]; ok {
		t.updates++
	}
	b.onTargetInfoLocked(c, ti)
	b.mu.Unlock()
}

func (b *Browser) onTargetInfoLocked(c *wire.Conn, ti wire.TargetInfo) {
	if b.conn != c {
		return
	}
	t, known := b.targets[ti.TargetID]
	if !isPage(ti) {
		if known { // e.g. a prerender activation changed it; treat as gone
			b.removeLocked(ti.TargetID)
		}
		return
	}
	if !known {
		b.seq++
		t = &target{info: ti, seq: b.seq}
		if strings.HasPrefix(ti.URL, markerPrefix) {
			t.marker = ti.URL
		}
		b.targets[ti.TargetID] = t
		if ti.OpenerID == "" {
			u := normURL(ti.URL)
			switch {
			case b.phWaiters[ti.URL] != nil:
				// The tab of an openFrom click: it carries the click's nonce.
				ch := b.phWaiters[ti.URL]
				delete(b.phWaiters, ti.URL)
				ch <- ti.TargetID
			case b.ownCreate[u] > 0:
				b.ownCreate[u]--
				if b.ownCreate[u] == 0 {
					delete(b.ownCreate, u)
				}
			default:
				t.attributed = b.attributionLocked(ti)
			}
		} else {
			t.attributed = b.attributionLocked(ti)
		}
		if b.connected && visibleURL(ti.URL) {
			t.shown = true
			b.emitLocked(browser.PageCreated, t)
		}
		if b.connected {
			go b.resolveWindow(c, ti.TargetID)
		}
		return
	}
	changed := t.info.URL != ti.URL || t.info.Title != ti.Title || t.info.OpenerID != ti.OpenerID ||
		t.info.BrowserContextID != ti.BrowserContextID
	t.info = ti
	if !changed || !b.connected {
		return
	}
	if !t.shown && !visibleURL(ti.URL) {
		return
	}
	typ := browser.PageUpdated
	if !t.shown {
		typ = browser.PageCreated
	}
	t.shown = true
	b.emitLocked(typ, t)
}

// onWindowOpen counts a Page.windowOpen of a page a step acts on (or a
// Page.frameRequestedNavigation of its main frame, frame, into a new tab or
// window): the step's input is about to open a window or tab, which
// attributionLocked then gives to the step (nav: a requested navigation).
func (b *Browser) onWindowOpen(c *wire.Conn, session, frame string, nav bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != c {
		return
	}
	for page, ps := range b.sessions {
		if ps.c != c {
			continue
		}
		switch child, ok := ps.children[session]; {
		case ps.id == session && (frame == "" || frame == page):
		case ok && (frame == "" || frame == child.frameID):
			// An out-of-process frame of the page (frames.go).
		default:
			continue
		}
		for i := range b.acts {
			if b.acts[i].page == page && b.acts[i].running {
				if nav {
					b.acts[i].navOpens++
				} else {
					b.acts[i].opens++
				}
				b.acts[i].announced++
			}
		}
	}
}

// attributionLocked is the key of the step whose own input made the new page
// ti appear, on evidence only (invariants 2 and 10), in the acted-on page's
// browser context:
//   - a page whose opener is the acted-on page answers one of its
//     Page.windowOpen (Chromium names the opener of every page window.open, a
//     target=_blank link or form makes, noopener ones included); it is the
//     step's only when the acted-on page is a tab its session binds (a spawn
//     of an owned page is adopted by its opener);
//   - a page with no opener answers one of its main frame's
//     Page.frameRequestedNavigation into a new tab or window (a Ctrl, Shift or
//     middle click on a link, which Chromium opens with no opener).
//
// So a page with no opener never takes a windowOpen: a tab the user opens in
// the same context in the milliseconds between a page's announcement and its
// popup stays the user's. Anything else is nobody's (""): a tab the user opens
// in another window or context while a step runs, or from a bound tab by
// their own click after the step's input.
func (b *Browser) attributionLocked(ti wire.TargetInfo) string {
	for i := len(b.acts) - 1; i >= 0; i-- {
		e := &b.acts[i]
		if e.key == "" || ti.BrowserContextID != e.ctx {
			continue
		}
		switch {
		case ti.OpenerID == e.page && e.opens > 0:
			e.opens--
			if r, ok := b.ledger.Get(e.page); !ok || r.Kind != browser.RecordBound {
				return ""
			}
			return e.key
		case ti.OpenerID == "" && e.navOpens > 0:
			e.navOpens--
			return e.key
		}
	}
	return ""
}

func (b *Browser) onDestroyed(c *wire.Conn, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != c {
		return
	}
	b.removeLocked(id)
}

func (b *Browser) removeLocked(id string) {
	t, ok := b.targets[id]
	if !ok {
		return
	}
	delete(b.targets, id)
	delete(b.sessions, id)
	if b.leavingLocked(t) != nil {
		delete(b.leaving, t.marker)
	}
	if b.connected && t.shown {
		b.emitLocked(browser.PageRemoved, t)
	}
	for _, ch := range b.destroyed[id] {
		close(ch)
	}
	delete(b.destroyed, id)
}

func (b *Browser) emitLocked(typ browser.EventType, t *target) {
	b.events.push(browser.Event{Type: typ, Page: b.pageLocked(t), Epoch: b.epoch, Time: time.Now()})
}

func (b *Browser) pageLocked(t *target) browser.Page {
	p := browser.Page{
		ID:         t.info.TargetID,
		WindowID:   t.windowID,
		OpenerID:   t.info.OpenerID,
		URL:        t.info.URL,
		Title:      t.info.Title,
		Popup:      t.popup,
		Context:    b.ctxNames[t.info.BrowserContextID],
		Attributed: t.attributed,
	}
	// The tab of an openFrom click (a placeholder, or a tab in a pinned window
	// before its navigation) is reported at about:blank: its nonce is the
	// driver's proof of that tab, shown to nobody.
	if strings.HasPrefix(p.URL, tabMarkerPrefix) {
		p.URL = "about:blank"
	}
	if strings.HasPrefix(p.Title, tabMarkerPrefix) {
		p.Title = "about:blank"
	}
	// A page an Open created at its marker is reported at the url the Open
	// navigates it to, as a page created at that url is while it loads (its
	// title is its url until it has one): no caller or observer sees the
	// marker. While the site answers, Chromium shows such a page at the url
	// it is going to, at no url, or at its marker again (Target.getTargets
	// gives the committed url, events the pending one), until the page
	// commits a document (onCommitted). Only the page the Open created is
	// masked (leave.id, once createTarget answered).
	if e := b.leavingLocked(t); e != nil {
		if p.URL == "" || p.URL == t.marker {
			p.URL = e.url
		}
		if p.Title == "" || p.Title == t.marker {
			p.Title = e.url
		}
	}
	return p
}

// leave is an Open's page on its way from its marker to its url.
type leave struct {
	url string // where it is going
	id  string // the page, once createTarget answered
	// refused is Chromium's reason when it refused the navigation: the page
	// stays on its marker's empty document, reported at url, and no step runs
	// on it (awaitCommit).
	refused string
}

// leavingLocked is the Open t is on its way through, if t is that Open's
// page: the one createTarget answered with, or any page at the marker while
// createTarget has not answered yet. A page at somebody else's marker gets
// nil.
func (b *Browser) leavingLocked(t *target) *leave {
	if t.marker == "" {
		return nil
	}
	e := b.leaving[t.marker]
	if e == nil || (e.id != "" && e.id != t.info.TargetID) {
		return nil
	}
	return e
}

// onCommitted ends the masking of a page an Open created once its main frame
// committed a document other than its marker's: from then on it is reported
// as Chromium shows it.
func (b *Browser) onCommitted(c *wire.Conn, session, url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != c || url == "" {
		return
	}
	for page, ps := range b.sessions {
		if ps.c != c || ps.id != session {
			continue
		}
		if t := b.targets[page]; t != nil && t.marker != "" && url != t.marker {
			b.committedLocked(t)
		}
	}
}

// committedLocked ends t's masking.
func (b *Browser) committedLocked(t *target) {
	if b.leavingLocked(t) != nil {
		delete(b.leaving, t.marker)
	}
	t.marker = ""
}

var _ browser.RecordLookup = (*Browser)(nil)

// RecordOf implements browser.RecordLookup: the ledger's record under key,
// without the browser round trips of a Snapshot (whose records are the same
// ledger's). The agent asks it for every window deleted after its page went,
// so a pool session's N windows after its context's disposal cost N lookups,
// not N snapshots.
func (b *Browser) RecordOf(_ context.Context, key string) (browser.Record, bool, error) {
	if _, err := b.current(); err != nil {
		return browser.Record{}, false, err
	}
	page, ok := b.ledger.PageOf(key)
	if !ok {
		return browser.Record{}, false, nil
	}
	r, ok := b.ledger.Get(page)
	return r, ok && r.Key == key, nil
}

// Snapshot implements browser.Browser. devtools:// and chrome-extension:// pages
// are left out unless they were reported earlier as something else.
func (b *Browser) Snapshot(ctx context.Context) (browser.Snapshot, error) {
	c, err := b.current()
	if err != nil {
		return browser.Snapshot{}, err
	}
	if err := b.refresh(ctx, c); err != nil {
		return browser.Snapshot{}, err
	}
	if err := b.resolveAll(ctx, c); err != nil {
		return browser.Snapshot{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != c || !b.connected {
		return browser.Snapshot{}, browser.ErrNotConnected
	}
	ts := make([]*target, 0, len(b.targets))
	for _, t := range b.targets {
		if t.shown || visibleURL(t.info.URL) {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(x, y *target) int { return int(x.seq - y.seq) })
	s := browser.Snapshot{Epoch: b.epoch, Version: b.version, Records: b.ledger.Records()}
	seen := map[string]int{}
	for _, t := range ts {
		s.Pages = append(s.Pages, b.pageLocked(t))
		if t.windowID == "" {
			continue
		}
		if i, ok := seen[t.windowID]; ok {
			s.Windows[i].Popup = s.Windows[i].Popup || t.popup
			continue
		}
		seen[t.windowID] = len(s.Windows)
		s.Windows = append(s.Windows, browser.Window{ID: t.windowID, Popup: t.popup})
	}
	return s, nil
}

// Adopt implements browser.Browser: the page's opener, as Chrome reported it in
// targetCreated, must be a page req.Parent owns, or the Act keyed req.Parent
// must have caused the page (attributionLocked).
func (b *Browser) Adopt(_ context.Context, req browser.AdoptRequest) error {
	opener, attributed, err := b.observed(req.ID)
	if err != nil {
		return fmt.Errorf("adopt page %s: %w", req.ID, err)
	}
	return b.ledger.Adopt(req, opener, attributed)
}

// Bind implements browser.Browser.
func (b *Browser) Bind(_ context.Context, req browser.BindRequest) error {
	opener, attributed, err := b.observed(req.ID)
	if err != nil {
		return fmt.Errorf("bind tab %s: %w", req.ID, err)
	}
	return b.ledger.Bind(req, opener, attributed)
}

// observed is what the driver itself saw of a page's origin: its opener, and
// the key of the Act whose input caused it (attributionLocked).
func (b *Browser) observed(id string) (opener, attributed string, err error) {
	if _, err := b.current(); err != nil {
		return "", "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.targets[id]
	if !ok {
		return "", "", browser.ErrNotFound
	}
	return t.info.OpenerID, t.attributed, nil
}

// Release implements browser.Browser.
func (b *Browser) Release(_ context.Context, req browser.ReleaseRequest) error {
	return b.ledger.Release(req.Key, req.ID)
}
