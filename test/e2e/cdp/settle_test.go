package cdp_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// spawnKindSteps are the steps of /spawn-kinds that spawn /landing?k=<kind>,
// one way each: links with and without an opener, window.open in a click
// handler, a form with target=_blank. (The API has no middle or Ctrl click;
// its keyboard form, Press Control+Enter on a focused link, opens a background
// tab that Chromium reports with no opener and no Page.windowOpen; the cdp
// driver attributes it by the page's Page.frameRequestedNavigation into a new
// tab: internal/browser/cdp TestModifiedEnterSpawnIsTheSessions.
// docs/design.md "Settle".)
var spawnKindSteps = []struct {
	kind string
	step twv1.ActionStep
}{
	{"blank", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Blank"}}},
	{"noopener", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "No opener"}}},
	{"popup", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Popup"}}},
	{"form", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Submit"}}},
}

// TestClickSettlesOnlyWhenItSpawnsOnChromium: a click that spawns nothing
// returns without any spawn settle (the driver saw the page announce no new
// page: the agent's settle counter says none, never blind); every kind of
// spawn a step makes is announced (Page.windowOpen), waited for, adopted and
// listed in the same action's result; a spawn from a timer after the click is
// not waited for, yet adopted through its opener, and it refuses the
// session's next mutating step as unacknowledged.
func TestClickSettlesOnlyWhenItSpawnsOnChromium(t *testing.T) {
	g, ctx, _ := begin(t, 30*time.Second)
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	const profile = "settle"
	startRoles(t, profile)
	s := session(ns, "kinds", profile)
	g.Expect(u.Create(ctx, s)).To(Succeed())
	sa := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "kinds", Thread: s.Spec.Thread, Timeout: time.Minute}

	w := openWindow(ns, "quiet", "kinds", site.Path("/spawn-kinds"))
	g.Expect(u.Create(ctx, w)).To(Succeed())
	waitOpen(t, g, w)

	// A click that spawns nothing: no settle at all.
	before := testenv.SpawnSettles(t, profile)
	for range 3 {
		act := sa.Act("quiet", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Nothing"}})
		g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
		g.Expect(act.Status.Spawned).To(BeEmpty())
	}
	after := testenv.SpawnSettles(t, profile)
	g.Expect(after["none"]-before["none"]).To(Equal(3.0), "each click needed no settle: %v → %v", before, after)
	g.Expect(after["blind"]-before["blind"]).To(BeZero(), "no blind settle on the cdp driver")
	g.Expect(after["announced"] - before["announced"]).To(BeZero())

	// Every kind of spawn is listed in the result of the action that made it.
	for _, tc := range spawnKindSteps {
		name := "k-" + tc.kind
		kw := openWindow(ns, name, "kinds", site.Path("/spawn-kinds"))
		g.Expect(u.Create(ctx, kw)).To(Succeed())
		waitOpen(t, g, kw)
		before := testenv.SpawnSettles(t, profile)
		act := sa.Act(name, tc.step)
		g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "%s: status %+v", tc.kind, act.Status)
		g.Expect(act.Status.Spawned).To(HaveLen(1), "%s: the spawn is listed on the action that made it", tc.kind)
		after := testenv.SpawnSettles(t, profile)
		g.Expect(after["announced"]-before["announced"]).To(Equal(1.0), "%s: the driver saw the page announce it: %v → %v", tc.kind, before, after)
		g.Expect(after["blind"]-before["blind"]).To(BeZero(), "%s", tc.kind)
		sw := get(t, &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: act.Status.Spawned[0].Name}})
		g.Expect(sw.Spec.Spawn.SpawnedBy).To(Equal(name), "%s", tc.kind)
		// The listing's url is the page's first (a page adopted before its
		// first navigation committed is waited for); the window's status
		// follows the page.
		g.Expect(act.Status.Spawned[0].URL).To(HavePrefix(site.Path("/landing?k="+tc.kind)), "%s: the listed spawn says where it went", tc.kind)
		g.Eventually(func() string { return get(t, sw).Status.URL }).Should(HavePrefix(site.Path("/landing?k="+tc.kind)), "%s", tc.kind)
		ack(t, sw, twv1.DispositionClose)
	}

	// A spawn from a timer after the click: not waited for (the result may not
	// list it), adopted through its opener all the same, and the session's next
	// mutating step is refused until it is acknowledged.
	lw := openWindow(ns, "later", "kinds", site.Path("/spawn-kinds"))
	g.Expect(u.Create(ctx, lw)).To(Succeed())
	tab := waitOpen(t, g, lw)
	act := sa.Act("later", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Later"}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	var late *twv1.BrowserWindow
	g.Eventually(func() *twv1.BrowserWindow { late = spawnedOf(ns, "kinds", tab); return late }).ShouldNot(BeNil(), "the timer's spawn is adopted by its opener")
	g.Expect(late.Spec.Spawn.SpawnedBy).To(Equal("later"))
	next := sa.Act("later", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Nothing"}})
	g.Expect(next.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", next.Status)
	g.Expect(next.Status.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
	g.Expect(next.Status.Message).To(ContainSubstring(late.Name), fmt.Sprintf("%+v", next.Status))
}
