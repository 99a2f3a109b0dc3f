package browsertest

import (
	"errors"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Fill fills the /verbs page's form in one step, replacing what a field
// held, as the page's input handler sees; a fill with one target that is no
// text field (a button, a read-only field) or not on the page is refused
// naming that field, and types into none of the others. The background tab
// stays in the background.
func testFill(t *testing.T, e *env) {
	v, ok := e.w.(Verbs)
	if !ok {
		e.notServed("/verbs")
	}
	win, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", URL: v.VerbsURL(), WindowID: win})
	fill := func(fields ...browser.FillField) error {
		_, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepFill, Fields: fields}})
		return err
	}
	title := func(what, want string) {
		t.Helper()
		e.waitTitle(v.Title, p.ID, what+": ", want)
	}
	name, email := browser.Target{Text: "Name"}, browser.Target{Text: "Email"}
	e.eventually("the form is there", func() error {
		return fill(browser.FillField{Target: name, Text: "Ada Lovelace"}, browser.FillField{Target: email, Text: "ada@example.com"})
	})
	title("fill", "Filled Ada Lovelace|ada@example.com")
	for _, c := range []struct {
		what   string
		bad    browser.FillField
		reason string
	}{
		{"a button", browser.FillField{Target: browser.Target{Text: "Menu"}, Text: "x"}, "target_not_found"},
		{"a read-only field", browser.FillField{Target: browser.Target{Text: "Account"}, Text: "x"}, "target_not_found"},
		{"a field the page does not have", browser.FillField{Target: browser.Target{Text: "Telephone"}, Text: "x"}, "target_not_found"},
	} {
		err := fill(browser.FillField{Target: name, Text: "Grace Hopper"}, c.bad)
		var ae *browser.ActError
		switch {
		case !errors.As(err, &ae) || ae.Reason != c.reason:
			t.Errorf("fill with %s: %v, want %s", c.what, err, c.reason)
		case !strings.Contains(ae.Message, "field 1") || !strings.Contains(ae.Message, "no field was filled"):
			t.Errorf("fill with %s: the refusal does not name field 1 and say nothing was filled: %s", c.what, ae.Message)
		}
	}
	title("after the refusals: nothing typed", "Filled Ada Lovelace|ada@example.com")
	if f, ok := e.w.(Focus); ok {
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window after fill")
		}
		if p.WindowID == win && f.Visible(t, p.ID) {
			t.Error("the background tab became visible")
		}
	}
}
