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
	// Simulated: the world is a model of a browser (the fake), not a real
	// one; it serves only the fixture pages it models, and a case whose page
	// it does not serve is not part of its conformance (Run leaves it out and
	// logs so). A real browser's world serves every page: a missing one fails
	// the case (notServed).
	Simulated bool
}

// Capabilities is implemented by worlds whose driver differs (Caps).
type Capabilities interface {
	Caps() Caps
}

// notServed fails a case whose fixture page the world does not serve. Only a
// real browser's world gets here (Run leaves such cases out on a simulated
// world): a real world must serve every page, so this is a failure, never a skip.
func (e *env) notServed(page string) {
	e.t.Helper()
	e.t.Fatalf("the world serves no %s page; a real browser's world must implement the page's interface", page)
}

// serves reports whether w serves the fixture page a case needs (its
// interface); nil needs none.
func serves[T any](w World) bool { _, ok := w.(T); return ok }

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
		// page: the fixture page the case needs, when it needs one; a
		// simulated world that does not serve it does not run the case.
		page   string
		serves func(World) bool
	}{
		{"OpenIsIdempotentByKeyAndNeverFocuses", testOpen, "", nil},
		{"CloseIsIdempotent", testCloseIdempotent, "", nil},
		{"CloseRefusesPagesNotOwned", testCloseNotOwned, "", nil},
		{"LastTabLeavesBlank", testLastTab, "", nil},
		{"ConcurrentCleanupsKeepTheWindow", testConcurrentCleanup, "", nil},
		{"AdoptChecksWhatTheDriverSaw", testAdopt, "", nil},
		{"BindAndRelease", testBindRelease, "", nil},
		{"UserSpawnFromBoundTabStaysTheUsers", testUserSpawnFromBound, "", nil},
		{"ActRefusesPagesNotOwned", testActNotOwned, "", nil},
		{"HistoryBackForwardReload", testHistory, "", nil},
		{"HoverClicksNothing", testHover, "", nil},
		{"SelectAndHoverReachThePage", testSelect, "/verbs", serves[Verbs]},
		{"ObserveReadsTheOutline", testOutline, "/reading", serves[Reading]},
		{"FillIsCheckedThenTyped", testFill, "/verbs", serves[Verbs]},
		{"UploadPutsFilesIntoTheInput", testUpload, "/verbs", serves[Verbs]},
		{"FramesAndShadowRootsAreReached", testFrames, "/frames", serves[Frames]},
		{"CrossSiteFramesAreReached", testCrossSite, "/cross-site", serves[CrossSite]},
		{"DialogsWaitForADialogStep", testDialog, "/dialog", serves[Dialogs]},
		{"ScreenshotTakesViewportAndElement", testScreenshot, "", nil},
		{"EventOrder", testEventOrder, "", nil},
		{"ReconnectDeclaresNothingGone", testReconnect, "", nil},
	}
	// The factory makes the same kind of world every time: the first case's
	// tells which pages the rest can use (the page cases come after it).
	var world World
	for _, tc := range tests {
		if tc.serves != nil && world != nil && capsOf(world).Simulated && !tc.serves(world) {
			// Not a skip: the case is not part of a simulated world's
			// conformance (it models no such page). Real worlds run it.
			t.Logf("%s: not run on a simulated world, which models no %s page", tc.name, tc.page)
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			b, w := factory(t)
			world = w
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
// waitTitle waits until title (the world's view of the browser, not the
// driver's) shows want on page; what prefixes the wait's description.
func (e *env) waitTitle(title func(testing.TB, string) string, page, what, want string) {
	e.t.Helper()
	e.eventually(what+"title "+want, func() error {
		if got := title(e.t, page); got != want {
			return errors.New("title " + got)
		}
		return nil
	})
}

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
