package cdp

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// attackSite serves the pages of the spawn attribution attacks on 127.0.0.1;
// other is the same server under localhost (another site: its frames are
// out of process).
type attackSite struct {
	srv   *httptest.Server
	other string
}

func (s *attackSite) Path(p string) string { return s.srv.URL + p }

func newAttackSite(t *testing.T) *attackSite {
	t.Helper()
	s := &attackSite{}
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body>%s</body></html>", title, body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/landing", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Landing "+r.URL.Query().Get("k"), "landing")
	})
	mux.HandleFunc("/coop", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
		page(w, "COOP "+r.URL.Query().Get("k"), "coop")
	})
	mux.HandleFunc("/frame", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		feat := q.Get("feat")
		page(w, "Frame", fmt.Sprintf(`<button id="fopen" type="button" onclick="window.open('/landing?k=frame','_blank','%s')">Frame open</button><button id="falert" type="button" onclick="alert('from the frame'); document.body.dataset.done='1'">Frame alert</button>`, html.EscapeString(feat)))
	})
	// A user's page framing the other site's /frame (one button, no noopener).
	mux.HandleFunc("/framed", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Framed", `<iframe id="xo" src="`+s.other+`/frame" width="300" height="60"></iframe>`)
	})
	mux.HandleFunc("/spawns", func(w http.ResponseWriter, r *http.Request) {
		other := s.other
		page(w, "Spawns", `
<a id="blank" href="/landing?k=blank" target="_blank">Blank</a>
<a id="noopener" href="/landing?k=noopener" target="_blank" rel="noopener">Noopener</a>
<a id="noreferrer" href="/landing?k=noreferrer" target="_blank" rel="noreferrer">Noreferrer</a>
<a id="plain" href="/landing?k=plain">Plain</a>
<form id="fget" action="/landing" target="_blank"><input type="hidden" name="k" value="formget"><button type="submit">Form get</button></form>
<form id="fpost" action="/landing" method="post" target="_blank"><input type="hidden" name="k" value="formpost"><button type="submit">Form post</button></form>
<button id="openbusy" type="button" onclick="window.open('/landing?k=openbusy','_blank'); const t = Date.now() + 300; while (Date.now() < t) {}">Open busy</button>
<button id="twicebusy" type="button" onclick="window.open('/landing?k=busy1','_blank'); window.open('/landing?k=busy2','_blank'); const t = Date.now() + 1500; while (Date.now() < t) {}">Twice busy</button>
<button id="twice" type="button" onclick="window.open('/landing?k=twice1','_blank','noopener'); window.open('/landing?k=twice2','_blank','noopener')">Twice</button>
<button id="later" type="button" onclick="setTimeout(function(){ window.open('/landing?k=later','_blank','noopener') }, 2500)">Later</button>
<button id="coop" type="button" onclick="window.open('`+other+`/coop?k=x','_blank')">Coop popup</button>
<a id="coopa" href="`+other+`/coop?k=a" target="_blank">Coop link</a>
<button id="nav" type="button" onclick="var w = window.open('/landing?k=nav','_blank'); setTimeout(function(){ w.location = '`+other+`/coop?k=nav' }, 10)">Nav popup</button>
<a id="dl" href="/landing?k=dl" download="x.html">Download</a>
<iframe id="xo" src="`+other+`/frame?feat=noopener" width="300" height="60"></iframe>
<iframe id="xo2" src="`+other+`/frame" width="300" height="60"></iframe>
<iframe id="sb" sandbox="allow-scripts allow-popups" srcdoc="<button onclick=&quot;window.open('`+s.srv.URL+`/landing?k=sandbox','_blank')&quot;>Sandbox open</button>" width="300" height="60"></iframe>
<iframe id="sbe" sandbox="allow-scripts allow-popups allow-popups-to-escape-sandbox" srcdoc="<button onclick=&quot;window.open('`+s.srv.URL+`/landing?k=escape','_blank')&quot;>Escape open</button>" width="300" height="60"></iframe>
`)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	_, port, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	s.other = "http://localhost:" + port
	return s
}

// spawnedSince waits for the first page created after start other than the
// known pages, and returns it (ok false after timeout).
func spawnedSince(r *recorder, start time.Time, timeout time.Duration, known ...string) (browser.Event, bool) {
	return r.waitOK(timeout, func(e browser.Event) bool {
		if e.Type != browser.PageCreated || !e.Time.After(start) {
			return false
		}
		for _, k := range known {
			if e.Page.ID == k {
				return false
			}
		}
		return true
	})
}

// openAt has b open url in a new window under key and waits for title.
func openAt(t *testing.T, b *Browser, key, url, title string) browser.Page {
	t.Helper()
	p, err := b.Open(tctx(t), browser.OpenRequest{Key: key, URL: url, NewWindow: true})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: key, ID: p.ID, OwnsWindow: true}) })
	waitTitle(t, b, p.ID, title)
	return p
}

// TestBlockedPopupNeverClaimsTheUsersTab: a session's page whose click handler
// calls window.open twice gets one popup (the second has no user activation
// left: Chromium's popup blocker stops it), yet fires Page.windowOpen twice.
// The second announcement names no page the step made; a tab the user opens
// (no opener, in the default browser context) right after the step is the
// user's: not attributed to the step, not adoptable under it, not closable.
func TestBlockedPopupNeverClaimsTheUsersTab(t *testing.T) {
	s := newAttackSite(t)
	b, r := newDriver(t, Options{})
	hand, _ := newDriver(t, Options{}) // the user's own CDP client
	ctx := tctx(t)
	p := openAt(t, b, "s", s.Path("/spawns"), "Spawns")
	start := time.Now()
	res, err := b.Act(ctx, browser.ActRequest{Key: "act-s", Owner: "s", Page: p.ID, Step: click(browser.Target{Selector: "#twice"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the step announced %d pages", res.Spawns)
	// The user opens a tab of their own, just after the step.
	user, err := hand.Open(ctx, browser.OpenRequest{Key: "user", URL: "about:blank#the-users-tab"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hand.Close(context.Background(), browser.CloseRequest{Key: "user", ID: user.ID}) })
	e := r.wait(t, 5*time.Second, "the user's tab seen", func(e browser.Event) bool {
		return e.Type == browser.PageCreated && e.Page.ID == user.ID
	})
	t.Logf("user's tab seen %v after the step began", e.Time.Sub(start))
	if e.Page.Attributed != "" {
		t.Errorf("the user's tab, opened after the step, is attributed to %q (a blocked popup's announcement claimed it): %+v", e.Page.Attributed, e.Page)
	}
	wantErr(t, "adopt the user's tab under the step", b.Adopt(ctx, browser.AdoptRequest{Key: "stolen", ID: user.ID, Parent: "act-s"}), browser.ErrNotObserved)
	wantErr(t, "close the user's tab", b.Close(ctx, browser.CloseRequest{Key: "stolen", ID: user.ID}), browser.ErrNotOwned)
	mustBeOpen(t, "the user's tab", user.ID)
	// The popup the step did make is the session's, by its opener.
	sp := r.wait(t, 5*time.Second, "the popup", created(p.ID))
	adopt(t, b, "popup", sp.Page.ID, "s")
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "popup", ID: sp.Page.ID}) })
}

// TestModifiedEnterSpawnIsTheSessions: Control+Enter (and Shift+Enter) on a
// focused link of a session's page, the keyboard form of a Ctrl/Shift click,
// opens a tab or window that Chromium reports with no opener and no
// Page.windowOpen, after the page's own Page.frameRequestedNavigation with
// disposition newTab/newWindow. The step's own input made it: it is
// attributed to the step and adopted into its session, never left behind.
func TestModifiedEnterSpawnIsTheSessions(t *testing.T) {
	s := newAttackSite(t)
	b, r := newDriver(t, Options{})
	ctx := tctx(t)
	p := openAt(t, b, "s", s.Path("/spawns"), "Spawns")
	for _, key := range []string{"Control+Enter", "Shift+Enter"} {
		evaluate(t, b, p.ID, `document.getElementById('plain').focus()`)
		start := time.Now()
		res, err := b.Act(ctx, browser.ActRequest{Key: "act-s", Owner: "s", Page: p.ID, Step: browser.Step{Kind: browser.StepPress, Key: key}})
		if err != nil {
			t.Fatal(err)
		}
		e, ok := spawnedSince(r, start, 5*time.Second, p.ID)
		if !ok {
			t.Fatalf("%s: no page spawned", key)
		}
		id := e.Page.ID
		k := "spawn-" + key
		t.Cleanup(func() { userCloses(t, id) })
		if res.Spawns != 1 {
			t.Errorf("%s: the step reports %d spawns, want 1", key, res.Spawns)
		}
		if e.Page.OpenerID != p.ID && e.Page.Attributed != "act-s" {
			t.Errorf("%s: the step's own spawn %+v has neither the opener %s nor the step's key: it is left to nobody", key, e.Page, p.ID)
			continue
		}
		parent := "s"
		if e.Page.OpenerID == "" {
			parent = "act-s"
		}
		adopt(t, b, k, id, parent)
	}
}

// TestFrameSpawnFromBoundTabIsTheSessions: the session clicks a button in a
// cross-site (out-of-process) frame of a tab it binds; the button opens a
// popup (its opener is the bound tab). The session's own input made it: it is
// attributed to the step, as the same click in the tab's own document is.
func TestFrameSpawnFromBoundTabIsTheSessions(t *testing.T) {
	s := newAttackSite(t)
	b, r := newDriver(t, Options{})
	hand, _ := newDriver(t, Options{})
	ctx := tctx(t)
	user := openAt(t, hand, "user", s.Path("/framed"), "Framed")
	seen(t, r, user.ID)
	if err := b.Bind(ctx, browser.BindRequest{Key: "bound", ID: user.ID}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Release(context.Background(), browser.ReleaseRequest{Key: "bound", ID: user.ID}) })
	var (
		start time.Time
		res   browser.ActResult
		err   error
	)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// The frame loads after the page's title is there.
		start = time.Now()
		res, err = b.Act(ctx, browser.ActRequest{Key: "act-bound", Owner: "bound", Page: user.ID, Step: click(browser.Target{Text: "Frame open"})})
		if err == nil || !strings.Contains(err.Error(), "target_not_found") || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	e, ok := spawnedSince(r, start, 5*time.Second, user.ID)
	if !ok {
		t.Fatalf("no page spawned (step %+v); events:\n%s", res, r.dump())
	}
	t.Cleanup(func() { userCloses(t, e.Page.ID) })
	t.Logf("spawns %d, page %+v", res.Spawns, e.Page)
	if e.Page.Attributed != "act-bound" {
		t.Errorf("the popup the session's click opened from the bound tab's frame is not attributed to the step (%q): it stays the user's, and nothing of the session's closes it", e.Page.Attributed)
	}
	if res.Spawns != 1 {
		t.Errorf("the step reports %d spawns, want 1", res.Spawns)
	}
}

// TestFrameDialogStillReported: a dialog a cross-site frame opens during a step
// is still left for a dialog step (frames' sessions have Page enabled now).
func TestFrameDialogStillReported(t *testing.T) {
	s := newAttackSite(t)
	b, _ := newDriver(t, Options{})
	ctx := tctx(t)
	p := openAt(t, b, "s", s.Path("/framed"), "Framed")
	var (
		res browser.ActResult
		err error
	)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err = b.Act(ctx, browser.ActRequest{Key: "act-s", Owner: "s", Page: p.ID, Step: click(browser.Target{Text: "Frame alert"})})
		if err == nil || !strings.Contains(err.Error(), "target_not_found") || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("res %+v err %v", res, err)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dialog == nil {
		t.Errorf("the frame's alert was not reported")
	} else {
		_, err = b.Act(ctx, browser.ActRequest{Key: "act-s", Owner: "s", Page: p.ID, Step: browser.Step{Kind: browser.StepDialog, Accept: true}})
		t.Logf("dialog step: %v", err)
	}
}

// TestTabInWindowNeverTakesTheUsersBlankTab: a tab the session asks for in a
// window it owns is opened by a middle click on a link injected into its page
// there; the driver must recognize that tab by proof, not as "the next
// opener-less about:blank page". Meanwhile the user's own client opens
// about:blank windows as fast as it can: none is recorded under the session,
// navigated, or closed by the driver.
func TestTabInWindowNeverTakesTheUsersBlankTab(t *testing.T) {
	b, r := newDriver(t, Options{})
	ctx := tctx(t)
	anchor := openWindow(t, b, r, "anchor", "/quiet", fixture.TitleQuiet)
	var w string
	for deadline := time.Now().Add(5 * time.Second); w == "" && time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		s, err := b.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := s.Page(anchor.ID)
		w = p.WindowID
	}
	if w == "" {
		t.Fatal("the anchor's window is not known")
	}
	user, err := wire.Dial(ctx, chrome.WebSocketURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(user.Close)
	var (
		mu    sync.Mutex
		users []string
		stop  = make(chan struct{})
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := wire.Call(context.Background(), user, "", wire.CreateTarget{URL: "about:blank", NewWindow: true})
			if err == nil {
				mu.Lock()
				users = append(users, res.TargetID)
				mu.Unlock()
			}
		}
	}()
	var mine []string
	for i := range 6 {
		key := fmt.Sprintf("tab-%d", i)
		p, err := b.Open(ctx, browser.OpenRequest{Key: key, URL: "about:blank#session-tab", WindowID: w, Anchors: []string{"anchor"}})
		if err != nil {
			t.Errorf("open %s: %v", key, err)
			continue
		}
		if p.Misplaced != "" {
			t.Errorf("open %s: not in window %s: %s", key, w, p.Misplaced)
		}
		mine = append(mine, p.ID)
		t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: key, ID: p.ID}) })
	}
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Cleanup(func() {
		for _, id := range users {
			_, _ = wire.Call(context.Background(), user, "", wire.CloseTarget{TargetID: id})
		}
	})
	t.Logf("the user opened %d blank windows meanwhile", len(users))
	for _, id := range users {
		if rec, ok := b.ledger.Get(id); ok {
			t.Errorf("the user's blank window %s is recorded under %s (%s)", id, rec.Key, rec.Kind)
		}
		if slices.Contains(mine, id) {
			t.Errorf("the session's tab is the user's blank window %s", id)
		}
	}
	ps := chromiumPages(t)
	for _, id := range users {
		if _, ok := ps[id]; !ok {
			t.Errorf("the user's blank window %s was closed", id)
		}
	}
}

// TestBlockedPopupNeverClaimsTheUsersTabDuringTheStep: as
// TestBlockedPopupNeverClaimsTheUsersTab, but the click handler keeps the page
// busy after its two window.opens, and the user opens their tab while the
// step's input still runs. The blocked popup's announcement never answers a
// page without an opener (a page window.open makes carries its opener), so the
// user's tab is not the step's even then.
func TestBlockedPopupNeverClaimsTheUsersTabDuringTheStep(t *testing.T) {
	s := newAttackSite(t)
	b, r := newDriver(t, Options{})
	hand, _ := newDriver(t, Options{})
	ctx := tctx(t)
	p := openAt(t, b, "s", s.Path("/spawns"), "Spawns")
	done := make(chan error, 1)
	go func() {
		_, err := b.Act(ctx, browser.ActRequest{Key: "act-s", Owner: "s", Page: p.ID, Step: click(browser.Target{Selector: "#twicebusy"})})
		done <- err
	}()
	sp := r.wait(t, 5*time.Second, "the popup", created(p.ID))
	user, err := hand.Open(ctx, browser.OpenRequest{Key: "user", URL: "about:blank#the-users-tab"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hand.Close(context.Background(), browser.CloseRequest{Key: "user", ID: user.ID}) })
	e := r.wait(t, 5*time.Second, "the user's tab seen", func(e browser.Event) bool {
		return e.Type == browser.PageCreated && e.Page.ID == user.ID
	})
	select {
	case err := <-done:
		t.Logf("the step had returned (%v) when the user's tab appeared", err)
	default:
		t.Log("the step's input still runs as the user's tab appears")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if e.Page.Attributed != "" {
		t.Errorf("the user's tab, opened while the step ran, is attributed to %q: %+v", e.Page.Attributed, e.Page)
	}
	wantErr(t, "adopt the user's tab under the step", b.Adopt(ctx, browser.AdoptRequest{Key: "stolen", ID: user.ID, Parent: "act-s"}), browser.ErrNotObserved)
	adopt(t, b, "popup", sp.Page.ID, "s")
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "popup", ID: sp.Page.ID}) })
}

// TestBusyHandlerSpawnFromBoundTabIsTheSessions: the session clicks, in a tab
// it binds, a button whose handler calls window.open and then works on for a
// while. Page.windowOpen still comes before the page's targetCreated (the
// renderer sends it with its synchronous request for the window), so the
// popup is attributed to the step when it is reported.
func TestBusyHandlerSpawnFromBoundTabIsTheSessions(t *testing.T) {
	s := newAttackSite(t)
	b, r := newDriver(t, Options{})
	hand, _ := newDriver(t, Options{})
	ctx := tctx(t)
	user := openAt(t, hand, "user", s.Path("/spawns"), "Spawns")
	seen(t, r, user.ID)
	if err := b.Bind(ctx, browser.BindRequest{Key: "bound", ID: user.ID}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Release(context.Background(), browser.ReleaseRequest{Key: "bound", ID: user.ID}) })
	start := time.Now()
	res, err := b.Act(ctx, browser.ActRequest{Key: "act-bound", Owner: "bound", Page: user.ID, Step: click(browser.Target{Selector: "#openbusy"})})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := spawnedSince(r, start, 5*time.Second, user.ID)
	if !ok {
		t.Fatal("no page spawned")
	}
	t.Cleanup(func() { userCloses(t, e.Page.ID) })
	time.Sleep(200 * time.Millisecond)
	snap, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := snap.Page(e.Page.ID)
	t.Logf("spawns %d; reported %+v; now %+v", res.Spawns, e.Page, now)
	if e.Page.Attributed != "act-bound" && now.Attributed != "act-bound" {
		t.Errorf("the popup the session's click opened from its bound tab is not attributed to the step: it stays the user's")
	}
}
