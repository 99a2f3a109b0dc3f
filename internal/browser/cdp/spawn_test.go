package cdp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

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
