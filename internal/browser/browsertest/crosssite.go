package browsertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// CrossSite is implemented by worlds that serve the fixture's /cross-site page
// (internal/local/fixture/crosssite.go): a page framing a login form of
// another site (an out-of-process frame under site isolation: Username,
// Password, "Sign in", a covered "Hidden prize", a drop-down "Plan", a file
// input "Photo", a "Peek"
// button that reports a hover, a link "Next page" to a look-alike "Sign in"),
// and a frame of that site the page covers ("Under glass"). The frames report
// to the page by postMessage, which sets its title ("Cross <what>").
type CrossSite interface {
	CrossSiteURL() string
	// CrossSitePassword is the password the login accepts.
	CrossSitePassword() string
	// CrossSiteLogins is what the fixture's server recorded of the logins.
	CrossSiteLogins(t testing.TB) string
	// Title is the page's title as the browser (not the driver) shows it.
	Title(t testing.TB, id string) string
}

// testCrossSite: observe lists the elements of a cross-site (out-of-process)
// frame with refs that name the frame; Fill by ref and Click by text sign in
// (the server records it); Select, Type and Hover reach the frame; an element
// the frame covers and a frame the page covers are refused; under a url policy
// that refuses the frame's url a step on it is url_not_allowed and an
// observation leaves it out; a ref of the frame after it navigated is
// stale_ref, never the look-alike.
func testCrossSite(t *testing.T, e *env) {
	f, ok := e.w.(CrossSite)
	if !ok {
		e.notServed("/cross-site")
	}
	win, _ := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", URL: f.CrossSiteURL(), WindowID: win})
	var o *browser.PageObservation
	byName := map[string]browser.Element{}
	observe := func(want ...string) {
		t.Helper()
		e.eventually("observe lists "+strings.Join(want, ", "), func() error {
			res, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepObserve}})
			if err != nil {
				return err
			}
			if o = res.Observation; o == nil {
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
			if text := outlineText(o.Outline); !strings.Contains(text, want[0]) {
				return fmt.Errorf("the outline does not show %q:\n%s", want[0], head(text))
			}
			return nil
		})
	}
	observe("Sign in", "Username", "Password", "Next page", "Under glass")
	for _, n := range []string{"Username", "Sign in"} {
		if !strings.Contains(byName[n].ID, ".e") {
			t.Errorf("%s in the cross-site frame has ref %q, which does not name its frame", n, byName[n].ID)
		}
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
	refused := func(what string, s browser.Step, reason string) {
		t.Helper()
		err := e.actStep(p.ID, s)
		var ae *browser.ActError
		if !errors.As(err, &ae) || ae.Reason != reason {
			t.Errorf("%s: %v, want %s", what, err, reason)
		}
	}

	act(browser.Step{Kind: browser.StepFill, Fields: []browser.FillField{
		{Target: ref("Username"), Text: "ada"}, {Target: ref("Password"), Text: f.CrossSitePassword()}}})
	act(browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Sign in"}})
	title("Cross ada")
	if got := f.CrossSiteLogins(t); !strings.Contains(got, "ada") {
		t.Errorf("the fixture recorded logins %q, want ada's", got)
	}
	act(browser.Step{Kind: browser.StepType, Target: ref("Username"), Text: "!"})
	act(browser.Step{Kind: browser.StepClick, Target: ref("Sign in")})
	title("Cross ada!")
	act(browser.Step{Kind: browser.StepSelect, Target: browser.Target{Text: "Plan"}, Text: "Pro"})
	title("Cross plan Pro")
	act(browser.Step{Kind: browser.StepUpload, Target: browser.Target{Text: "Photo"},
		Files: []browser.UploadFile{{Name: "id.txt", Type: "text/plain", Data: []byte("Ada")}}})
	title("Cross photo id.txt:Ada")
	act(browser.Step{Kind: browser.StepHover, Target: browser.Target{Text: "Peek"}})
	title("Cross peeked")

	refused("a click on a button the frame itself covers", browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Hidden prize"}}, "target_not_found")
	refused("a click on a button of a frame the page covers", browser.Step{Kind: browser.StepClick, Target: ref("Under glass")}, "target_not_found")

	// The url policy (ActRequest.FrameAllowed) refuses the login frame's url: a
	// step on its element is refused url_not_allowed, an observation leaves
	// its elements out, and nothing ran.
	deny := func(u string) error {
		if strings.Contains(u, "/cross-site/login") {
			return errors.New("the test's url policy refuses the login frame")
		}
		return nil
	}
	_, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepClick, Target: ref("Sign in")}, FrameAllowed: deny})
	var ae *browser.ActError
	if !errors.As(err, &ae) || ae.Reason != "url_not_allowed" {
		t.Errorf("a click in a frame the url policy refuses: %v, want url_not_allowed", err)
	}
	res, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepObserve}, FrameAllowed: deny})
	if err != nil {
		t.Fatalf("observe under the url policy: %v", err)
	}
	for _, el := range res.Observation.Elements {
		if el.Name == "Username" || el.Name == "Sign in" {
			t.Errorf("an element of a frame the url policy refuses was observed: %+v", el)
		}
	}
	if text := outlineText(res.Observation.Outline); !strings.Contains(text, "does not observe") || !strings.Contains(text, "Under glass") {
		t.Errorf("the outline does not say the refused frame is not observed, or lost the allowed one:\n%s", head(text))
	}

	old := ref("Sign in")
	act(browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Next page"}})
	observe("Back")
	refused("a click by the ref of a frame that navigated", browser.Step{Kind: browser.StepClick, Target: old}, "stale_ref")
	if got := f.Title(t, p.ID); got != "Cross peeked" {
		t.Errorf("title %q: a covered element was clicked or the stale ref was retargeted", got)
	}
}
