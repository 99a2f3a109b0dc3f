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
	fallback := time.AfterFunc(4*time.Second, let)
	defer fallback.Stop()

	b, rec := newDriver(t, Options{})
	u := srv.URL + "/held"
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
	let()
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
