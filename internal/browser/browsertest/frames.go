package browsertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Frames is implemented by worlds that serve the fixture's /frames page: a
// login form in an open shadow root ("Shadow user", "Shadow sign in": title
// "Shadow <value>"), "Nested go" in a nested shadow root (title "Nested"), a
// slotted light-DOM "Slotted" button, a same-origin iframe ("Frame user",
// "Frame sign in": the top title "Frame <value>", a link "Next" to a page
// whose "Frame sign in" sets "Retargeted" and which has a "Back" button), and
// a sandboxed iframe the page script cannot read.
type Frames interface {
	FramesURL() string
	// Title is the page's title as the browser (not the driver) shows it.
	Title(t testing.TB, id string) string
}

// testFrames: observe lists the inputs and buttons inside open shadow roots
// (nested and slotted, once each) and a same-origin iframe (their refs naming
// the frame), the outline marks the unreadable frame; Type and Click by ref and
// by text reach them (the page's handlers see the typed value); a ref of a
// frame that navigated is stale_ref, never the new document's look-alike.
func testFrames(t *testing.T, e *env) {
	f, ok := e.w.(Frames)
	if !ok {
		e.notServed("/frames")
	}
	win, _ := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", URL: f.FramesURL(), WindowID: win})
	var o *browser.PageObservation
	byName := map[string]browser.Element{}
	observe := func(want ...string) {
		t.Helper()
		e.eventually("observe lists "+strings.Join(want, ", "), func() error {
			res, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepObserve}})
			if err != nil {
				return err
			}
			o = res.Observation
			if o == nil {
				return errors.New("no observation")
			}
			byName = map[string]browser.Element{}
			count := map[string]int{}
			for _, el := range o.Elements {
				byName[el.Name] = el
				count[el.Name]++
			}
			for _, n := range want {
				if count[n] != 1 {
					return fmt.Errorf("%d elements named %q in %+v", count[n], n, o.Elements)
				}
			}
			return nil
		})
	}
	observe("Shadow user", "Shadow sign in", "Nested go", "Slotted", "Frame user", "Frame sign in")
	if _, ok := byName["Sandboxed"]; ok {
		t.Error("the sandboxed (cross-origin) frame's button was observed")
	}
	for _, n := range []string{"Frame user", "Frame sign in"} {
		if !strings.HasPrefix(byName[n].ID, "f") || !strings.Contains(byName[n].ID, ".e") {
			t.Errorf("%s in the iframe has ref %q, which does not name its frame (f<k>.e<n>)", n, byName[n].ID)
		}
	}
	if text := outlineText(o.Outline); !strings.Contains(text, "cannot reach") || !strings.Contains(text, "Frame sign in") || !strings.Contains(text, "Shadow sign in") {
		t.Errorf("the outline does not show the frame and shadow content, or does not mark the unreadable frame:\n%s", head(text))
	}
	ref := func(name string) browser.Target {
		return browser.Target{Ref: byName[name].ID, Document: o.Document}
	}
	act := func(s browser.Step) {
		t.Helper()
		if err := e.actStep(p.ID, s); err != nil {
			t.Fatalf("%s %+v: %v", s.Kind, s.Target, err)
		}
	}
	title := func(want string) {
		t.Helper()
		e.waitTitle(f.Title, p.ID, "", want)
	}
	for _, c := range []struct{ field, button, want string }{
		{"Shadow user", "Shadow sign in", "Shadow "},
		{"Frame user", "Frame sign in", "Frame "},
	} {
		act(browser.Step{Kind: browser.StepType, Target: ref(c.field), Text: "ada"})
		act(browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: c.button}})
		title(c.want + "ada")
		act(browser.Step{Kind: browser.StepType, Target: browser.Target{Text: c.field}, Text: "!"})
		act(browser.Step{Kind: browser.StepClick, Target: ref(c.button)})
		title(c.want + "ada!")
	}
	act(browser.Step{Kind: browser.StepClick, Target: ref("Nested go")})
	title("Nested")
	act(browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Slotted"}})
	title("Slotted")

	old := ref("Frame sign in")
	act(browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Next"}})
	observe("Back")
	err := e.actStep(p.ID, browser.Step{Kind: browser.StepClick, Target: old})
	var ae *browser.ActError
	if !errors.As(err, &ae) || ae.Reason != "stale_ref" {
		t.Errorf("a click by the ref of a frame that navigated: %v, want stale_ref", err)
	}
	if got := f.Title(t, p.ID); got != "Slotted" {
		t.Errorf("title %q after the stale ref: the ref was retargeted", got)
	}
}
