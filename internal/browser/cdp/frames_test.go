package cdp

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

var crossRef = regexp.MustCompile(`^x[0-9]+\.(f[0-9]+\.)?e[0-9]+$`)

// observeUntil observes until every name is listed once.
func observeUntil(t *testing.T, b *Browser, owner, page string, names ...string) *browser.PageObservation {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		o := observe(t, b, owner, page)
		missing := ""
		for _, n := range names {
			if len(named(o, n)) != 1 {
				missing = n
			}
		}
		if missing == "" {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("observation never listed %q once: %+v", missing, o.Elements)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func seenLogins(t testing.TB) string {
	t.Helper()
	r, err := http.Get(site.Path("/cross-site/seen"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Body.Close() }()
	body, _ := io.ReadAll(r.Body)
	return string(body)
}

// TestCrossSiteFrameIsOutOfProcess: the fixture's cross-site frame really is
// an out-of-process frame under Chromium's site isolation: the browser lists
// it as a target of type iframe, and the driver's page session was attached
// to it (auto-attach), under the page.
func TestCrossSiteFrameIsOutOfProcess(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "oopif", "/cross-site", fixture.TitleCrossSite)
	observeUntil(t, b, "oopif", p.ID, "Sign in")
	var list []chromiumPage
	devtoolsHTTP(t, "/json/list", &list)
	found := false
	for _, tg := range list {
		if tg.Type == "iframe" && strings.Contains(tg.URL, "/cross-site/login") && strings.Contains(tg.URL, "localhost") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no iframe target for the cross-site login frame in %+v: it is not out of process", list)
	}
	b.mu.Lock()
	ps := b.sessions[p.ID]
	n := len(ps.children)
	b.mu.Unlock()
	if n < 2 {
		t.Errorf("the page session has %d child sessions, want the two cross-site frames", n)
	}
}

// TestCrossSiteFrameLogin: observe lists the cross-site (out-of-process)
// frame's elements with refs x<k>.e<n> in the page's viewport, inside the
// frame's box, and its outline under the frame's node; Fill by ref and Click
// by text sign in (the server saw it); Select and Hover reach the frame; an
// element the frame covers, and a frame the page covers, are refused; a ref
// of the frame after it navigated is stale_ref and never retargeted; forged
// frame refs are refused.
func TestCrossSiteFrameLogin(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "oopif", "/cross-site", fixture.TitleCrossSite)
	o := observeUntil(t, b, "oopif", p.ID, "Username", "Password", "Sign in", "Next page", "Under glass")
	user, pass, signIn := one(t, o, "Username"), one(t, o, "Password"), one(t, o, "Sign in")
	for _, e := range []browser.Element{user, pass, signIn} {
		if !crossRef.MatchString(e.ID) {
			t.Errorf("%s has ref %q, want x<k>.e<n>", e.Name, e.ID)
		}
		if e.X < 10 || e.Y < 50 {
			t.Errorf("%s at (%d, %d): not offset into the page's viewport by the frame's box", e.Name, e.X, e.Y)
		}
	}
	text := outlineText(o.Outline)
	if !strings.Contains(text, "Sign in") || !strings.Contains(text, "Cross-site login") {
		t.Errorf("the outline does not hold the frame's content:\n%s", text)
	}
	stepOK(t, b, "oopif", p.ID, browser.Step{Kind: browser.StepFill, Fields: []browser.FillField{
		{Target: ref(o, user), Text: "ada"}, {Target: ref(o, pass), Text: fixture.CrossSitePassword}}})
	stepOK(t, b, "oopif", p.ID, click(browser.Target{Text: "Sign in"}))
	waitTitle(t, b, p.ID, "Cross ada")
	if got := seenLogins(t); !strings.Contains(got, "ada") {
		t.Errorf("the server saw logins %q, want ada", got)
	}
	// Typing by ref, clicking by ref.
	stepOK(t, b, "oopif", p.ID, browser.Step{Kind: browser.StepType, Target: ref(o, user), Text: "!"})
	stepOK(t, b, "oopif", p.ID, click(ref(o, signIn)))
	waitTitle(t, b, p.ID, "Cross ada!")

	stepOK(t, b, "oopif", p.ID, browser.Step{Kind: browser.StepSelect, Target: browser.Target{Text: "Plan"}, Text: "Pro"})
	waitTitle(t, b, p.ID, "Cross plan Pro")
	stepOK(t, b, "oopif", p.ID, browser.Step{Kind: browser.StepHover, Target: browser.Target{Text: "Peek"}})
	waitTitle(t, b, p.ID, "Cross peeked")

	// Covered inside the frame, and the frame covered by the page.
	_, err := step(b, "oopif", p.ID, click(browser.Target{Text: "Hidden prize"}))
	refused(t, "a click on a button the frame covers", err, "target_not_found")
	_, err = step(b, "oopif", p.ID, click(ref(o, one(t, o, "Under glass"))))
	refused(t, "a click on a button of a frame the page covers", err, "target_not_found")
	stays(t, p.ID, "Cross peeked")

	// Forged refs.
	for _, forged := range []browser.Target{
		{Ref: "x999.e1", Document: o.Document},
		{Ref: strings.Replace(signIn.ID, ".e", ".e9", 1), Document: o.Document},
		{Ref: signIn.ID, Document: "d-forged"},
		{Ref: "x1.f1.e1", Document: o.Document},
	} {
		_, err := step(b, "oopif", p.ID, click(forged))
		refused(t, "a click by forged ref "+forged.Ref, err, "stale_ref")
	}

	// The frame navigates: its refs are stale, never the look-alike's.
	stepOK(t, b, "oopif", p.ID, click(browser.Target{Text: "Next page"}))
	observeUntil(t, b, "oopif", p.ID, "Back")
	_, err = step(b, "oopif", p.ID, click(ref(o, signIn)))
	refused(t, "a click by the ref of a frame that navigated", err, "stale_ref")
	stays(t, p.ID, "Cross peeked")
}

// TestCrossSiteFramePolicy: a frame whose url the step's FrameAllowed refuses
// is not observed (its node says why) and a step on it is refused
// url_not_allowed.
func TestCrossSiteFramePolicy(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "policy", "/cross-site", fixture.TitleCrossSite)
	o := observeUntil(t, b, "policy", p.ID, "Sign in")
	signIn := one(t, o, "Sign in")
	deny := func(u string) error {
		if strings.Contains(u, "localhost") {
			return errors.New("localhost is not allowed")
		}
		return nil
	}
	ctx := tctx(t)
	_, err := b.Act(ctx, browser.ActRequest{Key: "k", Owner: "policy", Page: p.ID, Step: click(ref(o, signIn)), FrameAllowed: deny})
	refused(t, "a click in a frame the policy refuses", err, ReasonURLNotAllowed)
	_, err = b.Act(ctx, browser.ActRequest{Key: "k", Owner: "policy", Page: p.ID, Step: click(browser.Target{Text: "Sign in"}), FrameAllowed: deny})
	if err == nil {
		t.Error("a click by text in a refused frame ran")
	}
	res, err := b.Act(ctx, browser.ActRequest{Key: "k", Owner: "policy", Page: p.ID, Step: browser.Step{Kind: browser.StepObserve}, FrameAllowed: deny})
	if err != nil {
		t.Fatal(err)
	}
	if len(named(res.Observation, "Sign in")) != 0 {
		t.Errorf("a refused frame was observed: %+v", res.Observation.Elements)
	}
	if text := outlineText(res.Observation.Outline); !strings.Contains(text, "does not observe") {
		t.Errorf("the outline does not say the frame is not observed:\n%s", text)
	}
	stays(t, p.ID, fixture.TitleCrossSite)
}

func outlineText(nodes []browser.OutlineNode) string {
	s, _ := browser.FormatOutline(nodes, "o1", 1<<20)
	return s
}

// TestFrameAttachAcceptsOnlyFramesOfThePage: the driver keeps a child session
// only when the browser announces an iframe target on the page's own session
// (or an accepted child's): a page target, a worker, or an announcement on a
// session that is not this page's is never taken as a frame of the page.
func TestFrameAttachAcceptsOnlyFramesOfThePage(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "attach", "/cross-site", fixture.TitleCrossSite)
	observeUntil(t, b, "attach", p.ID, "Sign in")
	b.mu.Lock()
	ps := b.sessions[p.ID]
	c, pageSession := ps.c, ps.id
	before := len(ps.children)
	b.mu.Unlock()
	for _, ev := range []struct {
		on string
		ev wire.AttachedToTarget
	}{
		{pageSession, wire.AttachedToTarget{SessionID: "S-page", TargetInfo: wire.TargetInfo{TargetID: "T1", Type: "page"}}},
		{pageSession, wire.AttachedToTarget{SessionID: "S-worker", TargetInfo: wire.TargetInfo{TargetID: "T2", Type: "worker"}}},
		{"not-a-session-of-this-page", wire.AttachedToTarget{SessionID: "S-foreign", TargetInfo: wire.TargetInfo{TargetID: "T3", Type: "iframe"}}},
		{"", wire.AttachedToTarget{SessionID: "S-browser", TargetInfo: wire.TargetInfo{TargetID: "T4", Type: "iframe"}}},
	} {
		b.onFrameAttached(c, ev.on, &ev.ev)
	}
	b.mu.Lock()
	after := len(ps.children)
	for s := range ps.children {
		if strings.HasPrefix(s, "S-") {
			t.Errorf("the driver took session %s as a frame of the page", s)
		}
	}
	b.mu.Unlock()
	if after != before {
		t.Errorf("child sessions %d → %d", before, after)
	}
	// A child session whose frame tree is not the frame it was announced as
	// is never placed.
	b.mu.Lock()
	ps.children["S-liar"] = &childTarget{session: pageSession, frameID: "not-the-root", parent: "x", via: pageSession}
	b.mu.Unlock()
	o := observe(t, b, "attach", p.ID)
	if len(named(o, "Sign in")) != 1 {
		t.Errorf("observation %+v", o.Elements)
	}
	b.mu.Lock()
	delete(ps.children, "S-liar")
	b.mu.Unlock()
}

// TestFrameRefsBindToThePageAndItsDocument: a frame ref of one page is stale
// on another page showing the same site (its labels are its own, and the
// document differs), and a frame ref is stale once the page itself reloaded
// (the same frames again, new documents), never retargeted.
func TestFrameRefsBindToThePageAndItsDocument(t *testing.T) {
	b, r := newDriver(t, Options{})
	a := openWindow(t, b, r, "a", "/cross-site", fixture.TitleCrossSite)
	other := openWindow(t, b, r, "b", "/cross-site", fixture.TitleCrossSite)
	oa := observeUntil(t, b, "a", a.ID, "Sign in", "Peek")
	observeUntil(t, b, "b", other.ID, "Sign in", "Peek")
	peek := one(t, oa, "Peek")
	_, err := step(b, "b", other.ID, browser.Step{Kind: browser.StepHover, Target: ref(oa, peek)})
	refused(t, "page a's frame ref on page b", err, "stale_ref")
	stays(t, other.ID, fixture.TitleCrossSite)

	stepOK(t, b, "a", a.ID, browser.Step{Kind: browser.StepReload})
	waitTitle(t, b, a.ID, fixture.TitleCrossSite)
	observeUntil(t, b, "a", a.ID, "Sign in", "Peek")
	_, err = step(b, "a", a.ID, browser.Step{Kind: browser.StepHover, Target: ref(oa, peek)})
	refused(t, "a frame ref after the page reloaded", err, "stale_ref")
	// Even with the page's new document id, the old frame label names a
	// document the frame no longer shows.
	on := observe(t, b, "a", a.ID)
	_, err = step(b, "a", a.ID, browser.Step{Kind: browser.StepHover, Target: browser.Target{Ref: peek.ID, Document: on.Document}})
	refused(t, "an old frame label with the page's new document", err, "stale_ref")
	stays(t, a.ID, fixture.TitleCrossSite)
}

func TestSplitFrameRef(t *testing.T) {
	for ref, want := range map[string][2]string{
		"x1.e2": {"x1", "e2"}, "x12.f3.e4": {"x12", "f3.e4"},
		"e1": {}, "f1.e2": {}, "x.e1": {}, "xa.e1": {}, "x1": {}, "x1.": {},
	} {
		l, r, ok := splitFrameRef(ref)
		if ok != (want[0] != "") || l != want[0] || r != want[1] {
			t.Errorf("splitFrameRef(%q) = %q %q %v, want %q", ref, l, r, ok, want)
		}
	}
}
