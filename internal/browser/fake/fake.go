// Package fake is an in-memory browser with real semantics for fast controller
// tests: windows own tabs, closing a window's last tab closes the window, pages
// have openers, popups open as standalone windows, and the "user" can open and
// close tabs of their own. Every behaviour it stands in for is also proven
// against real Chromium by the cdp driver's tests.
package fake

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
)

type tab struct {
	id, window, opener, url, title string
	// doc counts the tab's documents (navigations); epoch its scrolls and
	// re-renders in the current document.
	doc, epoch int64
	scrollY    int
	// typed and pressed record the text typed and keys pressed into the page.
	typed   string
	pressed []string
	// back and forward are the urls before and after the current one in the
	// tab's history, the nearest last (history.go).
	back, forward []string
	// hovered names the element the pointer was last moved over (Hovered).
	hovered string
	// selected maps a drop-down's name to the option a select step chose (Selected).
	selected map[string]string
	// uploaded maps a file input's name to the names of the files an upload
	// step put into it (Uploaded).
	uploaded map[string][]string
	// filled maps a text field's name to the text a fill step left in it (Filled).
	filled map[string]string
	// Pages that resist closing (ArmBeforeUnload, OpenDialog, CrashPage): a
	// beforeunload handler that prompts on close, a JavaScript dialog showing,
	// a crashed renderer.
	beforeunload bool
	dialog       string
	crashed      bool
	// shown is the dialog showing (dialog is its type), left for a dialog
	// step (dialog.go).
	shown *shownDialog
}

type window struct {
	id    string
	popup bool
	tabs  []string // tab ids in order
}

// Browser is the in-memory browser. The zero value is not usable; call New.
type Browser struct {
	mu        sync.Mutex
	next      int
	windows   map[string]*window
	winOrder  []string
	tabs      map[string]*tab
	closes    map[string]int // tab id → Close calls that closed it
	opens     map[string]int // key → pages Open created for it
	connected bool
	epoch     int64
	events    chan browser.Event
	// actKey is the key of the Act running now and actPage the page it acts on,
	// for attribution: a page the act's input makes appear without an opener in
	// actPage's window, or from actPage when it is a bound tab, is the act's.
	actKey, actPage string
	// actSpawns counts the pages created while an Act runs (ActResult.Spawns):
	// the fake creates a click's spawn synchronously, so it tells exactly.
	actSpawns int
	// attributed remembers the act key each such page was attributed to.
	attributed map[string]string
	// ledger lives in the browser, like the extension's records in
	// chrome.storage.session: it survives the agent's restarts.
	ledger *ledger.Ledger
	// misplaceTo, when set, is where background tabs for another named window
	// land, like a CDP browser whose session owns no page there.
	misplaceTo   string
	misplacedWhy map[string]string // key → Page.Misplaced of its tab
	// sites gives the pages at a url their interactive elements (SetSite).
	sites map[string][]Element
	// noisy names the urls whose screenshots are noise (SetScreenshotNoise).
	noisy map[string]bool
	// answered lists the dialogs closes answered.
	answered []string
	// dialogTimeout is browser.DialogTimeout unless SetDialogTimeout.
	dialogTimeout time.Duration
}

var _ browser.Browser = (*Browser)(nil)

// New returns a connected browser with one normal window holding one tab.
func New() *Browser {
	b := &Browser{
		windows:    map[string]*window{},
		tabs:       map[string]*tab{},
		closes:     map[string]int{},
		opens:      map[string]int{},
		connected:  true,
		epoch:      1,
		events:     make(chan browser.Event, 4096),
		attributed: map[string]string{},
		sites:      map[string][]Element{},

		dialogTimeout: browser.DialogTimeout,
	}
	b.ledger, _ = ledger.New("")
	return b
}

func (b *Browser) id(prefix string) string {
	b.next++
	return fmt.Sprintf("%s-%d", prefix, b.next)
}

func (b *Browser) page(t *tab) browser.Page {
	// Attribution is part of the page, in snapshots too (as the cdp driver reports
	// it): an agent restarted before it adopted the page still sees it.
	return browser.Page{ID: t.id, WindowID: t.window, OpenerID: t.opener, URL: t.url, Title: t.title, Popup: b.windows[t.window].popup, Attributed: b.attributed[t.id]}
}

func (b *Browser) emit(typ browser.EventType, p browser.Page) {
	if !b.connected {
		return
	}
	select {
	case b.events <- browser.Event{Type: typ, Page: p, Epoch: b.epoch, Time: time.Now()}:
	default:
		panic("fake browser: event buffer full; nobody is consuming Events()")
	}
}

// newWindowLocked creates a window with one tab and reports the tab.
func (b *Browser) newWindowLocked(url, opener string, popup bool) *tab {
	w := &window{id: b.id("win"), popup: popup}
	b.windows[w.id] = w
	b.winOrder = append(b.winOrder, w.id)
	return b.newTabLocked(w.id, url, opener)
}

func (b *Browser) newTabLocked(windowID, url, opener string) *tab {
	t := &tab{id: b.id("tab"), window: windowID, opener: opener, url: url, title: title(url)}
	b.tabs[t.id] = t
	if b.actPage != "" {
		b.actSpawns++
	}
	w := b.windows[windowID]
	w.tabs = append(w.tabs, t.id)
	b.attributeLocked(t)
	b.emit(browser.PageCreated, b.page(t))
	return t
}

// attributeLocked attributes a new page to the running Act on evidence only:
// no opener and in the acted-on page's window, or opened from the acted-on page
// when that page is a bound tab (a spawn of an owned page is adopted by its
// opener). A page the user opens anywhere else is nobody's.
func (b *Browser) attributeLocked(t *tab) {
	if b.actKey == "" {
		return
	}
	acting, ok := b.tabs[b.actPage]
	if !ok {
		return
	}
	switch {
	case t.opener == "" && t.window == acting.window:
	case t.opener == acting.id:
		if r, ok := b.ledger.Get(acting.id); !ok || r.Kind != browser.RecordBound {
			return
		}
	default:
		return
	}
	b.attributed[t.id] = b.actKey
}

func title(url string) string { return "Title of " + url }

func (b *Browser) removeTabLocked(id string) {
	t, ok := b.tabs[id]
	if !ok {
		return
	}
	delete(b.tabs, id)
	w := b.windows[t.window]
	w.tabs = slices.DeleteFunc(w.tabs, func(s string) bool { return s == id })
	b.emit(browser.PageRemoved, browser.Page{ID: id, WindowID: t.window})
	if len(w.tabs) == 0 {
		delete(b.windows, w.id)
		b.winOrder = slices.DeleteFunc(b.winOrder, func(s string) bool { return s == w.id })
	}
}

// Snapshot implements browser.Browser.
func (b *Browser) Snapshot(context.Context) (browser.Snapshot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return browser.Snapshot{}, browser.ErrNotConnected
	}
	s := browser.Snapshot{Epoch: b.epoch, Version: "FakeBrowser/1.0", Records: b.ledger.Records()}
	for _, wid := range b.winOrder {
		w := b.windows[wid]
		s.Windows = append(s.Windows, browser.Window{ID: w.id, Popup: w.popup})
		for _, tid := range w.tabs {
			s.Pages = append(s.Pages, b.page(b.tabs[tid]))
		}
	}
	return s, nil
}

// RecordOf implements browser.RecordLookup: the ledger's record under key, as
// Snapshot would list it.
func (b *Browser) RecordOf(_ context.Context, key string) (browser.Record, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return browser.Record{}, false, browser.ErrNotConnected
	}
	page, ok := b.ledger.PageOf(key)
	if !ok {
		return browser.Record{}, false, nil
	}
	r, ok := b.ledger.Get(page)
	return r, ok && r.Key == key, nil
}

// Open implements browser.Browser.
func (b *Browser) Open(_ context.Context, req browser.OpenRequest) (browser.Page, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return browser.Page{}, browser.ErrNotConnected
	}
	if req.Key == "" {
		return browser.Page{}, fmt.Errorf("fake open: a key is required")
	}
	if id, ok := b.ledger.PageOf(req.Key); ok {
		if t, ok := b.tabs[id]; ok {
			p := b.page(t)
			p.Misplaced = b.misplacedWhy[req.Key]
			return p, nil
		}
	}
	var t *tab
	defer func() {
		if t != nil {
			b.opens[req.Key]++
		}
	}()
	switch {
	case req.NewWindow:
		t = b.newWindowLocked(req.URL, "", false)
	default:
		wid := req.WindowID
		if wid == "" {
			for _, id := range b.winOrder {
				if !b.windows[id].popup {
					wid = id
					break
				}
			}
		}
		if _, ok := b.windows[wid]; !ok {
			if req.WindowID != "" {
				return browser.Page{}, fmt.Errorf("window %s: %w", req.WindowID, browser.ErrNotFound)
			}
			t = b.newWindowLocked(req.URL, "", false)
			break
		}
		misplaced := ""
		if m := b.misplaceTo; m != "" && req.WindowID != "" && m != req.WindowID {
			if _, ok := b.windows[m]; ok {
				wid, misplaced = m, "the fake browser cannot place tabs in a named window"
			}
		}
		t = b.newTabLocked(wid, req.URL, "")
		if err := b.ledger.Opened(req.Key, t.id); err != nil {
			return browser.Page{}, err
		}
		p := b.page(t)
		if misplaced != "" {
			if b.misplacedWhy == nil {
				b.misplacedWhy = map[string]string{}
			}
			b.misplacedWhy[req.Key] = misplaced
		}
		p.Misplaced = misplaced
		return p, nil
	}
	if err := b.ledger.Opened(req.Key, t.id); err != nil {
		return browser.Page{}, err
	}
	return b.page(t), nil
}

// MisplaceTabs makes background tabs asked for in another window land in window
// w instead (Open says why in Page.Misplaced); "" places them exactly again.
func (b *Browser) MisplaceTabs(w string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.misplaceTo = w
}

// Close implements browser.Browser, with the last-tab rule.
func (b *Browser) Close(_ context.Context, req browser.CloseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return browser.ErrNotConnected
	}
	t, ok := b.tabs[req.ID]
	if !ok {
		return b.ledger.Closed(req.Key, req.ID)
	}
	if err := b.ledger.MayClose(req.Key, req.ID); err != nil {
		return err
	}
	w := b.windows[t.window]
	if len(w.tabs) == 1 && !req.OwnsWindow {
		b.newTabLocked(w.id, "about:blank", "")
	}
	// As the real drivers do: a dialog showing is dismissed, the beforeunload
	// prompt the close raises is accepted (leaving is what was asked), and a
	// crashed page closes like any other. Nothing is left showing.
	if t.dialog != "" {
		b.answered = append(b.answered, t.dialog+":dismissed")
	}
	if t.beforeunload {
		b.answered = append(b.answered, "beforeunload:accepted")
	}
	b.closes[req.ID]++
	b.removeTabLocked(req.ID)
	return b.ledger.Closed(req.Key, req.ID)
}

// ArmBeforeUnload is the page id arming a beforeunload handler after the user
// typed (an unsent draft): closing it raises a prompt.
func (b *Browser) ArmBeforeUnload(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tabs[id]; t != nil {
		t.beforeunload = true
	}
}

// OpenDialog is the page id opening a JavaScript dialog (alert, confirm,
// prompt) that blocks it until answered.
func (b *Browser) OpenDialog(id, kind string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tabs[id]; t != nil {
		t.dialog = kind
		t.shown = &shownDialog{Dialog: browser.Dialog{Type: kind}, at: time.Now()}
	}
}

// CrashPage crashes the renderer of page id (chrome://crash); the tab stays.
func (b *Browser) CrashPage(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tabs[id]; t != nil {
		t.crashed = true
	}
}

// DialogsShowing counts the JavaScript dialogs showing on pages still open.
func (b *Browser) DialogsShowing() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, t := range b.tabs {
		if t.dialog != "" {
			n++
		}
	}
	return n
}

// Answered lists the dialogs closes answered ("alert:dismissed",
// "beforeunload:accepted"), in order.
func (b *Browser) Answered() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.answered)
}

// Adopt implements browser.Browser: the spawn must have been seen by the fake.
func (b *Browser) Adopt(_ context.Context, req browser.AdoptRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	opener, attributed, err := b.observedLocked(req.ID)
	if err != nil {
		return err
	}
	return b.ledger.Adopt(req, opener, attributed)
}

// Bind implements browser.Browser.
func (b *Browser) Bind(_ context.Context, req browser.BindRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	opener, attributed, err := b.observedLocked(req.ID)
	if err != nil {
		return err
	}
	return b.ledger.Bind(req, opener, attributed)
}

// observedLocked is what the fake saw of a page's origin: its opener, and the
// key of the Act it appeared during.
func (b *Browser) observedLocked(id string) (opener, attributed string, err error) {
	if !b.connected {
		return "", "", browser.ErrNotConnected
	}
	t, ok := b.tabs[id]
	if !ok {
		return "", "", fmt.Errorf("page %s: %w", id, browser.ErrNotFound)
	}
	return t.opener, b.attributed[t.id], nil
}

// Release implements browser.Browser.
func (b *Browser) Release(_ context.Context, req browser.ReleaseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return browser.ErrNotConnected
	}
	return b.ledger.Release(req.Key, req.ID)
}

// Records returns the fake's ledger.
func (b *Browser) Records() []browser.Record { return b.ledger.Records() }

// ActSpawn runs an Act on req.Page during which the page makes a new page appear
// in its window without an opener (a noopener link, a download or a viewer the
// browser opens on its own). It returns the new page's id; the page is attributed
// to req.Key, as a real driver attributes opener-less pages during an Act.
func (b *Browser) ActSpawn(_ context.Context, req browser.ActRequest, url string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tabs[req.Page]
	if !ok {
		return "", browser.ErrNotFound
	}
	if err := b.ledger.MayAct(req.Owner, req.Page); err != nil {
		return "", err
	}
	b.actKey, b.actPage = req.Key, req.Page
	defer func() { b.actKey, b.actPage = "", "" }()
	return b.newTabLocked(t.window, url, "").id, nil
}

// Events implements browser.Browser.
func (b *Browser) Events() <-chan browser.Event { return b.events }

// Connected implements browser.Browser.
func (b *Browser) Connected() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.connected
}

// --- the world outside tabwarden: the user and the pages ---

// UserOpenWindow opens a window of the user's with tabs at the given urls and
// returns the window id and the tab ids.
func (b *Browser) UserOpenWindow(urls ...string) (string, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := b.newWindowLocked(urls[0], "", false)
	ids := []string{first.id}
	for _, u := range urls[1:] {
		ids = append(ids, b.newTabLocked(first.window, u, "").id)
	}
	return first.window, ids
}

// UserCloseTab closes a tab as the user would (not through tabwarden).
func (b *Browser) UserCloseTab(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeTabLocked(id)
}

// Spawn makes page opener open url: in a new standalone popup window when popup is
// true, else as a tab next to it. It returns the new page's id.
func (b *Browser) Spawn(opener, url string, popup bool) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.tabs[opener]
	if !ok {
		return "", fmt.Errorf("opener %s: %w", opener, browser.ErrNotFound)
	}
	if popup {
		return b.newWindowLocked(url, o.id, true).id, nil
	}
	return b.newTabLocked(o.window, url, o.id).id, nil
}

// Navigate changes a page's url and title, as a link click inside it would.
func (b *Browser) Navigate(id, url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tabs[id]; ok {
		b.loadLocked(t, url)
	}
}

// Disconnect drops the link to the browser; pages stay as they are.
func (b *Browser) Disconnect() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return
	}
	b.events <- browser.Event{Type: browser.Disconnected, Epoch: b.epoch, Time: time.Now()}
	b.connected = false
}

// Reconnect restores the link and starts a new epoch.
func (b *Browser) Reconnect() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.connected = true
	b.epoch++
	b.events <- browser.Event{Type: browser.Connected, Epoch: b.epoch, Time: time.Now()}
}

// CloseCount says how many times tabwarden closed the page (0 or 1 when correct).
func (b *Browser) CloseCount(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closes[id]
}

// OpenCount says how many pages Open created for a key (0 or 1 when correct:
// opening again under a key whose page is open returns that page).
func (b *Browser) OpenCount(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opens[key]
}

// Pages returns every open page.
func (b *Browser) Pages() []browser.Page {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []browser.Page
	for _, wid := range b.winOrder {
		for _, tid := range b.windows[wid].tabs {
			out = append(out, b.page(b.tabs[tid]))
		}
	}
	return out
}

// WindowTabs returns the tab ids of a window, or nil when it does not exist.
func (b *Browser) WindowTabs(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w, ok := b.windows[id]; ok {
		return slices.Clone(w.tabs)
	}
	return nil
}

// HasPage reports whether the page is open.
func (b *Browser) HasPage(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.tabs[id]
	return ok
}

// PageCount is how many pages are open.
func (b *Browser) PageCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tabs)
}
