package cdp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

func TestSnapshotSeesPages(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "quiet", "/quiet", fixture.TitleQuiet)
	s, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Epoch != 1 || !strings.Contains(s.Version, "Chrom") {
		t.Errorf("epoch %d version %q", s.Epoch, s.Version)
	}
	got, ok := s.Page(p.ID)
	if !ok {
		t.Fatalf("snapshot lacks %s: %+v", p.ID, s.Pages)
	}
	if got.URL != site.Path("/quiet") || got.Title != fixture.TitleQuiet || got.WindowID == "" || got.Popup || got.OpenerID != "" {
		t.Errorf("page %+v", got)
	}
	found := false
	for _, w := range s.Windows {
		found = found || w.ID == got.WindowID
	}
	if !found {
		t.Errorf("window %s not in %+v", got.WindowID, s.Windows)
	}
	if rec, ok := s.RecordOf(p.ID); !ok || rec != (browser.Record{Key: "quiet", Page: p.ID, Kind: browser.RecordOpened}) {
		t.Errorf("record of the opened page: %+v %v", rec, ok)
	}
	for _, pg := range s.Pages {
		if strings.HasPrefix(pg.URL, "devtools://") || strings.HasPrefix(pg.URL, "chrome-extension://") {
			t.Errorf("snapshot has %s", pg.URL)
		}
	}
	if !b.Connected() {
		t.Error("not connected")
	}
}

func TestOpenBackgroundTabAndNewWindow(t *testing.T) {
	b, _ := newDriver(t, Options{})
	ctx := tctx(t)

	// A new window, idempotent by key.
	start := time.Now()
	w, err := b.Open(ctx, browser.OpenRequest{Key: "win-1", URL: site.Path("/landing"), NewWindow: true})
	t.Logf("Open new window: reply in %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "win-1", ID: w.ID, OwnsWindow: true})
	})
	if w.WindowID == "" || w.Popup {
		t.Errorf("new window page %+v", w)
	}
	again, err := b.Open(ctx, browser.OpenRequest{Key: "win-1", URL: site.Path("/landing"), NewWindow: true})
	if err != nil || again.ID != w.ID {
		t.Fatalf("second open with the same key: %+v %v (want %s)", again, err, w.ID)
	}
	waitTitle(t, b, w.ID, fixture.TitleLanding)

	// A background tab: it lands in the browser's last active window; the tab
	// that was active there stays active (visible) and the new one is hidden.
	start = time.Now()
	tab, err := b.Open(ctx, browser.OpenRequest{Key: "tab-1", URL: site.Path("/quiet")})
	t.Logf("Open background tab: reply in %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "tab-1", ID: tab.ID}) })
	if tab.WindowID == "" || tab.WindowID == w.WindowID {
		t.Errorf("background tab in window %q (new window is %s)", tab.WindowID, w.WindowID)
	}
	waitTitle(t, b, tab.ID, fixture.TitleQuiet)
	if v := evaluate(t, b, tab.ID, "document.visibilityState"); v != "hidden" {
		t.Errorf("background tab visibilityState = %v, want hidden", v)
	}
	others := windowPages(t, b, tab.WindowID)
	if len(others) < 2 {
		t.Fatalf("window %s has %d pages", tab.WindowID, len(others))
	}
	visible := 0
	for _, p := range others {
		if p.ID != tab.ID && evaluate(t, b, p.ID, "document.visibilityState") == "visible" {
			visible++
		}
	}
	if visible != 1 {
		t.Errorf("%d other tabs of the window are visible, want the 1 that was active", visible)
	}
	// The new window does not take the browser's "last active" place either: a
	// background tab opened after it still lands in the old window.
	tab2, err := b.Open(ctx, browser.OpenRequest{Key: "tab-2", URL: "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "tab-2", ID: tab2.ID}) })
	if tab2.WindowID != tab.WindowID {
		t.Errorf("second background tab in %s, first in %s", tab2.WindowID, tab.WindowID)
	}

	// Opening into a window that does not exist fails, and records nothing.
	if _, err := b.Open(ctx, browser.OpenRequest{Key: "tab-3", URL: "about:blank", WindowID: "424242"}); !errors.Is(err, browser.ErrNotFound) {
		t.Errorf("open into a missing window: %v, want ErrNotFound", err)
	}
	if _, ok := b.ledger.PageOf("tab-3"); ok {
		t.Error("a failed open left a record")
	}
	// After the page is closed, the key opens a new one.
	if err := b.Close(ctx, browser.CloseRequest{Key: "win-1", ID: w.ID, OwnsWindow: true}); err != nil {
		t.Fatal(err)
	}
	w2, err := b.Open(ctx, browser.OpenRequest{Key: "win-1", URL: site.Path("/landing"), NewWindow: true})
	if err != nil || w2.ID == w.ID {
		t.Fatalf("reopen after close: %+v %v", w2, err)
	}
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "win-1", ID: w2.ID, OwnsWindow: true})
	})
}

// act clicks in page, which is recorded under owner, as the operation key, and
// returns when the click returns, with the time it was sent.
func act(t *testing.T, b *Browser, key, owner, page, sel string) time.Time {
	t.Helper()
	start := time.Now()
	if _, err := b.Act(tctx(t), browser.ActRequest{Key: key, Owner: owner, Page: page, ClickSelector: sel}); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
	return start
}

func created(opener string) func(browser.Event) bool {
	return func(e browser.Event) bool { return e.Type == browser.PageCreated && e.Page.OpenerID == opener }
}

// adopt records a spawned page under key, attributed to parent, or fails.
func adopt(t *testing.T, b *Browser, key, id, parent string) {
	t.Helper()
	if err := b.Adopt(tctx(t), browser.AdoptRequest{Key: key, ID: id, Parent: parent}); err != nil {
		t.Fatalf("adopt %s under %s from %s: %v", id, key, parent, err)
	}
}

func TestSpawnComposePopup(t *testing.T) {
	b, r := newDriver(t, Options{})
	contacts := openWindow(t, b, r, "contacts", "/contacts", fixture.TitleContacts)
	for i := range 3 {
		start := act(t, b, "act-compose", "contacts", contacts.ID, "#contact-"+string(rune('0'+i)))
		e := r.wait(t, 5*time.Second, "compose created", func(e browser.Event) bool {
			return created(contacts.ID)(e) && e.Time.After(start)
		})
		t.Logf("click → PageCreated (popup): %v", e.Time.Sub(start))
		id := e.Page.ID
		key := "compose-" + string(rune('0'+i))
		adopt(t, b, key, id, "contacts")
		t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: key, ID: id, OwnsWindow: true}) })
		if e.Page.Attributed != "" {
			t.Errorf("a page with an opener was attributed: %+v", e.Page)
		}
		u := r.wait(t, 5*time.Second, "compose window known", func(e browser.Event) bool {
			return e.Page.ID == id && e.Type == browser.PageUpdated && e.Page.WindowID != ""
		})
		if !u.Page.Popup || u.Page.WindowID == contacts.WindowID {
			t.Errorf("compose is not a popup in its own window: %+v (contacts window %s)", u.Page, contacts.WindowID)
		}
		u = waitTitle(t, b, id, fixture.TitleCompose)
		t.Logf("click → compose url and title known: %v", u.Time.Sub(start))
		if !strings.Contains(u.Page.URL, "/compose?to=") || u.Page.OpenerID != contacts.ID {
			t.Errorf("compose page %+v", u.Page)
		}
	}
	s, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	popups := 0
	for _, w := range s.Windows {
		ps := 0
		for _, p := range s.Pages {
			if p.WindowID == w.ID && p.OpenerID == contacts.ID {
				ps++
			}
		}
		if ps > 0 && w.Popup {
			popups++
		}
	}
	if popups != 3 {
		t.Errorf("%d popup windows with compose pages, want 3", popups)
	}
}

func TestSpawnTabsCarryOpener(t *testing.T) {
	for _, path := range []string{"/blank-link", "/noopener"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			b, r := newDriver(t, Options{})
			title := map[string]string{"/blank-link": fixture.TitleBlankLink, "/noopener": fixture.TitleNoopener}[path]
			opener := openWindow(t, b, r, "opener", path, title)
			start := act(t, b, "act-link", "opener", opener.ID, "#open-landing")
			e := r.wait(t, 5*time.Second, "landing created", created(opener.ID))
			t.Logf("click → PageCreated (tab): %v", e.Time.Sub(start))
			id := e.Page.ID
			adopt(t, b, "landing", id, "opener")
			t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "landing", ID: id}) })
			u := r.wait(t, 5*time.Second, "landing window known", func(e browser.Event) bool {
				return e.Page.ID == id && e.Type == browser.PageUpdated && e.Page.WindowID != ""
			})
			if u.Page.Popup || u.Page.WindowID != opener.WindowID {
				t.Errorf("landing should be a tab in its opener's window %s: %+v", opener.WindowID, u.Page)
			}
			waitTitle(t, b, id, fixture.TitleLanding)
		})
	}
}

func TestOAuthPopupOpensPopup(t *testing.T) {
	b, r := newDriver(t, Options{})
	oauth := openWindow(t, b, r, "oauth", "/oauth", fixture.TitleOAuth)
	act(t, b, "act-oauth", "oauth", oauth.ID, "#signin")
	e := r.wait(t, 5*time.Second, "authorize created", created(oauth.ID))
	auth := e.Page.ID
	adopt(t, b, "auth", auth, "oauth")
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "auth", ID: auth, OwnsWindow: true})
	})
	waitTitle(t, b, auth, fixture.TitleAuthorize)

	act(t, b, "act-oauth", "auth", auth, "#consent")
	e = r.wait(t, 5*time.Second, "consent created", created(auth))
	consent := e.Page.ID
	adopt(t, b, "consent", consent, "auth")
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "consent", ID: consent, OwnsWindow: true})
	})
	u := waitTitle(t, b, consent, fixture.TitleConsent)
	s, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Page(auth)
	c, _ := s.Page(consent)
	if !a.Popup || !c.Popup || a.WindowID == c.WindowID || a.WindowID == oauth.WindowID || c.OpenerID != auth {
		t.Errorf("authorize %+v consent %+v (last event %+v)", a, c, u.Page)
	}
}

// TestUserPagesDuringAnActStayTheUsers: while a step runs, pages the user opens
// elsewhere (a new window, a tab, an opener-less page) are not the step's: no
// Page.windowOpen of the acted-on page announced them. They are not attributed,
// not adoptable under the act, not closable, and stay open. The driver's own
// Open during a step is not attributed either.
func TestUserPagesDuringAnActStayTheUsers(t *testing.T) {
	// A pool profile too: the session's pages live in a browser context of
	// their own, and a page of the default context (the user's, or another
	// client's) opened meanwhile is no more the session's.
	for _, pool := range []bool{false, true} {
		t.Run(map[bool]string{false: "profile", true: "pool"}[pool], func(t *testing.T) { userPagesDuringAnAct(t, pool) })
	}
}

func userPagesDuringAnAct(t *testing.T, pool bool) {
	b, r := newDriver(t, Options{Pool: pool})
	// The user's hand, a second driver: someone else opening pages meanwhile.
	other, _ := newDriver(t, Options{})
	ctx := tctx(t)
	var slow browser.Page
	if pool {
		var err error
		if slow, err = b.Open(ctx, browser.OpenRequest{Key: "slow", URL: site.Path("/slow?ms=1500"), NewWindow: true, Context: "session-a"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = b.Close(context.Background(), browser.CloseRequest{Key: "slow", ID: slow.ID, OwnsWindow: true})
		})
		waitTitle(t, b, slow.ID, fixture.TitleSlow)
	} else {
		slow = openWindow(t, b, r, "slow", "/slow?ms=1500", fixture.TitleSlow)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		act(t, b, "act-slow", "slow", slow.ID, "#busy")
	}()
	time.Sleep(250 * time.Millisecond)
	var users []string
	for _, req := range []browser.OpenRequest{
		{Key: "user-window", URL: "about:blank#during-act-window", NewWindow: true},
		{Key: "user-tab", URL: "about:blank#during-act-tab"},
		{Key: "user-site", URL: site.Path("/landing"), NewWindow: true},
	} {
		p, err := other.Open(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, p.ID)
		key := req.Key
		t.Cleanup(func() { _ = other.Close(context.Background(), browser.CloseRequest{Key: key, ID: p.ID}) })
	}
	wg.Wait()
	for _, id := range users {
		e := r.wait(t, 5*time.Second, "page created during act", func(e browser.Event) bool {
			return e.Type == browser.PageCreated && e.Page.ID == id
		})
		if e.Page.Attributed != "" {
			t.Errorf("the user's page %s opened during the act is attributed to %q: %+v", id, e.Page.Attributed, e.Page)
		}
		wantErr(t, "adopt the user's page under the act", b.Adopt(ctx, browser.AdoptRequest{Key: "k-" + id, ID: id, Parent: "act-slow"}), browser.ErrNotObserved)
		wantErr(t, "adopt the user's page under the acted-on page", b.Adopt(ctx, browser.AdoptRequest{Key: "k-" + id, ID: id, Parent: "slow"}), browser.ErrNotObserved)
		wantErr(t, "close the user's page", b.Close(ctx, browser.CloseRequest{Key: "k-" + id, ID: id, OwnsWindow: true}), browser.ErrNotOwned)
	}
	wantRecords(t, b, "after the act", browser.Record{Key: "slow", Page: slow.ID, Kind: browser.RecordOpened})
	mustBeOpen(t, "the user's pages", users...)

	// The driver's own Open is never attributed, not even during an Act.
	wg.Add(1)
	go func() {
		defer wg.Done()
		act(t, b, "act-slow-2", "slow", slow.ID, "#busy")
	}()
	time.Sleep(250 * time.Millisecond)
	mine, err := b.Open(tctx(t), browser.OpenRequest{Key: "mine", URL: site.Path("/landing")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "mine", ID: mine.ID}) })
	wg.Wait()
	e := r.wait(t, 5*time.Second, "own page created", func(e browser.Event) bool {
		return e.Type == browser.PageCreated && e.Page.ID == mine.ID
	})
	if e.Page.Attributed != "" {
		t.Errorf("the driver's own Open was attributed: %+v", e.Page)
	}
}

func TestCloseWaitsUntilGone(t *testing.T) {
	b, r := newDriver(t, Options{})
	ctx := tctx(t)
	for i := range 3 {
		key := "page-" + string(rune('0'+i))
		p, err := b.Open(ctx, browser.OpenRequest{Key: key, URL: site.Path("/landing"), NewWindow: i == 0})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := b.Close(ctx, browser.CloseRequest{Key: key, ID: p.ID, OwnsWindow: true}); err != nil {
			t.Fatal(err)
		}
		t.Logf("Close → destroyed (newWindow=%v): %v", i == 0, time.Since(start))
		s, err := b.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Page(p.ID); ok {
			t.Errorf("page %s still in the snapshot after Close", p.ID)
		}
		r.wait(t, time.Second, "removed", func(e browser.Event) bool { return e.Type == browser.PageRemoved && e.Page.ID == p.ID })
		if _, ok := b.ledger.Get(p.ID); ok {
			t.Errorf("page %s still recorded after Close", p.ID)
		}
		// Already gone: not an error, twice, whatever the key.
		for _, k := range []string{key, "", "another"} {
			if err := b.Close(ctx, browser.CloseRequest{Key: k, ID: p.ID}); err != nil {
				t.Errorf("closing a closed page under %q: %v", k, err)
			}
		}
	}
	for _, k := range []string{"", "page-0"} {
		if err := b.Close(ctx, browser.CloseRequest{Key: k, ID: "NOSUCHTARGET"}); err != nil {
			t.Errorf("closing an unknown page under %q: %v", k, err)
		}
	}
}

// userWindowWithOwnedTabs makes a user's window holding n tabs the driver owns,
// and nothing else. The user's hand (a second driver) opens the window with a
// /blank-link page; the driver binds that tab (uses it without owning it), clicks
// its link n times (acts keyed act-tab-<i>) and adopts each tab spawned into the
// window under its act (CDP cannot open a
// tab in a given window); then the user closes their own tab. It returns the
// window, the owned tabs and their keys.
func userWindowWithOwnedTabs(t *testing.T, b *Browser, r *recorder, n int) (string, []string, []string) {
	t.Helper()
	hand, hr := newDriver(t, Options{})
	user := openWindow(t, hand, hr, "user-window", "/blank-link", fixture.TitleBlankLink)
	seen(t, r, user.ID)
	if err := b.Bind(tctx(t), browser.BindRequest{Key: "bind-user", ID: user.ID}); err != nil {
		t.Fatalf("bind the user's tab: %v", err)
	}
	var ids, keys []string
	for len(ids) < n {
		before := time.Now()
		key := "tab-" + string(rune('0'+len(ids)))
		// The driver's own click: its spawn of the bound tab is the act's.
		act(t, b, "act-"+key, "bind-user", user.ID, "#open-landing")
		e := r.wait(t, 5*time.Second, "tab", func(e browser.Event) bool {
			return created(user.ID)(e) && e.Time.After(before) && !contains(ids, e.Page.ID)
		})
		adopt(t, b, key, e.Page.ID, "act-"+key)
		ids, keys = append(ids, e.Page.ID), append(keys, key)
	}
	waitWindowPages(t, b, user.WindowID, n+1)
	if err := b.Release(tctx(t), browser.ReleaseRequest{Key: "bind-user", ID: user.ID}); err != nil {
		t.Fatal(err)
	}
	userCloses(t, user.ID)
	waitWindowPages(t, b, user.WindowID, n)
	return user.WindowID, ids, keys
}

// waitWindowPages waits until the driver sees n pages in window w.
func waitWindowPages(t *testing.T, b *Browser, w string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(windowPages(t, b, w)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("window %s: %+v, want %d pages", w, windowPages(t, b, w), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func checkBlankOnly(t *testing.T, b *Browser, w string, closed []string) {
	t.Helper()
	ps := windowPages(t, b, w)
	if len(ps) != 1 {
		t.Fatalf("window %s has %d pages, want one about:blank: %+v", w, len(ps), ps)
	}
	p := ps[0]
	if contains(closed, p.ID) || (p.URL != "about:blank" && p.URL != "") || p.OpenerID != "" || p.Attributed != "" {
		t.Errorf("window %s keeps %+v, want a fresh about:blank tab", w, p)
	}
	if !isOpen(t, p.ID) {
		t.Errorf("Chromium does not list the placeholder %s", p.ID)
	}
	// The placeholder is the user's: the user closes it, and with it the window.
	t.Cleanup(func() { userCloses(t, p.ID) })
}

func TestCloseLastTabLeavesBlank(t *testing.T) {
	b, r := newDriver(t, Options{})
	w, ids, keys := userWindowWithOwnedTabs(t, b, r, 1)
	start := time.Now()
	if err := b.Close(tctx(t), browser.CloseRequest{Key: keys[0], ID: ids[0]}); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close last tab (placeholder + close): %v", time.Since(start))
	checkBlankOnly(t, b, w, ids)

	// A window's last tab closed with OwnsWindow goes with its window.
	own := openWindow(t, b, r, "own-window", "/blank-link", fixture.TitleBlankLink)
	if err := b.Close(tctx(t), browser.CloseRequest{Key: "own-window", ID: own.ID, OwnsWindow: true}); err != nil {
		t.Fatal(err)
	}
	if ps := windowPages(t, b, own.WindowID); len(ps) != 0 {
		t.Errorf("owned window %s still has %+v", own.WindowID, ps)
	}
}

func TestConcurrentCloseOfLastTwoTabs(t *testing.T) {
	b, r := newDriver(t, Options{})
	w, ids, keys := userWindowWithOwnedTabs(t, b, r, 2)
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Close(tctx(t), browser.CloseRequest{Key: keys[i], ID: id})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkBlankOnly(t, b, w, ids)
}

func TestPoolContextsIsolateCookies(t *testing.T) {
	b, _ := newDriver(t, Options{Pool: true})
	ctx := tctx(t)
	t.Cleanup(func() {
		_ = b.DisposeContext(context.Background(), "A")
		_ = b.DisposeContext(context.Background(), "B")
	})
	open := func(key, c, path string) browser.Page {
		p, err := b.Open(ctx, browser.OpenRequest{Key: key, URL: site.Path(path), Context: c})
		if err != nil {
			t.Fatalf("open %s in %s: %v", path, c, err)
		}
		if p.Context != c {
			t.Errorf("page %+v: context %q, want %q", p, p.Context, c)
		}
		return p
	}
	setA := open("a1", "A", "/set-cookie?sid=a")
	waitTitle(t, b, setA.ID, fixture.TitleSetCookie)
	cookA := open("a2", "A", "/cookies")
	waitTitle(t, b, cookA.ID, "Cookies: sid=a")
	cookB := open("b1", "B", "/cookies")
	waitTitle(t, b, cookB.ID, "Cookies: none")
	if cookA.WindowID == cookB.WindowID || setA.WindowID != cookA.WindowID {
		t.Errorf("windows: A %s/%s, B %s", setA.WindowID, cookA.WindowID, cookB.WindowID)
	}
	// The default context does not see A's cookie either.
	def, err := b.Open(ctx, browser.OpenRequest{Key: "def", URL: site.Path("/cookies"), NewWindow: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "def", ID: def.ID, OwnsWindow: true})
	})
	waitTitle(t, b, def.ID, "Cookies: none")

	// Closing A's pages leaves B's.
	for key, id := range map[string]string{"a1": setA.ID, "a2": cookA.ID} {
		if err := b.Close(ctx, browser.CloseRequest{Key: key, ID: id, OwnsWindow: true}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Page(cookB.ID); !ok {
		t.Error("B's page went with A's")
	}
	for _, p := range s.Pages {
		if p.Context == "A" {
			t.Errorf("A still has %+v", p)
		}
	}
	// Without Pool a context is refused rather than silently shared.
	plain, _ := newDriver(t, Options{})
	if _, err := plain.Open(ctx, browser.OpenRequest{Key: "plain", URL: "about:blank", Context: "A"}); err == nil || !strings.Contains(err.Error(), "Pool") {
		t.Errorf("open with a context on a driver without Pool: %v", err)
	}
}

func TestDisconnectAndReconnect(t *testing.T) {
	host := strings.TrimPrefix(chrome.HTTPURL, "http://")
	px := newProxy(t, host)
	b, r := newDriverAt(t, "http://"+px.addr(), Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	p := openWindow(t, b, r, "quiet", "/quiet", fixture.TitleQuiet)
	before, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	n := len(r.all())

	px.setRefuse(true)
	px.cut()
	r.wait(t, 5*time.Second, "disconnected", func(e browser.Event) bool { return e.Type == browser.Disconnected && e.Epoch == 1 })
	if b.Connected() {
		t.Error("Connected() after the link was cut")
	}
	if _, err := b.Snapshot(tctx(t)); !isNotConnected(err) {
		t.Errorf("Snapshot while disconnected: %v", err)
	}
	if _, err := b.Open(tctx(t), browser.OpenRequest{Key: "other", URL: "about:blank"}); !isNotConnected(err) {
		t.Errorf("Open while disconnected: %v", err)
	}
	if err := b.Close(tctx(t), browser.CloseRequest{Key: "quiet", ID: p.ID}); !isNotConnected(err) {
		t.Errorf("Close while disconnected: %v", err)
	}
	if _, err := b.Act(tctx(t), browser.ActRequest{Key: "act", Owner: "quiet", Page: p.ID, ClickSelector: "#noop"}); !isNotConnected(err) {
		t.Errorf("Act while disconnected: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // a few refused reconnects

	px.setRefuse(false)
	e := r.wait(t, 10*time.Second, "reconnected", func(e browser.Event) bool { return e.Type == browser.Connected && e.Epoch >= 2 })
	if !b.Connected() {
		t.Error("not Connected() after the Connected event")
	}
	for _, e := range r.all()[n:] {
		if e.Type == browser.PageRemoved {
			t.Errorf("page reported removed across a reconnect: %+v", e.Page)
		}
	}
	after, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != e.Epoch || after.Epoch <= before.Epoch {
		t.Errorf("epochs: before %d, event %d, after %d", before.Epoch, e.Epoch, after.Epoch)
	}
	for _, bp := range before.Pages {
		ap, ok := after.Page(bp.ID)
		if !ok {
			t.Errorf("page %s lost across the reconnect", bp.ID)
			continue
		}
		if ap.WindowID != bp.WindowID || ap.URL != bp.URL {
			t.Errorf("page changed across the reconnect: %+v → %+v", bp, ap)
		}
	}
	// The driver works again: events flow and pages close.
	if err := b.Close(tctx(t), browser.CloseRequest{Key: "quiet", ID: p.ID, OwnsWindow: true}); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 5*time.Second, "removed after reconnect", func(e browser.Event) bool {
		return e.Type == browser.PageRemoved && e.Page.ID == p.ID && e.Epoch == after.Epoch
	})
}

func TestActErrors(t *testing.T) {
	b, r := newDriver(t, Options{})
	q := openWindow(t, b, r, "quiet", "/quiet", fixture.TitleQuiet)
	if _, err := b.Act(tctx(t), browser.ActRequest{Key: "k", Owner: "quiet", Page: q.ID, ClickSelector: "#missing"}); err == nil || errors.Is(err, browser.ErrNotOwned) {
		t.Errorf("click on a missing element: %v", err)
	}
	if _, err := b.Act(tctx(t), browser.ActRequest{Key: "k", Owner: "quiet", Page: "NOSUCH", ClickSelector: "#noop"}); !errors.Is(err, browser.ErrNotFound) {
		t.Errorf("click on a missing page: %v, want ErrNotFound", err)
	}
	act(t, b, "k", "quiet", q.ID, "#noop")
	if v := evaluate(t, b, q.ID, "document.getElementById('noop').textContent"); v != "clicked" {
		t.Errorf("button text %v after the click", v)
	}
}
