package extension_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestClickSettlesOnlyWhenItSpawnsThroughExtension: through the real
// extension, a click that spawns nothing returns without any spawn settle (the
// step's debugger session saw the tab announce no new page: the agent's settle
// counter says none, never blind); a target=_blank link, a noopener link,
// window.open in a click handler and a form with target=_blank are each
// announced (Page.windowOpen), waited for, adopted and listed in the result
// of the action that made them; a spawn from a timer after the click is
// adopted all the same and refuses the session's next mutating step.
func TestClickSettlesOnlyWhenItSpawnsThroughExtension(t *testing.T) {
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	startRoles(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	s := session(ns, "kinds")
	g.Expect(u.Create(ctx, s)).To(Succeed())
	sa := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "kinds", Thread: s.Spec.Thread, Timeout: time.Minute}
	open := func(name string) string {
		w := openWindow(ns, name, "kinds", fx.Path("/spawn-kinds"))
		g.Expect(u.Create(ctx, w)).To(Succeed())
		g.Eventually(func(g Gomega) {
			get(t, w)
			g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
			g.Expect(w.Status.URL).To(Equal(fx.Path("/spawn-kinds")))
		}).Should(Succeed())
		return w.Status.TabID
	}

	open("quiet")
	before := testenv.SpawnSettles(t, profile)
	for range 3 {
		act := sa.Act("quiet", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Nothing"}})
		g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
		g.Expect(act.Status.Spawned).To(BeEmpty())
	}
	after := testenv.SpawnSettles(t, profile)
	g.Expect(after["none"]-before["none"]).To(Equal(3.0), "each click needed no settle: %v → %v", before, after)
	g.Expect(after["blind"]-before["blind"]).To(BeZero(), "no blind settle after a click through the extension")
	g.Expect(after["announced"] - before["announced"]).To(BeZero())

	for _, tc := range []struct{ kind, text string }{
		{"blank", "Blank"}, {"noopener", "No opener"}, {"popup", "Popup"}, {"form", "Submit"},
	} {
		name := "k-" + tc.kind
		open(name)
		before := testenv.SpawnSettles(t, profile)
		act := sa.Act(name, twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: tc.text}})
		g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "%s: status %+v", tc.kind, act.Status)
		g.Expect(act.Status.Spawned).To(HaveLen(1), "%s: the spawn is listed on the action that made it", tc.kind)
		after := testenv.SpawnSettles(t, profile)
		g.Expect(after["announced"]-before["announced"]).To(Equal(1.0), "%s: the tab announced it: %v → %v", tc.kind, before, after)
		g.Expect(after["blind"]-before["blind"]).To(BeZero(), "%s", tc.kind)
		sw := get(t, &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: act.Status.Spawned[0].Name}})
		g.Expect(sw.Spec.Spawn.SpawnedBy).To(Equal(name), "%s", tc.kind)
		g.Eventually(func() string { return get(t, sw).Status.URL }).Should(HavePrefix(fx.Path("/landing?k="+tc.kind)), "%s", tc.kind)
		ack(t, sw, twv1.DispositionClose)
	}

	// A spawn from a timer after the click: not waited for, adopted all the
	// same, and the next mutating step is refused until it is acknowledged.
	open("later")
	act := sa.Act("later", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Later"}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	var late []twv1.BrowserWindow
	g.Eventually(func() []twv1.BrowserWindow {
		late = spawnedOf(ns, "kinds", get(t, &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"}}).Status.TabID)
		return late
	}).Should(HaveLen(1), "the timer's spawn is adopted")
	g.Expect(late[0].Spec.Spawn.SpawnedBy).To(Equal("later"))
	next := sa.Act("later", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Nothing"}})
	g.Expect(next.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", next.Status)
	g.Expect(next.Status.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
	g.Expect(next.Status.Message).To(ContainSubstring(late[0].Name))
}
