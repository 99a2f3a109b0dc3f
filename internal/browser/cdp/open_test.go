package cdp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestOpenReturnsBeforeItsPageCommits: Open returns once Chromium has taken
// the navigation from the page's marker to its url, not when the page commits
// (which costs the start of the site's renderer), and meanwhile the page is
// reported at its url: no return value, event or snapshot shows the marker.
// The site holds its answer until Open has returned (or, so that the test
// cannot hang, until 4 s passed: an Open that waits for the commit returns
// only after that, and the test fails).
func TestOpenReturnsBeforeItsPageCommits(t *testing.T) {
	ctx := tctx(t)
	release := make(chan struct{})
	var released atomic.Bool
	let := func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	}
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/held" {
			http.NotFound(w, r)
			return
		}
		select {
		case asked <- struct{}{}:
		default:
		}
		<-release
		fmt.Fprint(w, "<title>committed at last</title>")
	}))
	defer srv.Close()
	defer let()

	b, rec := newDriver(t, Options{})
	u := srv.URL + "/held"
	fallback := time.AfterFunc(4*time.Second, let)
	defer fallback.Stop()
	p, err := b.Open(ctx, browser.OpenRequest{Key: "held", URL: u})
	if err != nil {
		t.Fatal(err)
	}
	if released.Load() {
		t.Fatal("Open returned only after the site answered: it waited for the page to commit")
	}
	if p.URL != u {
		t.Errorf("Open returned the page at %q, want %q", p.URL, u)
	}
	// The browser asks the site while the test holds the answer: the page has
	// left the marker for good, and has not committed.
	select {
	case <-asked:
	case <-time.After(3 * time.Second):
		t.Fatal("the site was never asked for the page")
	}
	s, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, pg := range s.Pages {
		if pg.ID == p.ID {
			seen = true
			if pg.URL != u || strings.HasPrefix(pg.Title, markerPrefix) {
				t.Errorf("while it loads the snapshot shows the page at %q titled %q, want %q", pg.URL, pg.Title, u)
			}
		}
	}
	if !seen {
		t.Errorf("the snapshot has no page %s", p.ID)
	}
	// A step on the page waits for the page to commit its url: it never runs
	// on the marker's empty document (whose url is the nonce).
	type acted struct {
		res      browser.ActResult
		err      error
		released bool
	}
	done := make(chan acted, 1)
	go func() {
		// A key press needs no target: nothing else would hold it.
		res, err := b.Act(ctx, browser.ActRequest{Key: "press", Owner: "held", Page: p.ID, Step: browser.Step{Kind: browser.StepPress, Key: "End"}})
		done <- acted{res, err, released.Load()}
	}()
	select {
	case a := <-done:
		t.Fatalf("a step returned while the page had not committed (released: %v): %v", a.released, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	let()
	if a := <-done; a.err != nil || !a.released {
		t.Fatalf("the press once the site answered: %v (released %v)", a.err, a.released)
	}
	res, err := b.Act(ctx, browser.ActRequest{Key: "observe", Owner: "held", Page: p.ID, Step: browser.Step{Kind: browser.StepObserve}})
	a := acted{res, err, true}
	if a.err != nil || a.res.Observation == nil {
		t.Fatalf("observe once the site answered: %+v %v", a.res.Observation, a.err)
	}
	if a.res.Observation.URL != u {
		t.Errorf("the step observed the page at %q, want %q", a.res.Observation.URL, u)
	}
	if o := fmt.Sprintf("%+v", *a.res.Observation); strings.Contains(o, markerPrefix) {
		t.Errorf("the observation shows the Open's marker: %s", o)
	}
	rec.wait(t, 10*time.Second, "the page's title once the site answered", func(e browser.Event) bool {
		return e.Page.ID == p.ID && e.Page.Title == "committed at last"
	})
	for _, e := range rec.all() {
		if strings.Contains(e.Page.URL, markerPrefix) || strings.Contains(e.Page.Title, markerPrefix) {
			t.Errorf("an event shows an Open's marker: %s %+v\n%s", e.Type, e.Page, rec.dump())
		}
	}
	if err := b.Close(ctx, browser.CloseRequest{Key: "held", ID: p.ID}); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesWhatIsNoURL: a url no browser can load is refused before
// anything is created, with the corrected call, and nothing is recorded.
func TestOpenRefusesWhatIsNoURL(t *testing.T) {
	ctx := tctx(t)
	b, _ := newDriver(t, Options{})
	before := len(chromiumPages(t))
	_, err := b.Open(ctx, browser.OpenRequest{Key: "bad", URL: "http://["})
	if err == nil || !strings.Contains(err.Error(), "absolute url") {
		t.Fatalf("open of http://[: %v, want a refusal that says what to give", err)
	}
	if _, ok := b.ledger.PageOf("bad"); ok {
		t.Error("a refused open recorded a page")
	}
	if n := len(chromiumPages(t)); n != before {
		t.Errorf("a refused open left %d pages, want %d", n, before)
	}
}
