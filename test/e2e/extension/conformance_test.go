package extension_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/browsertest"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// extWorld is the world outside the extension driver: the test's own DevTools
// connection is the user's hand (windows and tabs it opens are the user's,
// closing goes through Target.closeTarget like the tab's close button, clicks are
// real input events) and Chrome's own target list is what a user would check.
// The driver names pages by Chrome tab id, DevTools by target id: every page of
// the suite has a url of its own, and the world maps one to the other by url.
type extWorld struct {
	mu   sync.Mutex
	n    int
	urls map[string]string // tab id → url, as the driver reported it
}

func (w *extWorld) Caps() browsertest.Caps {
	// The link: the service worker wakes up by itself on any tab event
	// (TestServiceWorkerRestart proves the reconnect).
	return browsertest.Caps{NoLinkCut: true}
}

func (w *extWorld) URL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fx.Path(fmt.Sprintf("/spawner?conformance=%d-%d", time.Now().UnixNano(), w.n))
}

// learn maps the driver's tab ids to urls from a snapshot.
func (w *extWorld) learn() browser.Snapshot {
	s, err := host.Driver().Snapshot(context.Background())
	if err != nil {
		return s
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range s.Pages {
		if p.URL != "" {
			w.urls[p.ID] = p.URL
		}
	}
	return s
}

func (w *extWorld) urlOf(id string) string {
	w.learn()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.urls[id]
}

// target is the DevTools target of a driver page: by its url, or for a fresh
// about:blank tab (the last-tab placeholder) by its window.
func (w *extWorld) target(t testing.TB, id string) (string, bool) {
	t.Helper()
	u := w.urlOf(id)
	if u == "" {
		return "", false
	}
	ctx := context.Background()
	ps, err := devtools.pages(ctx)
	if err != nil {
		t.Fatalf("DevTools page list: %v", err)
	}
	if u != "about:blank" {
		for _, p := range ps {
			if p.URL == u {
				return p.TargetID, true
			}
		}
		return "", false
	}
	s := w.learn()
	page, ok := s.Page(id)
	if !ok {
		return "", false
	}
	for _, p := range ps {
		if p.URL != "about:blank" {
			continue
		}
		if win, err := windowOfTarget(ctx, p.TargetID); err == nil && strconv.Itoa(win) == page.WindowID {
			return p.TargetID, true
		}
	}
	return "", false
}

func (w *extWorld) waitDriver(t testing.TB, what string, f func(browser.Snapshot) bool) browser.Snapshot {
	t.Helper()
	deadline := time.Now().Add(browsertest.Timeout)
	for {
		s := w.learn()
		if f(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the extension never reported %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *extWorld) UserOpenWindow(t testing.TB, n int) (string, []string) {
	t.Helper()
	urls := make([]string, n)
	for i := range urls {
		urls[i] = w.URL()
	}
	_, win := openUserWindow(t.(*testing.T), urls...)
	var ids []string
	w.waitDriver(t, "the user's tabs", func(s browser.Snapshot) bool {
		ids = ids[:0]
		for _, u := range urls {
			for _, p := range s.Pages {
				if p.URL == u {
					ids = append(ids, p.ID)
				}
			}
		}
		return len(ids) == n
	})
	return win, ids
}

func (w *extWorld) UserCloseTab(t testing.TB, id string) {
	t.Helper()
	target, ok := w.target(t, id)
	if !ok {
		return
	}
	ctx := context.Background()
	if err := devtools.closeTarget(ctx, target); err != nil {
		t.Fatalf("the user closes %s: %v", id, err)
	}
	deadline := time.Now().Add(browsertest.Timeout)
	for w.Open(t, id) {
		if time.Now().After(deadline) {
			t.Fatalf("tab %s still open after the user closed it", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *extWorld) Open(t testing.TB, id string) bool {
	t.Helper()
	_, ok := w.target(t, id)
	return ok
}

func (w *extWorld) Spawn(t testing.TB, opener string, popup bool) string {
	t.Helper()
	target, ok := w.target(t, opener)
	if !ok {
		t.Fatalf("no target for page %s", opener)
	}
	before := map[string]bool{}
	for _, p := range w.learn().Pages {
		before[p.ID] = true
	}
	sel := "#open-tab"
	if popup {
		sel = "#open-popup"
	}
	// The user looks at the tab before clicking in it (a click needs a rendered page).
	if err := devtools.do(context.Background(), "", wire.ActivateTarget{TargetID: target}); err != nil {
		t.Fatalf("the user switches to %s: %v", opener, err)
	}
	clickIn(t.(*testing.T), target, sel)
	var id string
	w.waitDriver(t, "a page spawned by "+opener, func(s browser.Snapshot) bool {
		for _, p := range s.Pages {
			if !before[p.ID] && p.OpenerID == opener && p.URL != "" && p.WindowID != "" {
				id = p.ID
				return true
			}
		}
		return false
	})
	return id
}

// Visible: Chrome's document.visibilityState of the page, read through DevTools.
func (w *extWorld) Visible(t testing.TB, id string) bool {
	t.Helper()
	target, ok := w.target(t, id)
	if !ok {
		t.Fatalf("no target for page %s", id)
	}
	ctx := context.Background()
	sess, err := devtools.attach(ctx, target)
	if err != nil {
		t.Fatalf("attach %s: %v", target, err)
	}
	defer devtools.detach(ctx, sess)
	var state string
	if err := devtools.eval(ctx, sess, "document.visibilityState", &state); err != nil {
		t.Fatalf("visibility of %s: %v", id, err)
	}
	return state == "visible"
}

func (w *extWorld) Disconnect(t testing.TB) {
	t.Fatal("the extension's link cannot be cut (Caps.NoLinkCut)")
}
func (w *extWorld) Reconnect(t testing.TB) {
	t.Fatal("the extension's link cannot be cut (Caps.NoLinkCut)")
}

// TestConformance runs the seam's conformance suite against the extension
// driver: the real extension in Chromium, through the agent's host. No agent
// runs meanwhile: the suite is the driver's one consumer.
func TestConformance(t *testing.T) {
	paired(t)
	w := &extWorld{urls: map[string]string{}}
	browsertest.Run(t, func(t *testing.T) (browser.Browser, browsertest.World) {
		return host.Driver(), w
	})
}

// ReadingURL is the fixture's /reading page (browsertest.Reading), at a url of
// its own.
func (w *extWorld) ReadingURL(older int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fx.Path(fmt.Sprintf("/reading?older=%d&conformance=%d-%d", older, time.Now().UnixNano(), w.n))
}

// FramesURL is the fixture's /frames page (browsertest.Frames), at a url of
// its own (target finds pages by url).
func (w *extWorld) FramesURL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fx.Path(fmt.Sprintf("/frames?conformance=%d-%d", time.Now().UnixNano(), w.n))
}

// CrossSiteURL is the fixture's /cross-site page (browsertest.CrossSite), at a
// url of its own (target finds pages by url).
func (w *extWorld) CrossSiteURL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fx.Path(fmt.Sprintf("/cross-site?conformance=%d-%d", time.Now().UnixNano(), w.n))
}

// CrossSitePassword is the password the cross-site login accepts.
func (w *extWorld) CrossSitePassword() string { return fixture.CrossSitePassword }

// CrossSiteLogins is what the fixture recorded of the cross-site logins.
func (w *extWorld) CrossSiteLogins(t testing.TB) string {
	t.Helper()
	r, err := http.Get(fx.Path("/cross-site/seen"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Body.Close() }()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// VerbsURL is the fixture's /verbs page (browsertest.Verbs), at a url of its
// own (target finds pages by url).
func (w *extWorld) VerbsURL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fx.Path(fmt.Sprintf("/verbs?conformance=%d-%d", time.Now().UnixNano(), w.n))
}

// Title is the page's title as Chromium lists it over DevTools (not the
// driver; no evaluation: a page that shows a JavaScript dialog would not
// answer one).
func (w *extWorld) Title(t testing.TB, id string) string {
	t.Helper()
	target, ok := w.target(t, id)
	if !ok {
		return ""
	}
	ps, err := devtools.pages(context.Background())
	if err != nil {
		return ""
	}
	for _, p := range ps {
		if p.TargetID == target {
			return p.Title
		}
	}
	return ""
}

// DialogURL is the fixture's /dialog page (browsertest.Dialogs), at a url of
// its own.
func (w *extWorld) DialogURL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fx.Path(fmt.Sprintf("/dialog?conformance=%d-%d", time.Now().UnixNano(), w.n))
}

// devicePixels evaluates expr (an array [width, height] in device pixels) in
// the page over DevTools (not the driver).
func (w *extWorld) devicePixels(t testing.TB, id, expr string) (int, int) {
	t.Helper()
	target, ok := w.target(t, id)
	if !ok {
		t.Fatalf("no target for page %s", id)
	}
	ctx := context.Background()
	sess, err := devtools.attach(ctx, target)
	if err != nil {
		t.Fatalf("attach %s: %v", target, err)
	}
	defer devtools.detach(ctx, sess)
	var wh []float64
	if err := devtools.eval(ctx, sess, expr, &wh); err != nil || len(wh) != 2 {
		t.Fatalf("%s in %s: %v %v", expr, id, wh, err)
	}
	return int(wh[0] + 0.5), int(wh[1] + 0.5)
}

// Viewport is the page's viewport in device pixels (browsertest.Screens).
func (w *extWorld) Viewport(t testing.TB, id string) (int, int) {
	return w.devicePixels(t, id, `[innerWidth * devicePixelRatio, innerHeight * devicePixelRatio]`)
}

// Box is the box of the element selector names, in device pixels.
func (w *extWorld) Box(t testing.TB, id, selector string) (int, int) {
	return w.devicePixels(t, id, fmt.Sprintf(
		`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return [r.width * devicePixelRatio, r.height * devicePixelRatio]; })()`, selector))
}

// The real extension's world serves every fixture page the suite has a case for.
var _ interface {
	browsertest.Verbs
	browsertest.Frames
	browsertest.CrossSite
	browsertest.Dialogs
	browsertest.Reading
	browsertest.Screens
} = (*extWorld)(nil)

// ReadingPage is the fixture's /reading content (browsertest.Reading).
func (w *extWorld) ReadingPage() browsertest.ReadingPage { return testenv.ReadingPage() }
