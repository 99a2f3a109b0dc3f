package browsertest

import (
	"errors"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Hover moves the pointer over a target and clicks nothing: hovering the
// suite's spawning link opens no page, a target that is not on the page is
// refused (target_not_found), a hover needs a target, and the background tab
// stays in the background.
func testHover(t *testing.T, e *env) {
	win, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", WindowID: win})
	hover := func(tg browser.Target) error {
		_, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepHover, Target: tg}})
		return err
	}
	before := len(e.snapshot().Pages)
	var err error
	e.eventually("hover over "+ActSpawnSelector, func() error {
		// A page that was just opened may not have parsed the link yet.
		err = hover(browser.Target{Selector: ActSpawnSelector})
		return err
	})
	if n := len(e.snapshot().Pages); n != before {
		t.Fatalf("a hover over a link changed the pages: %d, was %d", n, before)
	}
	err = hover(browser.Target{Text: "no element reads this"})
	var ae *browser.ActError
	if !errors.As(err, &ae) || ae.Reason != "target_not_found" {
		t.Fatalf("hover over nothing: %v, want target_not_found", err)
	}
	if err := hover(browser.Target{}); err == nil {
		t.Fatal("a hover without a target ran")
	}
	if f, ok := e.w.(Focus); ok {
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window after a hover")
		}
		if p.WindowID == win && f.Visible(t, p.ID) {
			t.Error("the background tab became visible")
		}
	}
}
