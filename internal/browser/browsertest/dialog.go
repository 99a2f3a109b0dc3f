package browsertest

import (
	"errors"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Dialogs is implemented by worlds that serve the fixture's /dialog page (a
// button "Delete" asking confirm("Delete everything?"): title "Deleted" when
// accepted, "Kept" when dismissed; "Rename" asking prompt("New name?",
// "draft"): "Renamed <answer>", or "Not renamed"; "Notify" showing
// alert("Saved"), then "Notified"). Worlds without it skip the dialog test.
type Dialogs interface {
	DialogURL() string
	// Title is the page's title as the browser (not the driver) shows it.
	Title(t testing.TB, id string) string
}

// A dialog a step's input opens is left open and returned with the step; every
// other step on the page is refused (dialog_open) while it shows; a dialog
// step answers it (accept or dismiss; a prompt gets the step's text, else its
// default), and one with no dialog showing is refused (no_dialog). The
// background tab stays in the background.
func testDialog(t *testing.T, e *env) {
	d, ok := e.w.(Dialogs)
	if !ok {
		e.notServed("/dialog")
	}
	win, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", URL: d.DialogURL(), WindowID: win})
	act := func(s browser.Step) (browser.ActResult, error) {
		return e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: s})
	}
	title := func(what, want string) {
		t.Helper()
		e.waitTitle(d.Title, p.ID, what+": ", want)
	}
	refused := func(what string, s browser.Step, reason string) {
		t.Helper()
		_, err := act(s)
		var ae *browser.ActError
		if !errors.As(err, &ae) || ae.Reason != reason {
			t.Fatalf("%s: %v, want a refusal %s", what, err, reason)
		}
		if reason == browser.ReasonDialogOpen && !strings.Contains(ae.Message, "Dialog step") {
			t.Errorf("%s: the refusal does not name the Dialog step: %s", what, ae.Message)
		}
	}
	opens := func(what, button string, want browser.Dialog) {
		t.Helper()
		r, err := act(browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: button}})
		noErr(t, what, err)
		if r.Dialog == nil || *r.Dialog != want {
			t.Fatalf("%s: the step returned dialog %+v, want %+v", what, r.Dialog, want)
		}
	}
	answer := func(what string, accept bool, text string) {
		t.Helper()
		_, err := act(browser.Step{Kind: browser.StepDialog, Accept: accept, Text: text})
		noErr(t, what, err)
	}
	dialog := browser.Step{Kind: browser.StepDialog}
	e.eventually("the page is there", func() error {
		r, err := act(browser.Step{Kind: browser.StepObserve})
		if err != nil {
			return err
		}
		for _, el := range r.Observation.Elements {
			if el.Name == "Rename" {
				return nil
			}
		}
		return errors.New("no Rename button yet")
	})
	refused("a dialog step with none showing", dialog, browser.ReasonNoDialog)

	confirm := browser.Dialog{Type: "confirm", Message: "Delete everything?"}
	before := d.Title(t, p.ID)
	opens("click Delete", "Delete", confirm)
	refused("observe while the confirm shows", browser.Step{Kind: browser.StepObserve}, browser.ReasonDialogOpen)
	refused("click while the confirm shows", browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Rename"}}, browser.ReasonDialogOpen)
	if got := d.Title(t, p.ID); got != before {
		t.Fatalf("title %q while the confirm shows: something answered it", got)
	}
	answer("dismiss the confirm", false, "")
	title("dismissed", "Kept")
	refused("a dialog step after the answer", dialog, browser.ReasonNoDialog)
	opens("click Delete again", "Delete", confirm)
	answer("accept the confirm", true, "")
	title("accepted", "Deleted")

	prompt := browser.Dialog{Type: "prompt", Message: "New name?", DefaultPrompt: "draft"}
	opens("click Rename", "Rename", prompt)
	answer("answer the prompt", true, "Ada")
	title("prompt answered", "Renamed Ada")
	opens("click Rename again", "Rename", prompt)
	answer("accept the prompt's default", true, "")
	title("prompt's default", "Renamed draft")
	opens("click Rename a third time", "Rename", prompt)
	answer("dismiss the prompt", false, "")
	title("prompt dismissed", "Not renamed")

	opens("click Notify", "Notify", browser.Dialog{Type: "alert", Message: "Saved"})
	answer("accept the alert", true, "")
	title("alert accepted", "Notified")
	if _, err := act(browser.Step{Kind: browser.StepObserve}); err != nil {
		t.Fatalf("observe once answered: %v", err)
	}
	if f, ok := e.w.(Focus); ok {
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window")
		}
		if p.WindowID == win && f.Visible(t, p.ID) {
			t.Error("the background tab became visible")
		}
	}
}
