// Package browsertest is the conformance suite of the browser seam: every promise
// the doc comments of package browser make, run against any driver. The fake runs
// it in `go test ./internal/browser/fake`, the cdp driver on real Chromium in
// internal/browser/cdp, the extension driver with the real extension in Chromium
// in test/e2e/extension.
//
// A driver-neutral test needs a hand outside the driver: the user who opens and
// closes tabs, a page that spawns a popup. The factory returns it as a World
// next to the Browser under test. What a user would check is the World's view
// (the browser's own page list), never only the driver's.
//
// Where a driver legitimately differs, the World says so through an optional
// interface (Focus), documented where it is declared.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// World is everything outside the driver under test that the suite needs.
type World interface {
	// URL is a page the suite opens: it can spawn (Spawn) and stays quiet otherwise.
	URL() string
	// UserOpenWindow has the user open a normal window of n tabs at URL() and
	// returns the window's id and the tabs' ids, once the driver under test
	// reports all of them.
	UserOpenWindow(t testing.TB, n int) (window string, pages []string)
	// UserCloseTab closes a page the way the user does (through the browser, no
	// driver's ledger) and returns once the browser no longer lists it.
	UserCloseTab(t testing.TB, id string)
	// Spawn has page opener open a new page, with opener as its opener: a tab next
	// to it, or a standalone popup window when popup is true. It returns the new
	// page's id once the driver under test reports it.
	Spawn(t testing.TB, opener string, popup bool) string
	// Open reports whether the browser itself (not the driver) lists the page.
	Open(t testing.TB, id string) bool
	// Disconnect cuts the driver's link to the browser (pages stay as they are);
	// Reconnect restores it.
	Disconnect(t testing.TB)
	Reconnect(t testing.TB)
}

// Focus is implemented by worlds that can tell whether a page is the visible tab
// of its window. The fake has no focus model and does not implement it; the
// suite then checks "never focuses" on the drivers whose world does.
type Focus interface {
	Visible(t testing.TB, id string) bool
}

// Caps are the legitimate differences between drivers; a world that has any
// implements Capabilities. The zero value is a driver that does everything.
type Caps struct {
	// NoLinkCut: the world cannot cut the driver's link deterministically (the
	// extension's service worker comes back by itself on any tab event; its
	// restart is proven by test/e2e/extension's restart tests), so the
	// reconnect test does not run.
	NoLinkCut bool
}

// Capabilities is implemented by worlds whose driver differs (Caps).
type Capabilities interface {
	Caps() Caps
}

func capsOf(w World) Caps {
	if c, ok := w.(Capabilities); ok {
		return c.Caps()
	}
	return Caps{}
}

// Factory starts a fresh driver (with an empty ledger) and its world for one
// subtest; both are torn down through t.Cleanup.
type Factory func(t *testing.T) (browser.Browser, World)

// Timeout bounds every wait of the suite; real browsers on a loaded machine are slow.
var Timeout = 20 * time.Second

// Run runs every conformance test against the drivers factory makes.
func Run(t *testing.T, factory Factory) {
	tests := []struct {
		name string
		f    func(*testing.T, *env)
	}{
		{"OpenIsIdempotentByKeyAndNeverFocuses", testOpen},
		{"CloseIsIdempotent", testCloseIdempotent},
		{"CloseRefusesPagesNotOwned", testCloseNotOwned},
		{"LastTabLeavesBlank", testLastTab},
		{"ConcurrentCleanupsKeepTheWindow", testConcurrentCleanup},
		{"AdoptChecksWhatTheDriverSaw", testAdopt},
		{"BindAndRelease", testBindRelease},
		{"UserSpawnFromBoundTabStaysTheUsers", testUserSpawnFromBound},
		{"ActRefusesPagesNotOwned", testActNotOwned},
		{"EventOrder", testEventOrder},
		{"ReconnectDeclaresNothingGone", testReconnect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, w := factory(t)
			e := &env{t: t, b: b, w: w}
			e.consume()
			t.Cleanup(e.tidy)
			tc.f(t, e)
		})
	}
}

// env is one subtest's driver, world and event log.
type env struct {
	t *testing.T
	b browser.Browser
	w World

	mu     sync.Mutex
	events []browser.Event
	// mine are pages the subtest made (user's, opened, spawned): closed by the
	// user at the end so that a shared browser stays clean.
	mine []string
}

func (e *env) consume() {
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	ch := e.b.Events()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-ch:
				if !ok {
					return
				}
				e.mu.Lock()
				e.events = append(e.events, ev)
				e.mu.Unlock()
			}
		}
	}()
}

func (e *env) log() []browser.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

func (e *env) keep(ids ...string) { e.mine = append(e.mine, ids...) }

// tidy closes, as the user, every page the subtest left open (placeholders too).
func (e *env) tidy() {
	if e.t.Failed() {
		e.t.Logf("events:\n%s", dump(e.log()))
	}
	for _, id := range e.mine {
		if e.w.Open(e.t, id) {
			e.w.UserCloseTab(e.t, id)
		}
	}
}

func dump(evs []browser.Event) string {
	var sb strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&sb, "  %s epoch=%d %+v\n", ev.Type, ev.Epoch, ev.Page)
	}
	return sb.String()
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *env) snapshot() browser.Snapshot {
	e.t.Helper()
	var s browser.Snapshot
	e.eventually("a snapshot", func() error {
		var err error
		s, err = e.b.Snapshot(e.ctx())
		return err
	})
	return s
}

// eventually polls f until it returns nil or Timeout passes.
func (e *env) eventually(what string, f func() error) {
	e.t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not within %v: %v", what, Timeout, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (e *env) open(req browser.OpenRequest) browser.Page {
	e.t.Helper()
	if req.URL == "" {
		req.URL = e.w.URL()
	}
	p, err := e.b.Open(e.ctx(), req)
	if err != nil {
		e.t.Fatalf("open %+v: %v", req, err)
	}
	e.keep(p.ID)
	e.eventually("the browser lists the opened page "+p.ID, func() error {
		if !e.w.Open(e.t, p.ID) {
			return errors.New("not listed")
		}
		return nil
	})
	return p
}

func (e *env) userWindow(n int) (string, []string) {
	e.t.Helper()
	w, ids := e.w.UserOpenWindow(e.t, n)
	e.keep(ids...)
	return w, ids
}

func (e *env) spawn(opener string, popup bool) string {
	e.t.Helper()
	id := e.w.Spawn(e.t, opener, popup)
	e.keep(id)
	return id
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantRecords checks the snapshot's Records of the pages the subtest made.
func (e *env) wantRecords(what string, want ...browser.Record) {
	e.t.Helper()
	s := e.snapshot()
	// Only the subtest's own pages: a browser shared with other tests (the
	// extension's records live in the browser) may hold records of theirs.
	var got []browser.Record
	for _, r := range s.Records {
		if slices.Contains(e.mine, r.Page) {
			got = append(got, r)
		}
	}
	sortRecords(got)
	sortRecords(want)
	if !slices.Equal(got, want) {
		e.t.Fatalf("%s: records %+v, want %+v", what, got, want)
	}
	// A driver that answers for one key answers as its snapshot does.
	if l, ok := e.b.(browser.RecordLookup); ok {
		for _, r := range want {
			one, found, err := l.RecordOf(e.ctx(), r.Key)
			if err != nil || !found || one != r {
				e.t.Fatalf("%s: RecordOf(%q) = %+v, %v, %v; the snapshot lists %+v", what, r.Key, one, found, err, r)
			}
		}
		if _, found, err := l.RecordOf(e.ctx(), "no-such-key"); err != nil || found {
			e.t.Fatalf("%s: RecordOf of a key never recorded = %v, %v; want no record", what, found, err)
		}
	}
}

func sortRecords(rs []browser.Record) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Page < rs[j].Page })
}

func (e *env) mustBeOpen(what string, ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		if !e.w.Open(e.t, id) {
			e.t.Fatalf("%s: page %s is gone from the browser", what, id)
		}
	}
}

// windowPages polls until the driver reports the window with n pages.
func (e *env) waitWindowPages(w string, n int) []browser.Page {
	e.t.Helper()
	var ps []browser.Page
	e.eventually(fmt.Sprintf("window %s with %d pages", w, n), func() error {
		ps = ps[:0]
		for _, p := range e.snapshot().Pages {
			if p.WindowID == w {
				ps = append(ps, p)
			}
		}
		if len(ps) != n {
			return fmt.Errorf("%d pages: %+v", len(ps), ps)
		}
		return nil
	})
	return ps
}

// --- the tests ---

// Open is idempotent by key, records the page as opened, and never focuses: a
// background tab in the user's window leaves the user's tab the visible one.
func testOpen(t *testing.T, e *env) {
	win, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k1", NewWindow: true})
	again := e.open(browser.OpenRequest{Key: "k1", NewWindow: true})
	if again.ID != p.ID {
		t.Fatalf("open again under the same key: page %s, first %s", again.ID, p.ID)
	}
	tab := e.open(browser.OpenRequest{Key: "k2", WindowID: win})
	if tab.ID == p.ID {
		t.Fatal("two keys share a page")
	}
	e.mustBeOpen("opened pages", p.ID, tab.ID, user[0])
	e.wantRecords("after two opens",
		browser.Record{Key: "k1", Page: p.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "k2", Page: tab.ID, Kind: browser.RecordOpened})
	if f, ok := e.w.(Focus); ok {
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window after a background open")
		}
		if tab.WindowID == win && f.Visible(t, tab.ID) {
			t.Error("the background tab became visible")
		}
	}
	// Counting the pages: the second open made nothing.
	n := 0
	for _, q := range e.snapshot().Pages {
		if q.ID == p.ID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("page %s listed %d times", p.ID, n)
	}
}

// Close returns once the page is gone, drops its record, and closing again (under
// any key) or closing an unknown page is not an error.
func testCloseIdempotent(t *testing.T, e *env) {
	p := e.open(browser.OpenRequest{Key: "k", NewWindow: true})
	noErr(t, "close", e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: p.ID, OwnsWindow: true}))
	if e.w.Open(t, p.ID) {
		t.Fatal("Close returned before the browser closed the page")
	}
	for _, k := range []string{"k", "another", ""} {
		noErr(t, "close a closed page under "+k, e.b.Close(e.ctx(), browser.CloseRequest{Key: k, ID: p.ID}))
	}
	noErr(t, "close an unknown page", e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: "NO-SUCH-PAGE"}))
	e.wantRecords("after close")
	// The key opens a new page now.
	q := e.open(browser.OpenRequest{Key: "k", NewWindow: true})
	if q.ID == p.ID {
		t.Fatal("reopen after close returned the closed page")
	}
}

// Close refuses (ErrNotOwned) the user's pages, bound tabs and another key's
// pages, and leaves each open.
func testCloseNotOwned(t *testing.T, e *env) {
	_, user := e.userWindow(2)
	mine := e.open(browser.OpenRequest{Key: "mine", NewWindow: true})
	noErr(t, "bind", e.b.Bind(e.ctx(), browser.BindRequest{Key: "bound", ID: user[1]}))
	for _, c := range []struct {
		what string
		req  browser.CloseRequest
	}{
		{"a user's tab under a key", browser.CloseRequest{Key: "mine", ID: user[0]}},
		{"a user's tab without a key", browser.CloseRequest{ID: user[0], OwnsWindow: true}},
		{"a bound tab under its key", browser.CloseRequest{Key: "bound", ID: user[1]}},
		{"a bound tab under another key", browser.CloseRequest{Key: "mine", ID: user[1]}},
		{"another key's page", browser.CloseRequest{Key: "bound", ID: mine.ID, OwnsWindow: true}},
		{"another key's page, no key", browser.CloseRequest{ID: mine.ID}},
	} {
		wantErr(t, c.what, e.b.Close(e.ctx(), c.req), browser.ErrNotOwned)
	}
	e.mustBeOpen("after refused closes", user[0], user[1], mine.ID)
	e.wantRecords("after refused closes",
		browser.Record{Key: "mine", Page: mine.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "bound", Page: user[1], Kind: browser.RecordBound})
}

// ActSpawnSelector is what the suite's act clicks in a user's page to open a
// tab next to it (a target=_blank link): every world's user pages have it.
const ActSpawnSelector = "#open-tab"

// actSpawn has the driver click ActSpawnSelector in page, bound under owner,
// by an Act keyed act, and returns the tab that click opened once the driver
// reports it attributed to act: the session's own input caused it.
func (e *env) actSpawn(act, owner, page string) string {
	e.t.Helper()
	before := map[string]bool{}
	for _, p := range e.snapshot().Pages {
		before[p.ID] = true
	}
	if _, err := e.b.Act(e.ctx(), browser.ActRequest{Key: act, Owner: owner, Page: page, ClickSelector: ActSpawnSelector}); err != nil {
		e.t.Fatalf("act %s: click %s in %s: %v", act, ActSpawnSelector, page, err)
	}
	var id string
	e.eventually("the tab act "+act+" opened, attributed to it", func() error {
		for _, p := range e.snapshot().Pages {
			if !before[p.ID] && p.WindowID != "" {
				if p.Attributed != act {
					return fmt.Errorf("new page %+v is not attributed to %s", p, act)
				}
				id = p.ID
				return nil
			}
		}
		return errors.New("no new page")
	})
	e.keep(id)
	return id
}

// ownedTabsInUserWindow makes a user's window holding n tabs the driver owns and
// nothing else: the driver binds the user's tab, its own acts there open n tabs
// next to it (spawns of a bound tab are the session's only when its own input
// caused them), the driver adopts them, releases the user's tab and the user
// closes it.
func (e *env) ownedTabsInUserWindow(n int) (string, []string, []string) {
	e.t.Helper()
	win, user := e.userWindow(1)
	noErr(e.t, "bind the user's tab", e.b.Bind(e.ctx(), browser.BindRequest{Key: "user-bound", ID: user[0]}))
	var ids, keys []string
	for i := range n {
		act := fmt.Sprintf("act-%d", i)
		id := e.actSpawn(act, "user-bound", user[0])
		key := fmt.Sprintf("tab-%d", i)
		noErr(e.t, "adopt "+id, e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: key, ID: id, Parent: act}))
		ids, keys = append(ids, id), append(keys, key)
	}
	e.waitWindowPages(win, n+1)
	noErr(e.t, "release", e.b.Release(e.ctx(), browser.ReleaseRequest{Key: "user-bound", ID: user[0]}))
	e.w.UserCloseTab(e.t, user[0])
	e.waitWindowPages(win, n)
	return win, ids, keys
}

// checkBlankOnly: the window holds exactly one fresh about:blank tab, the user's.
func (e *env) checkBlankOnly(win string, closed []string) {
	e.t.Helper()
	ps := e.waitWindowPages(win, 1)
	p := ps[0]
	e.keep(p.ID)
	if slices.Contains(closed, p.ID) || (p.URL != "about:blank" && p.URL != "") || p.OpenerID != "" || p.Attributed != "" {
		e.t.Fatalf("window %s keeps %+v, want a fresh about:blank tab", win, p)
	}
	e.mustBeOpen("the placeholder", p.ID)
	if _, ok := e.snapshot().RecordOf(p.ID); ok {
		e.t.Fatalf("the placeholder %s is recorded: it is the user's", p.ID)
	}
}

// Closing the last tab of a user's window leaves an about:blank tab.
func testLastTab(t *testing.T, e *env) {
	win, ids, keys := e.ownedTabsInUserWindow(1)
	noErr(t, "close the last tab", e.b.Close(e.ctx(), browser.CloseRequest{Key: keys[0], ID: ids[0]}))
	if e.w.Open(t, ids[0]) {
		t.Fatal("the tab is still open")
	}
	e.checkBlankOnly(win, ids)
}

// Concurrent cleanups of every tab of a user's window leave the window with one
// about:blank tab: the last-tab check cannot be raced past.
func testConcurrentCleanup(t *testing.T, e *env) {
	const n = 4
	win, ids, keys := e.ownedTabsInUserWindow(n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.b.Close(e.ctx(), browser.CloseRequest{Key: keys[i], ID: ids[i]})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		noErr(t, "close "+ids[i], err)
		if e.w.Open(t, ids[i]) {
			t.Fatalf("page %s still open", ids[i])
		}
	}
	e.checkBlankOnly(win, ids)
	e.wantRecords("after the cleanup")
}

// Adopt records a page spawned from a recorded page, idempotently; it refuses a
// page it did not see spawned from the parent (ErrNotObserved), a page another
// key has (ErrInUse) and a page that is gone (ErrNotFound). Openers are reported.
func testAdopt(t *testing.T, e *env) {
	_, user := e.userWindow(1)
	parent := e.open(browser.OpenRequest{Key: "parent", NewWindow: true})
	other := e.open(browser.OpenRequest{Key: "other", NewWindow: true})
	popup := e.spawn(parent.ID, true)
	tab := e.spawn(parent.ID, false)

	s := e.snapshot()
	for _, id := range []string{popup, tab} {
		p, ok := s.Page(id)
		if !ok || p.OpenerID != parent.ID {
			t.Fatalf("spawned page %s: %+v, want opener %s", id, p, parent.ID)
		}
	}
	if p, _ := s.Page(popup); !p.Popup {
		t.Errorf("the popup %+v is not reported as a popup", p)
	}
	if p, _ := s.Page(tab); p.WindowID != parent.WindowID || p.Popup {
		t.Errorf("the spawned tab %+v is not a tab in the opener's window %s", p, parent.WindowID)
	}

	wantErr(t, "adopt under the wrong parent", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child", ID: popup, Parent: "other"}), browser.ErrNotObserved)
	wantErr(t, "adopt a user's page", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child", ID: user[0], Parent: "parent"}), browser.ErrNotObserved)
	wantErr(t, "adopt an opened page", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child", ID: other.ID, Parent: "parent"}), browser.ErrInUse)
	noErr(t, "adopt", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child", ID: popup, Parent: "parent"}))
	noErr(t, "adopt again", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child", ID: popup, Parent: "parent"}))
	wantErr(t, "adopt under another key", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "thief", ID: popup, Parent: "parent"}), browser.ErrInUse)
	e.wantRecords("after adopt",
		browser.Record{Key: "parent", Page: parent.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "other", Page: other.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "child", Page: popup, Kind: browser.RecordSpawned, Parent: "parent"})

	// Transitively: a page spawned by the adopted popup is adopted under its key.
	grand := e.spawn(popup, false)
	noErr(t, "adopt the grandchild", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "grandchild", ID: grand, Parent: "child"}))

	// The adopted popup is owned: its key closes it.
	noErr(t, "close the adopted popup", e.b.Close(e.ctx(), browser.CloseRequest{Key: "child", ID: popup, OwnsWindow: true}))
	if e.w.Open(t, popup) {
		t.Fatal("the adopted popup is still open")
	}
	// A spawn the user closed before adoption is gone.
	e.w.UserCloseTab(t, tab)
	e.eventually("the driver sees the tab gone", func() error {
		if _, ok := e.snapshot().Page(tab); ok {
			return errors.New("still listed")
		}
		return nil
	})
	wantErr(t, "adopt a closed page", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "late", ID: tab, Parent: "parent"}), browser.ErrNotFound)
	e.wantRecords("at the end",
		browser.Record{Key: "parent", Page: parent.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "other", Page: other.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "grandchild", Page: grand, Kind: browser.RecordSpawned, Parent: "child"})
}

// Bind records an existing tab, idempotently, refuses a page another key has,
// and a bound tab is never closed; Release drops the record only for its key and
// leaves the page open.
func testBindRelease(t *testing.T, e *env) {
	_, user := e.userWindow(2)
	mine := e.open(browser.OpenRequest{Key: "mine", NewWindow: true})
	noErr(t, "bind", e.b.Bind(e.ctx(), browser.BindRequest{Key: "b1", ID: user[0]}))
	noErr(t, "bind again", e.b.Bind(e.ctx(), browser.BindRequest{Key: "b1", ID: user[0]}))
	wantErr(t, "bind a bound tab under another key", e.b.Bind(e.ctx(), browser.BindRequest{Key: "b2", ID: user[0]}), browser.ErrInUse)
	wantErr(t, "bind another key's page", e.b.Bind(e.ctx(), browser.BindRequest{Key: "b2", ID: mine.ID}), browser.ErrInUse)
	e.wantRecords("after bind",
		browser.Record{Key: "mine", Page: mine.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "b1", Page: user[0], Kind: browser.RecordBound})

	// Release under another key leaves the record alone.
	noErr(t, "release under another key", e.b.Release(e.ctx(), browser.ReleaseRequest{Key: "b2", ID: user[0]}))
	noErr(t, "release another key's opened page", e.b.Release(e.ctx(), browser.ReleaseRequest{Key: "b1", ID: mine.ID}))
	e.wantRecords("after foreign releases",
		browser.Record{Key: "mine", Page: mine.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "b1", Page: user[0], Kind: browser.RecordBound})

	noErr(t, "release", e.b.Release(e.ctx(), browser.ReleaseRequest{Key: "b1", ID: user[0]}))
	noErr(t, "release again", e.b.Release(e.ctx(), browser.ReleaseRequest{Key: "b1", ID: user[0]}))
	// A Keep page released as a deliverable stays open and is no longer owned.
	noErr(t, "release an opened page", e.b.Release(e.ctx(), browser.ReleaseRequest{Key: "mine", ID: mine.ID}))
	e.wantRecords("after release")
	e.mustBeOpen("released pages", user[0], mine.ID)
	wantErr(t, "close a released page", e.b.Close(e.ctx(), browser.CloseRequest{Key: "mine", ID: mine.ID, OwnsWindow: true}), browser.ErrNotOwned)
	// The tab is free again: another key binds it.
	noErr(t, "bind under another key after release", e.b.Bind(e.ctx(), browser.BindRequest{Key: "b2", ID: user[0]}))
	e.wantRecords("after rebind", browser.Record{Key: "b2", Page: user[0], Kind: browser.RecordBound})
}

// A page the user opens from a tab a key only binds (their own click, no Act of
// the key's session) stays the user's: reported with its opener and no
// attribution, never adopted under the bound tab's key, never closed, open
// after the binding is released, and free for anyone to bind.
func testUserSpawnFromBound(t *testing.T, e *env) {
	_, user := e.userWindow(1)
	noErr(t, "bind", e.b.Bind(e.ctx(), browser.BindRequest{Key: "bound", ID: user[0]}))
	tab := e.spawn(user[0], false)
	popup := e.spawn(user[0], true)
	s := e.snapshot()
	for _, id := range []string{tab, popup} {
		p, ok := s.Page(id)
		if !ok || p.OpenerID != user[0] || p.Attributed != "" {
			t.Fatalf("the user's spawn %s: %+v, want opener %s and no attribution", id, p, user[0])
		}
		wantErr(t, "adopt the user's spawn from a bound tab", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child-" + id, ID: id, Parent: "bound"}), browser.ErrNotObserved)
		wantErr(t, "close the user's spawn", e.b.Close(e.ctx(), browser.CloseRequest{Key: "child-" + id, ID: id, OwnsWindow: true}), browser.ErrNotOwned)
	}
	e.wantRecords("after the refused adoptions", browser.Record{Key: "bound", Page: user[0], Kind: browser.RecordBound})
	noErr(t, "release the bound tab", e.b.Release(e.ctx(), browser.ReleaseRequest{Key: "bound", ID: user[0]}))
	e.mustBeOpen("the user's tabs after the binding ended", user[0], tab, popup)
	noErr(t, "bind the user's spawn", e.b.Bind(e.ctx(), browser.BindRequest{Key: "other", ID: tab}))
	e.wantRecords("after binding it", browser.Record{Key: "other", Page: tab, Kind: browser.RecordBound})

	// The session's own click in the tab it binds is its: adopted under the act.
	noErr(t, "bind again", e.b.Bind(e.ctx(), browser.BindRequest{Key: "bound", ID: user[0]}))
	mine := e.actSpawn("act-bound", "bound", user[0])
	wantErr(t, "adopt the act's spawn under the binding", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child", ID: mine, Parent: "bound"}), browser.ErrNotObserved)
	noErr(t, "adopt the act's spawn", e.b.Adopt(e.ctx(), browser.AdoptRequest{Key: "child", ID: mine, Parent: "act-bound"}))
	noErr(t, "close the act's spawn", e.b.Close(e.ctx(), browser.CloseRequest{Key: "child", ID: mine}))
	e.mustBeOpen("the user's tabs after the session's spawn closed", user[0], tab, popup)
}

// Act refuses (ErrNotOwned) pages not recorded under its owner: the user's tabs
// and another key's pages; it does not refuse the owner.
func testActNotOwned(t *testing.T, e *env) {
	_, user := e.userWindow(1)
	mine := e.open(browser.OpenRequest{Key: "mine", NewWindow: true})
	other := e.open(browser.OpenRequest{Key: "other", NewWindow: true})
	observe := browser.Step{Kind: browser.StepObserve}
	for _, c := range []struct {
		what string
		req  browser.ActRequest
	}{
		{"a user's tab", browser.ActRequest{Key: "act", Owner: "mine", Page: user[0], Step: observe}},
		{"a user's tab, no owner", browser.ActRequest{Key: "act", Page: user[0], Step: observe}},
		{"another key's page", browser.ActRequest{Key: "act", Owner: "mine", Page: other.ID, Step: observe}},
	} {
		_, err := e.b.Act(e.ctx(), c.req)
		wantErr(t, "act on "+c.what, err, browser.ErrNotOwned)
	}
	// The owner is not refused (which steps a driver runs is not the seam's
	// ownership promise; the act tests of each driver prove them).
	if _, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "mine", Page: mine.ID, Step: observe}); errors.Is(err, browser.ErrNotOwned) || errors.Is(err, browser.ErrNotFound) {
		t.Fatalf("act on an owned page: %v", err)
	}
}

// Per page, the driver reports Created before any Updated and nothing after
// Removed, within one epoch.
func testEventOrder(t *testing.T, e *env) {
	_, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", NewWindow: true})
	child := e.spawn(p.ID, true)
	noErr(t, "close", e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: p.ID, OwnsWindow: true}))
	e.w.UserCloseTab(t, child)
	e.w.UserCloseTab(t, user[0])
	ids := []string{user[0], p.ID, child}
	e.eventually("created and removed events of every page", func() error {
		for _, id := range ids {
			var created, removed bool
			for _, ev := range e.log() {
				if ev.Page.ID == id {
					created = created || ev.Type == browser.PageCreated
					removed = removed || ev.Type == browser.PageRemoved
				}
			}
			if !created || !removed {
				return fmt.Errorf("page %s: created %v removed %v", id, created, removed)
			}
		}
		return nil
	})
	for _, id := range ids {
		state := "" // "", created, removed
		for _, ev := range e.log() {
			if ev.Page.ID != id {
				continue
			}
			switch ev.Type {
			case browser.PageCreated:
				if state == "removed" {
					t.Fatalf("page %s: Created after Removed", id)
				}
				state = "created"
			case browser.PageUpdated:
				if state != "created" {
					t.Fatalf("page %s: Updated while %q", id, state)
				}
			case browser.PageRemoved:
				if state != "created" {
					t.Fatalf("page %s: Removed while %q", id, state)
				}
				state = "removed"
			}
		}
	}
}

// A disconnect reports Disconnected and no page gone; the reconnect reports
// Connected in a new epoch, and every page and record is still there.
func testReconnect(t *testing.T, e *env) {
	if capsOf(e.w).NoLinkCut {
		t.Log("the world cannot cut this driver's link (Caps.NoLinkCut)")
		return
	}
	_, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", NewWindow: true})
	before := e.snapshot()
	n := len(e.log())
	e.w.Disconnect(t)
	e.eventually("the driver notices", func() error {
		if e.b.Connected() {
			return errors.New("still connected")
		}
		return nil
	})
	if _, err := e.b.Open(e.ctx(), browser.OpenRequest{Key: "while-down", URL: e.w.URL(), NewWindow: true}); !errors.Is(err, browser.ErrNotConnected) {
		t.Errorf("open while disconnected: %v, want ErrNotConnected", err)
	}
	if err := e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: p.ID, OwnsWindow: true}); !errors.Is(err, browser.ErrNotConnected) {
		t.Errorf("close while disconnected: %v, want ErrNotConnected", err)
	}
	e.w.Reconnect(t)
	e.eventually("the driver reconnects", func() error {
		for _, ev := range e.log()[n:] {
			if ev.Type == browser.Connected {
				return nil
			}
		}
		return errors.New("no Connected event")
	})
	after := e.snapshot()
	if after.Epoch <= before.Epoch {
		t.Errorf("epoch %d after reconnect, %d before", after.Epoch, before.Epoch)
	}
	for _, ev := range e.log()[n:] {
		if ev.Type == browser.PageRemoved && (ev.Page.ID == p.ID || ev.Page.ID == user[0]) {
			t.Fatalf("the reconnect declared page %s gone", ev.Page.ID)
		}
	}
	for _, id := range []string{p.ID, user[0]} {
		if _, ok := after.Page(id); !ok {
			t.Fatalf("page %s missing after reconnect", id)
		}
	}
	e.mustBeOpen("after reconnect", p.ID, user[0])
	e.wantRecords("after reconnect", browser.Record{Key: "k", Page: p.ID, Kind: browser.RecordOpened})
	// The ledger still works: the page is closed under its key.
	noErr(t, "close after reconnect", e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: p.ID, OwnsWindow: true}))
}
