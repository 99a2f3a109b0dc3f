package cdp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/browsertest"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// cdpWorld is the world outside the driver under test on real Chromium: the
// user's hand is a second driver on its own connection (its ledger is not the
// driver's), pages are closed through Chromium's own HTTP endpoint as the tab's
// close button would, and the driver reaches Chromium through a proxy whose
// links can be cut.
type cdpWorld struct {
	t     *testing.T
	b     *Browser
	hand  *Browser
	hr    *recorder
	proxy *proxy
	n     int
}

func (w *cdpWorld) URL() string { return site.Path("/spawner") }

// waitSeen waits until the driver under test lists the page (with its window).
func (w *cdpWorld) waitSeen(t testing.TB, id string) {
	t.Helper()
	deadline := time.Now().Add(browsertest.Timeout)
	for {
		if s, err := w.b.Snapshot(context.Background()); err == nil {
			if p, ok := s.Page(id); ok && p.WindowID != "" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the driver under test does not list page %s", id)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (w *cdpWorld) UserOpenWindow(t testing.TB, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	w.n++
	key := "user-window-" + string(rune('a'+w.n))
	first, err := w.hand.Open(ctx, browser.OpenRequest{Key: key, URL: w.URL(), NewWindow: true})
	if err != nil {
		t.Fatalf("the user opens a window: %v", err)
	}
	// A tab is opened in the window from its first page: wait until it has loaded.
	waitTitle(w.t, w.hand, first.ID, fixture.TitleSpawner)
	ids := []string{first.ID}
	for i := 1; i < n; i++ {
		p, err := w.hand.Open(ctx, browser.OpenRequest{Key: key + "-" + string(rune('0'+i)), URL: w.URL(), WindowID: first.WindowID, Anchors: []string{key}})
		if err != nil {
			t.Fatalf("the user opens a tab: %v", err)
		}
		if p.WindowID != first.WindowID {
			t.Fatalf("the user's tab landed in window %s, not %s: %s", p.WindowID, first.WindowID, p.Misplaced)
		}
		ids = append(ids, p.ID)
	}
	// The hand forgets them: they are the user's, recorded by nobody.
	for i, id := range ids {
		k := key
		if i > 0 {
			k = key + "-" + string(rune('0'+i))
		}
		if err := w.hand.Release(ctx, browser.ReleaseRequest{Key: k, ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		waitTitle(w.t, w.hand, id, fixture.TitleSpawner)
		w.waitSeen(t, id)
	}
	return first.WindowID, ids
}

func (w *cdpWorld) UserCloseTab(t testing.TB, id string) { userCloses(w.t, id) }

func (w *cdpWorld) Open(t testing.TB, id string) bool { return isOpen(w.t, id) }

// Spawn clicks, with the hand and real input events, the page's link (a tab)
// or button (a popup); the new page has the page as its opener.
func (w *cdpWorld) Spawn(t testing.TB, opener string, popup bool) string {
	t.Helper()
	ctx := tctx(w.t)
	waitTitle(w.t, w.hand, opener, fixture.TitleSpawner)
	sel := "#open-tab"
	if popup {
		sel = "#open-popup"
	}
	key := "hand-" + opener
	if err := w.hand.Bind(ctx, browser.BindRequest{Key: key, ID: opener}); err != nil {
		t.Fatalf("the hand binds %s: %v", opener, err)
	}
	defer func() { _ = w.hand.Release(ctx, browser.ReleaseRequest{Key: key, ID: opener}) }()
	before := time.Now()
	known := map[string]bool{}
	if s, err := w.hand.Snapshot(ctx); err == nil {
		for _, p := range s.Pages {
			known[p.ID] = true
		}
	}
	if _, err := w.hand.Act(ctx, browser.ActRequest{Key: key, Owner: key, Page: opener, ClickSelector: sel}); err != nil {
		t.Fatalf("the hand clicks %s in %s: %v", sel, opener, err)
	}
	e := w.hr.wait(w.t, browsertest.Timeout, "a page spawned by "+opener, func(e browser.Event) bool {
		return e.Type == browser.PageCreated && e.Page.OpenerID == opener && e.Time.After(before) && !known[e.Page.ID]
	})
	// The hand's own click caused the page: its driver attributes it to the
	// hand's act. The hand adopts and lets go of it, so the page is the
	// user's, recorded by nobody.
	if e.Page.Attributed == key {
		spawnKey := "hand-spawn-" + e.Page.ID
		if err := w.hand.Adopt(ctx, browser.AdoptRequest{Key: spawnKey, ID: e.Page.ID, Parent: key}); err != nil {
			t.Fatalf("the hand takes %s: %v", e.Page.ID, err)
		}
		if err := w.hand.Release(ctx, browser.ReleaseRequest{Key: spawnKey, ID: e.Page.ID}); err != nil {
			t.Fatalf("the hand lets go of %s: %v", e.Page.ID, err)
		}
	}
	w.waitSeen(t, e.Page.ID)
	return e.Page.ID
}

func (w *cdpWorld) Disconnect(testing.TB) {
	w.proxy.setRefuse(true)
	w.proxy.cut()
}

func (w *cdpWorld) Reconnect(testing.TB) { w.proxy.setRefuse(false) }

// Visible: Chromium's document.visibilityState of the page, read by the hand.
func (w *cdpWorld) Visible(t testing.TB, id string) bool {
	return evaluate(w.t, w.hand, id, "document.visibilityState") == "visible"
}

// TestConformance runs the seam's conformance suite against the cdp driver on
// real Chromium.
func TestConformance(t *testing.T) {
	browsertest.Run(t, func(t *testing.T) (browser.Browser, browsertest.World) {
		host := strings.TrimPrefix(chrome.HTTPURL, "http://")
		px := newProxy(t, host)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		b, err := New(ctx, "http://"+px.addr(), Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(b.Shutdown)
		hand, hr := newDriver(t, Options{})
		return b, &cdpWorld{t: t, b: b, hand: hand, hr: hr, proxy: px}
	})
}

// DialogURL is the fixture's /dialog page (browsertest.Dialogs).
func (w *cdpWorld) DialogURL() string { return site.Path("/dialog") }

// FramesURL is the fixture's /frames page (browsertest.Frames).
func (w *cdpWorld) FramesURL() string { return site.Path("/frames") }

// CrossSiteURL is the fixture's /cross-site page (browsertest.CrossSite).
func (w *cdpWorld) CrossSiteURL() string { return site.Path("/cross-site") }

// CrossSitePassword is the password the cross-site login accepts.
func (w *cdpWorld) CrossSitePassword() string { return fixture.CrossSitePassword }

// CrossSiteLogins is what the fixture recorded of the cross-site logins.
func (w *cdpWorld) CrossSiteLogins(t testing.TB) string { return seenLogins(t) }

// VerbsURL is the fixture's /verbs page (browsertest.Verbs).
func (w *cdpWorld) VerbsURL() string { return site.Path("/verbs") }

// ReadingURL is the fixture's /reading page (browsertest.Reading).
func (w *cdpWorld) ReadingURL(older int) string {
	return site.Path(fmt.Sprintf("/reading?older=%d", older))
}

// Title is the page's title as Chromium lists it (no evaluation: a page that
// shows a JavaScript dialog would not answer one).
func (w *cdpWorld) Title(t testing.TB, id string) string { return pageTitle(w.t, id) }

// Viewport is the page's viewport in device pixels, read by the world's own
// hand (browsertest.Screens).
func (w *cdpWorld) Viewport(t testing.TB, id string) (int, int) {
	return devicePixels(t, evaluate(w.t, w.hand, id, `[innerWidth * devicePixelRatio, innerHeight * devicePixelRatio]`))
}

// Box is the box of the element selector names, in device pixels.
func (w *cdpWorld) Box(t testing.TB, id, selector string) (int, int) {
	return devicePixels(t, evaluate(w.t, w.hand, id, fmt.Sprintf(
		`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return [r.width * devicePixelRatio, r.height * devicePixelRatio]; })()`, selector)))
}

// devicePixels reads [width, height] as evaluate returns it.
func devicePixels(t testing.TB, v any) (int, int) {
	t.Helper()
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		t.Fatalf("want [width, height], got %v", v)
	}
	w, _ := a[0].(float64)
	h, _ := a[1].(float64)
	return int(w + 0.5), int(h + 0.5)
}

// The real browser's world serves every fixture page the suite has a case for.
var _ interface {
	browsertest.Verbs
	browsertest.Frames
	browsertest.CrossSite
	browsertest.Dialogs
	browsertest.Reading
	browsertest.Screens
	browsertest.Focus
} = (*cdpWorld)(nil)

// ReadingPage is the fixture's /reading content (browsertest.Reading); the
// package's own tests cannot import testenv (testenv.ReadingPage), which
// imports this driver.
func (w *cdpWorld) ReadingPage() browsertest.ReadingPage {
	return browsertest.ReadingPage{
		Subject: fixture.ReadingSubject, Body: fixture.ReadingBody,
		Hidden: fixture.ReadingHidden, Older: fixture.ReadingOlder, Item: fixture.ReadingItem,
		Archived: fixture.TitleArchived,
	}
}
