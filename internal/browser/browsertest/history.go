package browsertest

import (
	"errors"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Back, Forward and Reload walk the page's own history, each waiting for the
// document it loads (refs of the old one are stale: a new document id); a
// move with no entry that way is refused (ReasonNoHistory) and loads nothing;
// and none of them focuses: a background tab in the user's window stays in
// the background.
func testHistory(t *testing.T, e *env) {
	win, user := e.userWindow(1)
	first := e.w.URL()
	p := e.open(browser.OpenRequest{Key: "k", URL: first, WindowID: win})
	second := first + "&history=second"
	if !strings.Contains(first, "?") {
		second = first + "?history=second"
	}
	act := func(what string, s browser.Step) error {
		t.Helper()
		_, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: s})
		return err
	}
	observe := func(what string) *browser.PageObservation {
		t.Helper()
		r, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepObserve}})
		noErr(t, what+": observe", err)
		if r.Observation == nil {
			t.Fatalf("%s: observe returned no observation", what)
		}
		return r.Observation
	}
	// seen are the documents observed so far: every load makes a new one, also
	// a Back or Forward to a document the browser kept (back/forward cache), so
	// that no ref observed before a move is valid after it.
	seen := map[string]bool{}
	must := func(what string, s browser.Step, wantURL string) {
		t.Helper()
		noErr(t, what, act(what, s))
		o := observe(what)
		if o.URL != wantURL {
			t.Fatalf("%s: the page shows %s, want %s", what, o.URL, wantURL)
		}
		if seen[o.Document] {
			t.Fatalf("%s: document %s was observed before: its refs would not be stale", what, o.Document)
		}
		seen[o.Document] = true
	}
	noHistory := func(what string, kind browser.StepKind, wantURL string) {
		t.Helper()
		before := observe(what + ": before")
		err := act(what, browser.Step{Kind: kind})
		var ae *browser.ActError
		if !errors.As(err, &ae) || ae.Reason != browser.ReasonNoHistory {
			t.Fatalf("%s: %v, want a refusal %s", what, err, browser.ReasonNoHistory)
		}
		if !strings.Contains(ae.Message, "Navigate") {
			t.Errorf("%s: the refusal does not say what to do instead: %s", what, ae.Message)
		}
		after := observe(what + ": after")
		if after.URL != wantURL || after.Document != before.Document {
			t.Fatalf("%s: a refused move loaded something: %s (%s), was %s (%s)", what, after.URL, after.Document, before.URL, before.Document)
		}
	}

	o := observe("opened")
	if o.URL != first {
		t.Fatalf("opened: the page shows %s, want %s", o.URL, first)
	}
	seen[o.Document] = true
	noHistory("forward with nothing ahead", browser.StepForward, first)
	must("navigate", browser.Step{Kind: browser.StepNavigate, URL: second}, second)
	must("back", browser.Step{Kind: browser.StepBack}, first)
	must("forward", browser.Step{Kind: browser.StepForward}, second)
	must("reload", browser.Step{Kind: browser.StepReload}, second)
	must("back after reload", browser.Step{Kind: browser.StepBack}, first)
	noHistory("back before the first page", browser.StepBack, first)
	if f, ok := e.w.(Focus); ok {
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window after back, forward and reload")
		}
		if p.WindowID == win && f.Visible(t, p.ID) {
			t.Error("the background tab became visible")
		}
	}
}
