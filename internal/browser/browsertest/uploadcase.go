package browsertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Upload puts files into a file input as the page's own script reads them
// (name, type, size and content), by the input's label and through the label
// of a hidden input (styled upload buttons), which an observation lists as a
// button; several files for an input that takes one, and a target that is no
// file input, are refused (target_not_found); the background tab stays in the
// background.
func testUpload(t *testing.T, e *env) {
	v, ok := e.w.(Verbs)
	if !ok {
		e.notServed("/verbs")
	}
	win, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", URL: v.VerbsURL(), WindowID: win})
	act := func(s browser.Step) (browser.ActResult, error) {
		return e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: s})
	}
	title := func(what, want string) {
		t.Helper()
		e.waitTitle(v.Title, p.ID, what+": ", want)
	}
	resume := browser.UploadFile{Name: "resume.txt", Type: "text/plain", LastModified: 1764979200000, Data: []byte("Ada Lovelace")}
	e.eventually("the file input is there", func() error {
		_, err := act(browser.Step{Kind: browser.StepUpload, Target: browser.Target{Text: "Resume"}, Files: []browser.UploadFile{resume}})
		return err
	})
	title("upload by the input's label", "Uploaded resume.txt|text/plain|12|Ada Lovelace")

	// A hidden input's label is what the user clicks: observe lists it.
	res, err := act(browser.Step{Kind: browser.StepObserve})
	noErr(t, "observe", err)
	i := slices.IndexFunc(res.Observation.Elements, func(el browser.Element) bool { return el.Name == "Attach photos" })
	if i < 0 {
		t.Fatalf("observe lists no %q element: %+v", "Attach photos", res.Observation.Elements)
	}
	if got := res.Observation.Elements[i].Role; got != "button" {
		t.Errorf("the hidden input's label has role %q, want button", got)
	}
	photos := browser.Target{Ref: res.Observation.Elements[i].ID, Document: res.Observation.Document}
	a, b := browser.UploadFile{Name: "a.png", Type: "image/png", Data: []byte("\x89PNG a")}, browser.UploadFile{Name: "b.png", Type: "image/png", Data: []byte("\x89PNG b")}
	_, err = act(browser.Step{Kind: browser.StepUpload, Target: photos, Files: []browser.UploadFile{a, b}})
	noErr(t, "upload two files by the hidden input's label", err)
	title("two files through the label", "Attached a.png,b.png")

	for _, c := range []struct {
		what string
		s    browser.Step
	}{
		{"two files into an input that takes one", browser.Step{Kind: browser.StepUpload, Target: browser.Target{Text: "Resume"}, Files: []browser.UploadFile{a, b}}},
		{"a button", browser.Step{Kind: browser.StepUpload, Target: browser.Target{Text: "Menu"}, Files: []browser.UploadFile{a}}},
		{"a text field", browser.Step{Kind: browser.StepUpload, Target: browser.Target{Text: "Name"}, Files: []browser.UploadFile{a}}},
	} {
		var ae *browser.ActError
		if _, err := act(c.s); !errors.As(err, &ae) || ae.Reason != "target_not_found" {
			t.Errorf("upload %s: %v, want target_not_found", c.what, err)
		}
	}
	title("after the refusals", "Attached a.png,b.png")
	if f, ok := e.w.(Focus); ok {
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window after the uploads")
		}
		if p.WindowID == win && f.Visible(t, p.ID) {
			t.Error("the background tab became visible")
		}
	}
}
