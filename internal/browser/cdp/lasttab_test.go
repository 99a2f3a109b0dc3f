package cdp

import (
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

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
