package browsertest

import (
	"errors"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

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
