package cdp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// The driver under test is b. The user's hand is a second driver on its own
// connection: the windows it opens are the user's (b did not open them), and it
// clicks only in pages recorded under its own keys. What a user would check is
// Chromium's own page list (/json/list), not any driver's model.

// userTab has the user's hand open a window at path under key (in the hand's
// ledger) and waits until the driver under test, recorded by r, reports it.
func userTab(t *testing.T, r *recorder, hand *Browser, hr *recorder, key, path, title string) browser.Page {
	t.Helper()
	p := openWindow(t, hand, hr, key, path, title)
	seen(t, r, p.ID)
	return p
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

func wantRecords(t *testing.T, b *Browser, what string, want ...browser.Record) {
	t.Helper()
	slices.SortFunc(want, func(x, y browser.Record) int {
		switch {
		case x.Page < y.Page:
			return -1
		case x.Page > y.Page:
			return 1
		}
		return 0
	})
	s, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Records, want) {
		t.Fatalf("%s: records %+v, want %+v", what, s.Records, want)
	}
}

// noopText is the text of /quiet's button: "Do nothing" until it is clicked.
func noopText(t *testing.T, hand *Browser, id string) any {
	t.Helper()
	return evaluate(t, hand, id, "document.getElementById('noop').textContent")
}

func TestCloseRefusesPagesNotOwned(t *testing.T) {
	b, r := newDriver(t, Options{})
	hand, hr := newDriver(t, Options{})
	ctx := tctx(t)
	user := userTab(t, r, hand, hr, "user", "/quiet", fixture.TitleQuiet)

	// A user's tab is not recorded: no key closes it, not even the key the hand
	// keeps it under (that is the hand's ledger, not b's).
	for _, req := range []browser.CloseRequest{
		{Key: "any", ID: user.ID},
		{Key: "", ID: user.ID},
		{Key: "any", ID: user.ID, OwnsWindow: true},
		{Key: "user", ID: user.ID, OwnsWindow: true},
	} {
		wantErr(t, "close a user's tab", b.Close(ctx, req), browser.ErrNotOwned)
	}
	mustBeOpen(t, "after closes of the user's tab", user.ID)

	// A page b opened closes only under the key it was opened under.
	mine := openWindow(t, b, r, "owner", "/quiet", fixture.TitleQuiet)
	for _, k := range []string{"intruder", "", "user"} {
		wantErr(t, "close under "+k, b.Close(ctx, browser.CloseRequest{Key: k, ID: mine.ID, OwnsWindow: true}), browser.ErrNotOwned)
	}
	mustBeOpen(t, "after closes under other keys", mine.ID)

	// A bound tab is used, never closed, even under its binding key.
	noErr(t, "bind", b.Bind(ctx, browser.BindRequest{Key: "binder", ID: user.ID}))
	wantErr(t, "close a bound tab", b.Close(ctx, browser.CloseRequest{Key: "binder", ID: user.ID}), browser.ErrNotOwned)
	wantErr(t, "close a bound tab's window", b.Close(ctx, browser.CloseRequest{Key: "binder", ID: user.ID, OwnsWindow: true}), browser.ErrNotOwned)
	mustBeOpen(t, "after closes of the bound tab", user.ID)
	wantRecords(t, b, "refused closes",
		browser.Record{Key: "owner", Page: mine.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "binder", Page: user.ID, Kind: browser.RecordBound})
	noErr(t, "release", b.Release(ctx, browser.ReleaseRequest{Key: "binder", ID: user.ID}))

	// The owner closes its page; the user's stays.
	noErr(t, "close under the owner", b.Close(ctx, browser.CloseRequest{Key: "owner", ID: mine.ID, OwnsWindow: true}))
	if isOpen(t, mine.ID) {
		t.Errorf("the owner's close left %s in Chromium's list", mine.ID)
	}
	mustBeOpen(t, "after the owner's close", user.ID)
	wantRecords(t, b, "after close")
}

func TestAdoptRequiresObservedSpawn(t *testing.T) {
	b, r := newDriver(t, Options{})
	hand, hr := newDriver(t, Options{})
	ctx := tctx(t)

	// A user's tab: nothing b saw makes it a spawn of anything.
	user := userTab(t, r, hand, hr, "user", "/blank-link", fixture.TitleBlankLink)
	for _, parent := range []string{"made-up", "user"} {
		wantErr(t, "adopt a user's tab from "+parent,
			b.Adopt(ctx, browser.AdoptRequest{Key: "adopter", ID: user.ID, Parent: parent}), browser.ErrNotObserved)
	}
	// Nor a tab the user spawned by clicking in their own page.
	start := time.Now()
	noErr(t, "the user clicks", actErr(hand, ctx, browser.ActRequest{Key: "hand-act", Owner: "user", Page: user.ID, ClickSelector: "#open-landing"}))
	e := r.wait(t, 5*time.Second, "the user's spawn", func(e browser.Event) bool { return created(user.ID)(e) && e.Time.After(start) })
	userSpawn := e.Page.ID
	t.Cleanup(func() { userCloses(t, userSpawn) })
	for _, parent := range []string{"user", "hand-act", "made-up"} {
		wantErr(t, "adopt the user's spawn from "+parent,
			b.Adopt(ctx, browser.AdoptRequest{Key: "adopter", ID: userSpawn, Parent: parent}), browser.ErrNotObserved)
	}
	wantRecords(t, b, "refused adoptions")
	if _, ok := b.ledger.PageOf("adopter"); ok {
		t.Error("a refused adoption left a record under its key")
	}

	// A real spawn (target=_blank) from a page b opened.
	owner := openWindow(t, b, r, "owner", "/blank-link", fixture.TitleBlankLink)
	act(t, b, "act-link", "owner", owner.ID, "#open-landing")
	e = r.wait(t, 5*time.Second, "landing", created(owner.ID))
	s1 := e.Page.ID
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "s1", ID: s1}) })
	for _, parent := range []string{"wrong", "act-link", "user"} {
		wantErr(t, "adopt from "+parent, b.Adopt(ctx, browser.AdoptRequest{Key: "s1", ID: s1, Parent: parent}), browser.ErrNotObserved)
	}
	wantRecords(t, b, "wrong parents", browser.Record{Key: "owner", Page: owner.ID, Kind: browser.RecordOpened})
	// The hand did not see it spawn from a page of its own either.
	wantErr(t, "the hand adopts", hand.Adopt(ctx, browser.AdoptRequest{Key: "hand-s1", ID: s1, Parent: "owner"}), browser.ErrNotObserved)

	noErr(t, "adopt from the owner", b.Adopt(ctx, browser.AdoptRequest{Key: "s1", ID: s1, Parent: "owner"}))
	noErr(t, "adopt again", b.Adopt(ctx, browser.AdoptRequest{Key: "s1", ID: s1, Parent: "owner"}))
	wantErr(t, "a second key adopts", b.Adopt(ctx, browser.AdoptRequest{Key: "s1-other", ID: s1, Parent: "owner"}), browser.ErrInUse)
	wantRecords(t, b, "adopted once",
		browser.Record{Key: "owner", Page: owner.ID, Kind: browser.RecordOpened},
		browser.Record{Key: "s1", Page: s1, Kind: browser.RecordSpawned, Parent: "owner"})
	// The spawn is its adopter's: the parent's key does not close it.
	wantErr(t, "the parent closes the spawn", b.Close(ctx, browser.CloseRequest{Key: "owner", ID: s1}), browser.ErrNotOwned)
	mustBeOpen(t, "after the parent's close", s1)

	// A spawn of a spawn (window.open popups): adoptable from the first spawn's key.
	oauth := openWindow(t, b, r, "oauth", "/oauth", fixture.TitleOAuth)
	act(t, b, "act-signin", "oauth", oauth.ID, "#signin")
	e = r.wait(t, 5*time.Second, "authorize", created(oauth.ID))
	auth := e.Page.ID
	noErr(t, "adopt authorize", b.Adopt(ctx, browser.AdoptRequest{Key: "auth", ID: auth, Parent: "oauth"}))
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "auth", ID: auth, OwnsWindow: true})
	})
	waitTitle(t, b, auth, fixture.TitleAuthorize)
	act(t, b, "act-consent", "auth", auth, "#consent")
	e = r.wait(t, 5*time.Second, "consent", created(auth))
	consent := e.Page.ID
	t.Cleanup(func() { userCloses(t, consent) })
	wantErr(t, "adopt consent from the grandparent", b.Adopt(ctx, browser.AdoptRequest{Key: "consent", ID: consent, Parent: "oauth"}), browser.ErrNotObserved)
	noErr(t, "adopt consent from authorize", b.Adopt(ctx, browser.AdoptRequest{Key: "consent", ID: consent, Parent: "auth"}))
	s, err := b.Snapshot(ctx)
	noErr(t, "snapshot", err)
	if rec, ok := s.RecordOf(consent); !ok || rec != (browser.Record{Key: "consent", Page: consent, Kind: browser.RecordSpawned, Parent: "auth"}) {
		t.Errorf("record of consent: %+v %v", rec, ok)
	}
	// The adopted page is driven and closed under its own key only.
	waitTitle(t, b, consent, fixture.TitleConsent)
	wantErr(t, "the parent clicks in consent",
		actErr(b, ctx, browser.ActRequest{Key: "a", Owner: "auth", Page: consent, ClickSelector: "#allow"}), browser.ErrNotOwned)
	time.Sleep(200 * time.Millisecond)
	if p := chromiumPages(t)[consent]; p.Title != fixture.TitleConsent {
		t.Errorf("after a refused click consent is titled %q", p.Title)
	}
	act(t, b, "a", "consent", consent, "#allow")
	waitTitle(t, b, consent, "Consent given")
	noErr(t, "close consent", b.Close(ctx, browser.CloseRequest{Key: "consent", ID: consent, OwnsWindow: true}))
	waitGone(t, "closed consent", consent)
	mustBeOpen(t, "after consent closed", auth, oauth.ID, s1, owner.ID, user.ID, userSpawn)
}

// TestAdoptAttributedSpawn: in a tab the session binds, pages its own clicks
// open (window.open, noopener links, noopener scripts) are attributed to the
// act and adopted under it, never under the binding; a page the user opens
// there by their own click (real input on their own connection, no act of the
// session) stays theirs: not attributed, not adoptable, not closable, and open
// after the binding is released.
func TestAdoptAttributedSpawn(t *testing.T) {
	b, r := newDriver(t, Options{})
	hand, hr := newDriver(t, Options{})
	ctx := tctx(t)
	user := openWindow(t, hand, hr, "user", "/window-open", fixture.TitleOpen)
	noErr(t, "the hand lets go", hand.Release(ctx, browser.ReleaseRequest{Key: "user", ID: user.ID}))
	t.Cleanup(func() { userCloses(t, user.ID) })
	seen(t, r, user.ID)
	noErr(t, "bind", b.Bind(ctx, browser.BindRequest{Key: "bound", ID: user.ID}))

	for i, text := range []string{"Open tab", "Open noopener", "Open noopener script"} {
		act := fmt.Sprintf("act-%d", i)
		start := time.Now()
		if _, err := b.Act(ctx, browser.ActRequest{Key: act, Owner: "bound", Page: user.ID, Step: click(browser.Target{Text: text})}); err != nil {
			t.Fatalf("the session clicks %q in its bound tab: %v", text, err)
		}
		e := r.wait(t, 10*time.Second, "the page "+text+" opened", func(e browser.Event) bool {
			return e.Type == browser.PageCreated && e.Time.After(start) && e.Page.ID != user.ID
		})
		if e.Page.Attributed != act {
			t.Fatalf("%s: the session's own click in its bound tab opened %+v, not attributed to %s", text, e.Page, act)
		}
		key := "spawn-" + act
		wantErr(t, "adopt under the binding", b.Adopt(ctx, browser.AdoptRequest{Key: key, ID: e.Page.ID, Parent: "bound"}), browser.ErrNotObserved)
		noErr(t, "adopt under the act", b.Adopt(ctx, browser.AdoptRequest{Key: key, ID: e.Page.ID, Parent: act}))
		noErr(t, "close the act's spawn", b.Close(ctx, browser.CloseRequest{Key: key, ID: e.Page.ID}))
		waitGone(t, "the act's spawn", e.Page.ID)
	}

	// The user clicks the same links in the bound tab, with real input on their
	// own connection: the pages are theirs.
	var users []string
	for i, sel := range []string{"#open-tab", "#open-noopener", "#open-noopener-script"} {
		key := fmt.Sprintf("hand-%d", i)
		noErr(t, "the hand takes the tab", hand.Bind(ctx, browser.BindRequest{Key: key, ID: user.ID}))
		start := time.Now()
		if _, err := hand.Act(ctx, browser.ActRequest{Key: key, Owner: key, Page: user.ID, ClickSelector: sel}); err != nil {
			t.Fatalf("the user clicks %s: %v", sel, err)
		}
		noErr(t, "the hand lets go", hand.Release(ctx, browser.ReleaseRequest{Key: key, ID: user.ID}))
		e := r.wait(t, 10*time.Second, "the user's page "+sel, func(e browser.Event) bool {
			return e.Type == browser.PageCreated && e.Time.After(start) && e.Page.ID != user.ID
		})
		id := e.Page.ID
		users = append(users, id)
		t.Cleanup(func() { userCloses(t, id) })
		if e.Page.Attributed != "" {
			t.Errorf("the user's click %s opened %+v, attributed to %q", sel, e.Page, e.Page.Attributed)
		}
		wantErr(t, "adopt the user's page under the binding", b.Adopt(ctx, browser.AdoptRequest{Key: "k-" + id, ID: id, Parent: "bound"}), browser.ErrNotObserved)
		wantErr(t, "close the user's page", b.Close(ctx, browser.CloseRequest{Key: "k-" + id, ID: id, OwnsWindow: true}), browser.ErrNotOwned)
	}
	wantRecords(t, b, "after the user's clicks", browser.Record{Key: "bound", Page: user.ID, Kind: browser.RecordBound})
	noErr(t, "release", b.Release(ctx, browser.ReleaseRequest{Key: "bound", ID: user.ID}))
	mustBeOpen(t, "the user's pages after the binding ended", append(users, user.ID)...)
}

func TestBindIsExclusive(t *testing.T) {
	b, r := newDriver(t, Options{})
	hand, hr := newDriver(t, Options{})
	ctx := tctx(t)
	user := userTab(t, r, hand, hr, "user", "/quiet", fixture.TitleQuiet)

	noErr(t, "bind", b.Bind(ctx, browser.BindRequest{Key: "bind-a", ID: user.ID}))
	noErr(t, "bind again", b.Bind(ctx, browser.BindRequest{Key: "bind-a", ID: user.ID}))
	wantErr(t, "bind by another key", b.Bind(ctx, browser.BindRequest{Key: "bind-b", ID: user.ID}), browser.ErrInUse)
	for _, k := range []string{"bind-b", "bind-a"} {
		wantErr(t, "adopt a bound tab under "+k, b.Adopt(ctx, browser.AdoptRequest{Key: k, ID: user.ID, Parent: "bind-a"}), browser.ErrInUse)
	}
	wantRecords(t, b, "bound once", browser.Record{Key: "bind-a", Page: user.ID, Kind: browser.RecordBound})
	wantErr(t, "bind a missing tab", b.Bind(ctx, browser.BindRequest{Key: "bind-c", ID: "NOSUCH"}), browser.ErrNotFound)

	// Bound is for use: the binder clicks in it, another key does not.
	wantErr(t, "another key clicks", actErr(b, ctx, browser.ActRequest{Key: "k", Owner: "bind-b", Page: user.ID, ClickSelector: "#noop"}), browser.ErrNotOwned)
	if v := noopText(t, hand, user.ID); v != "Do nothing" {
		t.Fatalf("after a refused click the button says %v", v)
	}
	act(t, b, "k", "bind-a", user.ID, "#noop")
	if v := noopText(t, hand, user.ID); v != "clicked" {
		t.Errorf("after the binder's click the button says %v", v)
	}

	// Release by another key leaves the binding; the binder's frees the tab.
	noErr(t, "release by another key", b.Release(ctx, browser.ReleaseRequest{Key: "bind-b", ID: user.ID}))
	wantErr(t, "bind after a foreign release", b.Bind(ctx, browser.BindRequest{Key: "bind-b", ID: user.ID}), browser.ErrInUse)
	noErr(t, "release", b.Release(ctx, browser.ReleaseRequest{Key: "bind-a", ID: user.ID}))
	noErr(t, "release again", b.Release(ctx, browser.ReleaseRequest{Key: "bind-a", ID: user.ID}))
	wantErr(t, "the old binder clicks", actErr(b, ctx, browser.ActRequest{Key: "k", Owner: "bind-a", Page: user.ID, ClickSelector: "#noop"}), browser.ErrNotOwned)
	noErr(t, "bind after release", b.Bind(ctx, browser.BindRequest{Key: "bind-b", ID: user.ID}))
	noErr(t, "release", b.Release(ctx, browser.ReleaseRequest{Key: "bind-b", ID: user.ID}))
	mustBeOpen(t, "the bound tab", user.ID)

	// A page b opened is not bound by another key until its owner releases it;
	// released, it stays open and is no longer the owner's to close.
	mine := openWindow(t, b, r, "owner", "/quiet", fixture.TitleQuiet)
	wantErr(t, "bind an owned page", b.Bind(ctx, browser.BindRequest{Key: "bind-c", ID: mine.ID}), browser.ErrInUse)
	wantRecords(t, b, "owned", browser.Record{Key: "owner", Page: mine.ID, Kind: browser.RecordOpened})
	noErr(t, "release the owned page", b.Release(ctx, browser.ReleaseRequest{Key: "owner", ID: mine.ID}))
	t.Cleanup(func() { userCloses(t, mine.ID) })
	mustBeOpen(t, "the released page", mine.ID)
	wantErr(t, "close a released page", b.Close(ctx, browser.CloseRequest{Key: "owner", ID: mine.ID, OwnsWindow: true}), browser.ErrNotOwned)
	mustBeOpen(t, "the released page after a close", mine.ID)
	noErr(t, "bind the released page", b.Bind(ctx, browser.BindRequest{Key: "bind-c", ID: mine.ID}))
	wantRecords(t, b, "rebound", browser.Record{Key: "bind-c", Page: mine.ID, Kind: browser.RecordBound})
	noErr(t, "release", b.Release(ctx, browser.ReleaseRequest{Key: "bind-c", ID: mine.ID}))
}

func TestActRefusedWithoutRecord(t *testing.T) {
	b, r := newDriver(t, Options{})
	hand, hr := newDriver(t, Options{})
	ctx := tctx(t)
	user := userTab(t, r, hand, hr, "user", "/quiet", fixture.TitleQuiet)
	if err := b.Bind(ctx, browser.BindRequest{Key: "", ID: user.ID}); err == nil {
		t.Error("a binding without a key was recorded")
	}
	for _, owner := range []string{"", "k", "user"} {
		wantErr(t, "click in a user's tab as "+owner,
			actErr(b, ctx, browser.ActRequest{Key: "k", Owner: owner, Page: user.ID, ClickSelector: "#noop"}), browser.ErrNotOwned)
	}
	mine := openWindow(t, b, r, "owner", "/quiet", fixture.TitleQuiet)
	for _, owner := range []string{"", "intruder"} {
		wantErr(t, "click in an owned page as "+owner,
			actErr(b, ctx, browser.ActRequest{Key: "k", Owner: owner, Page: mine.ID, ClickSelector: "#noop"}), browser.ErrNotOwned)
	}
	time.Sleep(200 * time.Millisecond)
	for _, id := range []string{user.ID, mine.ID} {
		if v := noopText(t, hand, id); v != "Do nothing" {
			t.Errorf("page %s: after refused clicks the button says %v", id, v)
		}
	}
	act(t, b, "k", "owner", mine.ID, "#noop")
	if v := noopText(t, hand, mine.ID); v != "clicked" {
		t.Errorf("after the owner's click the button says %v", v)
	}
	if v := noopText(t, hand, user.ID); v != "Do nothing" {
		t.Errorf("the user's tab was clicked: %v", v)
	}
	wantRecords(t, b, "refused acts", browser.Record{Key: "owner", Page: mine.ID, Kind: browser.RecordOpened})
}

func TestLedgerSurvivesRestart(t *testing.T) {
	path := LedgerFile(filepath.Join(t.TempDir(), "state"), "work")
	a, ar := newDriver(t, Options{LedgerPath: path})
	ctx := tctx(t)
	kept, err := a.Open(ctx, browser.OpenRequest{Key: "keep", URL: site.Path("/blank-link"), NewWindow: true})
	noErr(t, "open", err)
	t.Cleanup(func() { userCloses(t, kept.ID) })
	waitTitle(t, a, kept.ID, fixture.TitleBlankLink)
	act(t, a, "act-keep", "keep", kept.ID, "#open-landing")
	e := ar.wait(t, 5*time.Second, "spawn", created(kept.ID))
	spawn := e.Page.ID
	t.Cleanup(func() { userCloses(t, spawn) })
	adopt(t, a, "keep-spawn", spawn, "keep")
	want := []browser.Record{
		{Key: "keep", Page: kept.ID, Kind: browser.RecordOpened},
		{Key: "keep-spawn", Page: spawn, Kind: browser.RecordSpawned, Parent: "keep"},
	}
	a.Shutdown()
	mustBeOpen(t, "after the driver's shutdown", kept.ID, spawn)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("ledger file %s: %v %v", path, st, err)
	}

	b, br := newDriver(t, Options{LedgerPath: path})
	hand, hr := newDriver(t, Options{})
	wantRecords(t, b, "after the restart", want...)
	// The restarted driver finds the page its key opened.
	again, err := b.Open(ctx, browser.OpenRequest{Key: "keep", URL: site.Path("/blank-link"), NewWindow: true})
	if err != nil || again.ID != kept.ID {
		t.Fatalf("open under the same key after the restart: %+v %v, want %s", again, err, kept.ID)
	}
	// Other keys, and keys for other pages, are refused.
	for _, k := range []string{"other", "keep-spawn", ""} {
		wantErr(t, "close under "+k, b.Close(ctx, browser.CloseRequest{Key: k, ID: kept.ID, OwnsWindow: true}), browser.ErrNotOwned)
	}
	wantErr(t, "close the spawn under its parent", b.Close(ctx, browser.CloseRequest{Key: "keep", ID: spawn}), browser.ErrNotOwned)
	user := userTab(t, br, hand, hr, "user", "/quiet", fixture.TitleQuiet)
	wantErr(t, "close a user's tab", b.Close(ctx, browser.CloseRequest{Key: "keep", ID: user.ID, OwnsWindow: true}), browser.ErrNotOwned)
	mustBeOpen(t, "after refused closes", kept.ID, spawn, user.ID)
	wantRecords(t, b, "after refused closes", want...)

	// The keys close what they own.
	noErr(t, "close the spawn", b.Close(ctx, browser.CloseRequest{Key: "keep-spawn", ID: spawn}))
	noErr(t, "close the page", b.Close(ctx, browser.CloseRequest{Key: "keep", ID: kept.ID, OwnsWindow: true}))
	waitGone(t, "closed spawn", spawn)
	waitGone(t, "closed page", kept.ID)
	mustBeOpen(t, "the user's tab", user.ID)
	wantRecords(t, b, "after closes")
	l, err := ledger.New(path)
	noErr(t, "reload the ledger file", err)
	if got := l.Records(); len(got) != 0 {
		t.Errorf("the file keeps %+v", got)
	}

	// A ledger file that is not one stops the driver from starting.
	noErr(t, "corrupt the file", os.WriteFile(path, []byte("{not a ledger"), 0o600))
	if c, err := New(ctx, chrome.WebSocketURL, Options{LedgerPath: path}); err == nil {
		c.Shutdown()
		t.Error("New with a corrupt ledger file succeeded")
	}
}
