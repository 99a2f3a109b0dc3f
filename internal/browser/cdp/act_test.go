package cdp

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// step runs one step on page (recorded under owner) as operation key.
func step(b *Browser, owner, page string, s browser.Step) (browser.ActResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	return b.Act(ctx, browser.ActRequest{Key: "act-" + owner, Owner: owner, Page: page, Step: s})
}

func stepOK(t *testing.T, b *Browser, owner, page string, s browser.Step) browser.ActResult {
	t.Helper()
	res, err := step(b, owner, page, s)
	if err != nil {
		t.Fatalf("%s %+v: %v", s.Kind, s, err)
	}
	return res
}

// refused fails unless err is an *ActError with reason.
func refused(t *testing.T, what string, err error, reason string) {
	t.Helper()
	var ae *browser.ActError
	if !errors.As(err, &ae) || ae.Reason != reason {
		t.Fatalf("%s: got %v, want a %s refusal", what, err, reason)
	}
	if ae.Message == "" {
		t.Errorf("%s: refusal without a message", what)
	}
}

func observe(t *testing.T, b *Browser, owner, page string) *browser.PageObservation {
	t.Helper()
	o := stepOK(t, b, owner, page, browser.Step{Kind: browser.StepObserve}).Observation
	if o == nil {
		t.Fatal("observe returned no observation")
	}
	return o
}

// named returns the observed elements reading name.
func named(o *browser.PageObservation, name string) []browser.Element {
	var out []browser.Element
	for _, e := range o.Elements {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func one(t *testing.T, o *browser.PageObservation, name string) browser.Element {
	t.Helper()
	es := named(o, name)
	if len(es) != 1 {
		t.Fatalf("%d elements named %q in %+v, want 1", len(es), name, o.Elements)
	}
	return es[0]
}

func ref(o *browser.PageObservation, e browser.Element) browser.Target {
	return browser.Target{Ref: e.ID, Document: o.Document}
}

func centreOf(o *browser.PageObservation, e browser.Element) browser.Target {
	return browser.Target{Point: true, X: float64(e.X + e.Width/2), Y: float64(e.Y + e.Height/2), Document: o.Document, Epoch: o.Epoch}
}

func click(tg browser.Target) browser.Step { return browser.Step{Kind: browser.StepClick, Target: tg} }

// title reads the page's title as Chromium lists it (no driver).
func pageTitle(t *testing.T, id string) string {
	t.Helper()
	return chromiumPages(t)[id].Title
}

// stays fails if the page's title changes within a short while.
func stays(t *testing.T, id, title string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if got := pageTitle(t, id); got != title {
			t.Fatalf("page %s: title %q, want it to stay %q", id, got, title)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var refPattern = regexp.MustCompile(`^e[0-9]+$`)

func TestActObserveListsRefsAndClickByRef(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "two", "/two-send", fixture.TitleTwoSend)
	o := observe(t, b, "two", p.ID)
	if o.Document == "" || !strings.HasSuffix(o.URL, "/two-send") || o.Title != fixture.TitleTwoSend {
		t.Errorf("observation %+v", o)
	}
	sends := named(o, "Send")
	later := one(t, o, "Send later")
	if len(sends) != 2 {
		t.Fatalf("elements %+v: want two reading Send", o.Elements)
	}
	seenIDs := map[string]bool{}
	for _, e := range append(sends, later) {
		if !refPattern.MatchString(e.ID) || seenIDs[e.ID] || e.Role != "button" || e.Width <= 0 || e.Height <= 0 {
			t.Errorf("element %+v: want a unique eN ref, role button and a box", e)
		}
		seenIDs[e.ID] = true
	}
	if sends[1].Y <= sends[0].Y {
		t.Errorf("the second Send (%+v) is not below the first (%+v)", sends[1], sends[0])
	}
	// The same elements keep their refs in the next observation.
	if o2 := observe(t, b, "two", p.ID); o2.Document != o.Document || named(o2, "Send")[1].ID != sends[1].ID {
		t.Errorf("second observation %+v changed the document or the refs of %+v", o2, o)
	}
	stepOK(t, b, "two", p.ID, click(ref(o, sends[1])))
	waitTitle(t, b, p.ID, "Sent 2")
}

func TestActClickByText(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "two", "/two-send", fixture.TitleTwoSend)
	o := observe(t, b, "two", p.ID)

	_, err := step(b, "two", p.ID, click(browser.Target{Text: "Send"}))
	refused(t, "click text Send", err, "ambiguous_target")
	var ae *browser.ActError
	errors.As(err, &ae)
	sends := named(o, "Send")
	if len(ae.Candidates) != 2 || ae.Candidates[0].ID != sends[0].ID || ae.Candidates[1].ID != sends[1].ID {
		t.Errorf("candidates %+v, want the two Send buttons %+v", ae.Candidates, sends)
	}
	if ae.Document != o.Document || ae.Epoch != o.Epoch {
		t.Errorf("candidates of document %s epoch %d, want the page's %s epoch %d", ae.Document, ae.Epoch, o.Document, o.Epoch)
	}
	stays(t, p.ID, fixture.TitleTwoSend)
	// A candidate is a ref of the page as it is now.
	stepOK(t, b, "two", p.ID, click(browser.Target{Ref: ae.Candidates[1].ID, Document: ae.Document}))
	waitTitle(t, b, p.ID, "Sent 2")

	// An exact match wins over containing ones; white space is collapsed.
	stepOK(t, b, "two", p.ID, click(browser.Target{Text: "  Send   later "}))
	waitTitle(t, b, p.ID, "Sent later")

	_, err = step(b, "two", p.ID, click(browser.Target{Text: "Cancel"}))
	refused(t, "click text Cancel", err, "target_not_found")
}

func TestActClickByPointAndStaleCoordinates(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "long", "/long", fixture.TitleLong)
	o := observe(t, b, "long", p.ID)
	top := one(t, o, "Top")
	if len(named(o, "Bottom")) != 0 {
		t.Errorf("the Bottom button, 4000 pixels down, is listed as visible: %+v", o.Elements)
	}
	stepOK(t, b, "long", p.ID, click(centreOf(o, top)))
	waitTitle(t, b, p.ID, "Clicked Top")

	stepOK(t, b, "long", p.ID, browser.Step{Kind: browser.StepScroll, DeltaY: 5})
	_, err := step(b, "long", p.ID, click(centreOf(o, top)))
	refused(t, "a point read before the scroll", err, "stale_coordinates")

	o2 := observe(t, b, "long", p.ID)
	if o2.ScrollY != 5 || o2.Epoch == o.Epoch || o2.Document != o.Document {
		t.Errorf("after scrolling 5 pixels: %+v (before %+v)", o2, o)
	}
	top2 := one(t, o2, "Top")
	if top2.ID != top.ID || top2.Y != top.Y-5 {
		t.Errorf("Top moved from %+v to %+v, want the same ref 5 pixels up", top, top2)
	}
	evaluate(t, b, p.ID, `document.title = "Long"`)
	stepOK(t, b, "long", p.ID, click(centreOf(o2, top2)))
	waitTitle(t, b, p.ID, "Clicked Top")

	// A text target off screen is scrolled into view first.
	stepOK(t, b, "long", p.ID, click(browser.Target{Text: "Bottom"}))
	waitTitle(t, b, p.ID, "Clicked Bottom")
	if o3 := observe(t, b, "long", p.ID); o3.ScrollY < 3000 || len(named(o3, "Bottom")) != 1 {
		t.Errorf("after clicking Bottom: scrollY %d, elements %+v", o3.ScrollY, o3.Elements)
	}
}

func TestActTickingClockKeepsPoints(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "clock", "/clock", fixture.TitleClock)
	o := observe(t, b, "clock", p.ID)
	before := evaluate(t, b, p.ID, `document.getElementById("now").textContent`)
	time.Sleep(600 * time.Millisecond)
	if after := evaluate(t, b, p.ID, `document.getElementById("now").textContent`); after == before {
		t.Fatalf("the clock did not tick (%v)", after)
	}
	stepOK(t, b, "clock", p.ID, click(centreOf(o, one(t, o, "Press me"))))
	waitTitle(t, b, p.ID, "Pressed")
}

func TestActRefStaleAfterNavigateAndReconnect(t *testing.T) {
	ledgerPath := filepath.Join(t.TempDir(), "ledger.json")
	b, r := newDriver(t, Options{LedgerPath: ledgerPath})
	p := openWindow(t, b, r, "two", "/two-send", fixture.TitleTwoSend)
	o := observe(t, b, "two", p.ID)
	send := named(o, "Send")[0]

	// A reconnected driver (a new session, a new isolated world) refuses the old ref.
	b.Shutdown()
	b2, _ := newDriver(t, Options{LedgerPath: ledgerPath})
	_, err := step(b2, "two", p.ID, click(ref(o, send)))
	refused(t, "a ref from before the reconnection", err, "stale_ref")
	o = observe(t, b2, "two", p.ID)
	send = named(o, "Send")[0]

	// The same url loaded again is a new document: its refs are new.
	stepOK(t, b2, "two", p.ID, browser.Step{Kind: browser.StepNavigate, URL: site.Path("/two-send")})
	_, err = step(b2, "two", p.ID, click(ref(o, send)))
	refused(t, "a ref from before the navigation", err, "stale_ref")
	_, err = step(b2, "two", p.ID, click(centreOf(o, send)))
	refused(t, "a point from before the navigation", err, "stale_coordinates")
	stays(t, p.ID, fixture.TitleTwoSend)

	o2 := observe(t, b2, "two", p.ID)
	if o2.Document == o.Document {
		t.Fatalf("navigation kept the document id %s", o.Document)
	}
	stepOK(t, b2, "two", p.ID, browser.Step{Kind: browser.StepNavigate, URL: site.Path("/landing")})
	if o3 := observe(t, b2, "two", p.ID); o3.Title != fixture.TitleLanding || !strings.HasSuffix(o3.URL, "/landing") {
		t.Errorf("after navigating to /landing: %+v", o3)
	}
}

func TestActReplacedElementIsStaleNeverRetargeted(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "repl", "/replace", fixture.TitleReplace)
	o := observe(t, b, "repl", p.ID)
	target := one(t, o, "Target")
	stepOK(t, b, "repl", p.ID, click(browser.Target{Text: "Replace"}))
	waitTitle(t, b, p.ID, "Replaced 2")

	// An identical button now stands where the old one stood: the ref is refused.
	_, err := step(b, "repl", p.ID, click(ref(o, target)))
	refused(t, "the ref of a replaced element", err, "stale_ref")
	// Elements added and removed are a re-render: points read before are stale too.
	_, err = step(b, "repl", p.ID, click(centreOf(o, target)))
	refused(t, "a point read before the re-render", err, "stale_coordinates")
	stays(t, p.ID, "Replaced 2")

	o2 := observe(t, b, "repl", p.ID)
	fresh := one(t, o2, "Target")
	if fresh.ID == target.ID || fresh.Y != target.Y {
		t.Errorf("the replacement %+v should have a new ref at the old place of %+v", fresh, target)
	}
	stepOK(t, b, "repl", p.ID, click(ref(o2, fresh)))
	waitTitle(t, b, p.ID, "Target 2")
}

func TestActTypeAndPressEnterSubmits(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "form", "/form", fixture.TitleForm)
	o := observe(t, b, "form", p.ID)
	name := one(t, o, "Name")
	if name.Role != "textbox" || one(t, o, "Save").Role != "button" {
		t.Errorf("form elements %+v", o.Elements)
	}
	stepOK(t, b, "form", p.ID, browser.Step{Kind: browser.StepType, Target: ref(o, name), Text: "Ada"})
	// Without a target, text goes to the focused element.
	stepOK(t, b, "form", p.ID, browser.Step{Kind: browser.StepType, Text: " Lovelace"})
	stepOK(t, b, "form", p.ID, browser.Step{Kind: browser.StepPress, Key: "Enter"})
	stepOK(t, b, "form", p.ID, browser.Step{Kind: browser.StepWait, Text: fixture.SavedText + "Ada Lovelace", Timeout: 10 * time.Second})
	waitTitle(t, b, p.ID, fixture.TitleSaved)
	if got := evaluate(t, b, p.ID, `document.getElementById("status").textContent`); got != fixture.SavedText+"Ada Lovelace" {
		t.Errorf("status %q", got)
	}
}

func TestActWait(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "late", "/delayed?ms=700", fixture.TitleDelayed)
	start := time.Now()
	stepOK(t, b, "late", p.ID, browser.Step{Kind: browser.StepWait, Text: fixture.DelayedText, Timeout: 15 * time.Second})
	t.Logf("text appeared after %v", time.Since(start))

	start = time.Now()
	_, err := step(b, "late", p.ID, browser.Step{Kind: browser.StepWait, Text: "Never shown", Timeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "did not appear") || time.Since(start) < 500*time.Millisecond {
		t.Errorf("wait for missing text: %v after %v", err, time.Since(start))
	}
	start = time.Now()
	stepOK(t, b, "late", p.ID, browser.Step{Kind: browser.StepWait, Timeout: 300 * time.Millisecond})
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("a wait without text returned after %v, want 300ms", d)
	}
	_, err = step(b, "late", p.ID, browser.Step{Kind: browser.StepWait, Text: "x", Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "at most 30s") {
		t.Errorf("a one-minute wait: %v, want refused with the limit", err)
	}
}

func TestActSpawnsAreAttributedOrCarryOpener(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "opener", "/window-open", fixture.TitleOpen)
	for _, text := range []string{"Open tab", "Open noopener", "Open noreferrer", "Open noopener script"} {
		start := time.Now()
		stepOK(t, b, "opener", p.ID, click(browser.Target{Text: text}))
		e := r.wait(t, 10*time.Second, "page spawned by "+text, func(e browser.Event) bool {
			return e.Type == browser.PageCreated && e.Time.After(start) && e.Page.ID != p.ID
		})
		parent := "opener"
		switch {
		case e.Page.OpenerID == p.ID:
		case e.Page.OpenerID == "" && e.Page.Attributed == "act-opener":
			parent = "act-opener"
		default:
			t.Fatalf("%s: spawned page %+v has neither the opener %s nor the action's key", text, e.Page, p.ID)
		}
		key := "spawn-" + strings.ReplaceAll(text, " ", "-")
		adopt(t, b, key, e.Page.ID, parent)
		t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: key, ID: e.Page.ID}) })
		waitTitle(t, b, e.Page.ID, fixture.TitleLanding)
	}
}

// TestActNotOwned: every step kind is refused, and does nothing, on a page not
// recorded under the owner given: the user's tab, and another key's page.
func TestActNotOwned(t *testing.T) {
	b, r := newDriver(t, Options{})
	hand, hr := newDriver(t, Options{})
	user := openWindow(t, hand, hr, "user", "/quiet", fixture.TitleQuiet)
	mine := openWindow(t, b, r, "mine", "/quiet", fixture.TitleQuiet)
	steps := []browser.Step{
		{Kind: browser.StepObserve},
		{Kind: browser.StepNavigate, URL: site.Path("/landing")},
		{Kind: browser.StepClick, Target: browser.Target{Text: "Do nothing"}},
		{Kind: browser.StepType, Text: "x"},
		{Kind: browser.StepPress, Key: "Enter"},
		{Kind: browser.StepScroll, DeltaY: 100},
		{Kind: browser.StepWait, Text: "Quiet"},
	}
	for _, s := range steps {
		t.Run(string(s.Kind), func(t *testing.T) {
			for _, tc := range []struct{ owner, page string }{{"mine", user.ID}, {"user", user.ID}, {"other", mine.ID}} {
				res, err := step(b, tc.owner, tc.page, s)
				if !errors.Is(err, browser.ErrNotOwned) || res.Observation != nil {
					t.Errorf("%s on page %s as %q: %v %+v, want ErrNotOwned", s.Kind, tc.page, tc.owner, err, res)
				}
			}
		})
	}
	ps := chromiumPages(t)
	for _, id := range []string{user.ID, mine.ID} {
		if p := ps[id]; p.Title != fixture.TitleQuiet || !strings.HasSuffix(p.URL, "/quiet") {
			t.Errorf("page %s changed: %+v", id, p)
		}
	}
	for _, id := range []string{user.ID, mine.ID} {
		if got := evaluate(t, b, id, `document.getElementById("noop").textContent + " " + scrollY`); got != "Do nothing 0" {
			t.Errorf("page %s: %v, want the button untouched and no scroll", id, got)
		}
	}
}

// TestActNeverFocuses: an agent drives its own background tab (hidden) and it
// stays hidden, and the user's page stays the focused, visible one. Activating
// the tab (Target.activateTarget, Page.bringToFront) would make it visible.
func TestActNeverFocuses(t *testing.T) {
	b, _ := newDriver(t, Options{})
	hand, hr := newDriver(t, Options{})
	user := openWindow(t, hand, hr, "user", "/quiet", fixture.TitleQuiet)
	// The agent's page is a background tab.
	agent, err := b.Open(tctx(t), browser.OpenRequest{Key: "agent", URL: site.Path("/form"), WindowID: user.WindowID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "agent", ID: agent.ID}) })
	waitTitle(t, b, agent.ID, fixture.TitleForm)
	// The user brings their page to the front (the user's hand, not the driver).
	c, err := hand.current()
	if err != nil {
		t.Fatal(err)
	}
	if _, err = call(tctx(t), c, "", wire.ActivateTarget{TargetID: user.ID}); err != nil {
		t.Fatal(err)
	}
	const state = `document.visibilityState + " focus=" + document.hasFocus()`
	userBefore, agentBefore := evaluate(t, hand, user.ID, state), evaluate(t, b, agent.ID, state)
	t.Logf("before: user page %v, agent page %v", userBefore, agentBefore)
	if userBefore != "visible focus=true" || !strings.HasPrefix(agentBefore.(string), "hidden ") {
		t.Fatalf("want the user's page focused and the agent's tab hidden to start with: user %v, agent %v", userBefore, agentBefore)
	}

	o := observe(t, b, "agent", agent.ID)
	stepOK(t, b, "agent", agent.ID, browser.Step{Kind: browser.StepType, Target: ref(o, one(t, o, "Name")), Text: "Ada"})
	stepOK(t, b, "agent", agent.ID, click(browser.Target{Text: "Save"}))
	// Real input reaches the hidden tab.
	stepOK(t, b, "agent", agent.ID, browser.Step{Kind: browser.StepWait, Text: fixture.SavedText + "Ada", Timeout: 10 * time.Second})
	stepOK(t, b, "agent", agent.ID, browser.Step{Kind: browser.StepPress, Key: "Tab"})
	stepOK(t, b, "agent", agent.ID, browser.Step{Kind: browser.StepScroll, DeltaY: 50})
	stepOK(t, b, "agent", agent.ID, browser.Step{Kind: browser.StepNavigate, URL: site.Path("/quiet")})
	stepOK(t, b, "agent", agent.ID, click(browser.Target{Text: "Do nothing"}))

	userAfter, agentAfter := evaluate(t, hand, user.ID, state), evaluate(t, b, agent.ID, state)
	t.Logf("after: user page %v, agent page %v", userAfter, agentAfter)
	// The agent's page may think itself focused (input goes to it), but the user's
	// page stays the focused, visible one.
	if userAfter != userBefore || userAfter != "visible focus=true" {
		t.Errorf("the user's page changed from %v to %v", userBefore, userAfter)
	}
	if vis := strings.Fields(agentAfter.(string))[0]; vis != strings.Fields(agentBefore.(string))[0] {
		t.Errorf("the agent's page changed visibility: %v → %v", agentBefore, agentAfter)
	}
}

// The page script never runs in the page's own world: without an isolated
// world (a zero contextId, which CDP reads as the main world) evaluate refuses
// before sending anything, with an error that makes run create the world.
func TestEvaluateNeedsIsolatedWorld(t *testing.T) {
	b := &Browser{}
	var out any
	err := b.evaluate(tctx(t), &pageSession{}, "info", scriptArgs{}, &out)
	if err == nil || !strings.Contains(err.Error(), "no isolated world") || !worldGone(err) {
		t.Fatalf("evaluate without a world: %v; want a refusal that reads as a gone world", err)
	}
}

func TestActRefusesBadSteps(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "quiet", "/quiet", fixture.TitleQuiet)
	for _, tc := range []struct {
		s    browser.Step
		want string
	}{
		{browser.Step{Kind: browser.StepNavigate, URL: "javascript:document.title='x'"}, "http(s) or about:blank"},
		{browser.Step{Kind: browser.StepNavigate, URL: "file:///etc/passwd"}, "http(s) or about:blank"},
		{browser.Step{Kind: browser.StepClick}, "needs a target"},
		{browser.Step{Kind: browser.StepType, Target: browser.Target{Text: "Do nothing"}}, "needs Text"},
		{browser.Step{Kind: browser.StepPress, Key: "Hyper+x"}, "unknown modifier"},
		{browser.Step{Kind: browser.StepWait}, "needs Text to wait for or a Timeout"},
		{browser.Step{Kind: "eval"}, "unknown step kind"},
		{browser.Step{Kind: browser.StepClick, Target: browser.Target{Selector: "#noop["}}, "invalid CSS selector"},
	} {
		_, err := step(b, "quiet", p.ID, tc.s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.s, err, tc.want)
		}
	}
	if pg := chromiumPages(t)[p.ID]; pg.Title != fixture.TitleQuiet || !strings.HasSuffix(pg.URL, "/quiet") {
		t.Errorf("the page changed: %+v", pg)
	}
}

// TestActLeavesDialogsForADialogStep: a confirm() opened by a click blocks
// the page; the click returns it, left open (nothing answers on the agent's
// behalf), later steps are refused dialog_open until a dialog step answers it.
// One that opens while no step runs is left open too, and one nobody answers
// is dismissed after the dialog timeout.
func TestActLeavesDialogsForADialogStep(t *testing.T) {
	b, r := newDriver(t, Options{DialogTimeout: 2 * time.Second})
	p := openWindow(t, b, r, "dialog", "/dialog", fixture.TitleDialog)
	res, err := step(b, "dialog", p.ID, click(browser.Target{Text: "Delete"}))
	if err != nil || res.Dialog == nil || *res.Dialog != (browser.Dialog{Type: "confirm", Message: "Delete everything?"}) {
		t.Fatalf("click Delete: %+v, %v, want the confirm it opened", res.Dialog, err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := pageTitle(t, p.ID); got != fixture.TitleDialog {
		t.Fatalf("title %q while the confirm shows: something answered it", got)
	}
	var ae *browser.ActError
	if _, err := step(b, "dialog", p.ID, browser.Step{Kind: browser.StepObserve}); !errors.As(err, &ae) || ae.Reason != browser.ReasonDialogOpen || !strings.Contains(ae.Message, `confirm "Delete everything?"`) {
		t.Fatalf("observe while the confirm shows: %v, want dialog_open naming it", err)
	}
	stepOK(t, b, "dialog", p.ID, browser.Step{Kind: browser.StepDialog, Accept: true})
	waitTitle(t, b, p.ID, "Deleted")
	start := time.Now()
	if o := observe(t, b, "dialog", p.ID); len(named(o, "Delete")) != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("observe after the dialog: %+v after %v", o, time.Since(start))
	}

	// A dialog that opened while no step ran is left open for a dialog step too.
	evaluate(t, b, p.ID, `setTimeout(() => { document.title = confirm("Later?") ? "Later yes" : "Later no" }, 0); 1`)
	time.Sleep(300 * time.Millisecond)
	if _, err := step(b, "dialog", p.ID, browser.Step{Kind: browser.StepObserve}); !errors.As(err, &ae) || ae.Reason != browser.ReasonDialogOpen || !strings.Contains(ae.Message, `confirm "Later?"`) {
		t.Fatalf("observe with a dialog open: %v, want dialog_open naming it", err)
	}
	if got := pageTitle(t, p.ID); got != "Deleted" {
		t.Fatalf("title %q: the refused step answered the dialog", got)
	}
	stepOK(t, b, "dialog", p.ID, browser.Step{Kind: browser.StepDialog})
	waitTitle(t, b, p.ID, "Later no")

	// Nobody answers: dismissed after the timeout, and the page goes on.
	if res, err := step(b, "dialog", p.ID, click(browser.Target{Text: "Rename"})); err != nil || res.Dialog == nil || res.Dialog.DefaultPrompt != "draft" {
		t.Fatalf("click Rename: %+v, %v, want the prompt with its default", res.Dialog, err)
	}
	waitTitle(t, b, p.ID, "Not renamed")
	if _, err := step(b, "dialog", p.ID, browser.Step{Kind: browser.StepDialog, Accept: true}); !errors.As(err, &ae) || ae.Reason != browser.ReasonNoDialog {
		t.Fatalf("a dialog step after the timeout: %v, want no_dialog", err)
	}
	observe(t, b, "dialog", p.ID)
}

// TestActAfterThePageNavigatedItself: a step after the page left for another
// document by itself (no step of the driver's) acts in the new document: the
// driver reads which document the page shows before it calls the page script,
// and makes a world in a document it has none in. Back in the old document
// (restored from the back/forward cache), the step acts there.
func TestActAfterThePageNavigatedItself(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "self", "/two-send", fixture.TitleTwoSend)
	observe(t, b, "self", p.ID) // the driver's world in /two-send

	evaluate(t, b, p.ID, `location.href = "/landing"; true`)
	waitTitle(t, b, p.ID, fixture.TitleLanding)
	_, err := step(b, "self", p.ID, click(browser.Target{Text: "Send later"}))
	refused(t, "a click on a button of the document the page left", err, "target_not_found")
	stays(t, p.ID, fixture.TitleLanding)

	evaluate(t, b, p.ID, `history.back(); true`)
	waitTitle(t, b, p.ID, fixture.TitleTwoSend)
	stepOK(t, b, "self", p.ID, click(browser.Target{Text: "Send later"}))
	waitTitle(t, b, p.ID, "Sent later")
}

// TestPageScriptNeverRunsInThePagesOwnWorld: after the page navigates itself
// to another site (another renderer process, whose execution contexts are
// numbered afresh, so the driver's old world id may name one of the new
// page's), the driver's next steps never run the page script where the page
// sees it: a trap in the page's own worlds on the names the script touches
// never fires, and the steps act in the new document. A driver that called the
// script before reading which document the page shows (the one-turn read of
// 451031c, taken back) fails it.
func TestPageScriptNeverRunsInThePagesOwnWorld(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "trap", "/two-send", fixture.TitleTwoSend)
	observe(t, b, "trap", p.ID) // the driver's world in the first site's process
	stepOK(t, b, "trap", p.ID, click(browser.Target{Text: "Send later"}))
	waitTitle(t, b, p.ID, "Sent later")

	other := strings.Replace(site.Path("/two-send?trap"), "127.0.0.1", "localhost", 1)
	evaluate(t, b, p.ID, `location.href = "`+other+`"; true`)
	deadline := time.Now().Add(10 * time.Second)
	for chromiumPages(t)[p.ID].URL != other || pageTitle(t, p.ID) != fixture.TitleTwoSend {
		if time.Now().After(deadline) {
			t.Fatalf("the page did not load %s: %+v", other, chromiumPages(t)[p.ID])
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The trap is in the page's own world and in that of a dozen frames it
	// adds (each a context of the new process: ids 1, 2, … as Chromium gives
	// them, among them the id of the driver's old world).
	evaluate(t, b, p.ID, `const trap = (w) => {
		for (const k of ["tabwardenPage", "__tabwardenPageState"]) {
			Object.defineProperty(w, k, {configurable: true,
				get() { top.document.title = "Trapped"; return undefined; },
				set(v) { top.document.title = "Trapped"; }});
		}
	};
	trap(window);
	for (let i = 0; i < 12; i++) {
		const f = document.createElement("iframe");
		f.style.height = "10px";
		document.body.appendChild(f);
		trap(f.contentWindow);
	}
	true`)

	o := observe(t, b, "trap", p.ID)
	if !strings.HasPrefix(o.URL, "http://localhost") {
		t.Errorf("observed %s, want the new site's document", o.URL)
	}
	stays(t, p.ID, fixture.TitleTwoSend)
	stepOK(t, b, "trap", p.ID, click(browser.Target{Text: "Send later"}))
	waitTitle(t, b, p.ID, "Sent later")
}
