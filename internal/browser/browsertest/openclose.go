package browsertest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

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
