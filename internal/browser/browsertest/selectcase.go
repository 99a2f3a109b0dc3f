package browsertest

import (
	"errors"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Verbs is implemented by worlds that serve the fixture's /verbs page (a
// button "Menu" whose hover sets the title to "Hovered", and a drop-down
// "Country" offering Choose, Canada (ca), France (fr) and a disabled
// Atlantis, whose change sets the title to "Chose <value>"). Worlds without it
// skip the select test.
type Verbs interface {
	VerbsURL() string
	// Title is the page's title as the browser (not the driver) shows it.
	Title(t testing.TB, id string) string
}

// Select chooses an option of a drop-down by label or by value, as the
// page's change handler sees; a target that is no drop-down, an option it
// does not offer and a disabled one are refused (target_not_found), and the
// background tab stays in the background. Hover over "Menu" fires its
// mouseover.
func testSelect(t *testing.T, e *env) {
	v, ok := e.w.(Verbs)
	if !ok {
		e.notServed("/verbs")
	}
	win, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", URL: v.VerbsURL(), WindowID: win})
	act := func(s browser.Step) error {
		_, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: s})
		return err
	}
	title := func(what, want string) {
		t.Helper()
		e.waitTitle(v.Title, p.ID, what+": ", want)
	}
	country := browser.Target{Text: "Country"}
	e.eventually("the drop-down is there", func() error {
		return act(browser.Step{Kind: browser.StepSelect, Target: country, Text: "Canada"})
	})
	title("select by label", "Chose ca")
	noErr(t, "select by value", act(browser.Step{Kind: browser.StepSelect, Target: country, Text: "fr"}))
	title("select by value", "Chose fr")
	for _, c := range []struct {
		what string
		s    browser.Step
	}{
		{"an option it does not offer", browser.Step{Kind: browser.StepSelect, Target: country, Text: "Narnia"}},
		{"a disabled option", browser.Step{Kind: browser.StepSelect, Target: country, Text: "Atlantis"}},
		{"a button", browser.Step{Kind: browser.StepSelect, Target: browser.Target{Text: "Menu"}, Text: "Canada"}},
	} {
		var ae *browser.ActError
		if err := act(c.s); !errors.As(err, &ae) || ae.Reason != "target_not_found" {
			t.Errorf("select %s: %v, want target_not_found", c.what, err)
		}
	}
	title("after the refusals", "Chose fr")
	noErr(t, "hover", act(browser.Step{Kind: browser.StepHover, Target: browser.Target{Text: "Menu"}}))
	title("hover", "Hovered")
	if f, ok := e.w.(Focus); ok {
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window after select and hover")
		}
		if p.WindowID == win && f.Visible(t, p.ID) {
			t.Error("the background tab became visible")
		}
	}
}
