package cdp_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestUserTabsStayTheUsersOnChromium: only proof ties a page to a session
// (invariants 2 and 10), on real Chromium through the whole system. While the
// session's action runs (a click that keeps its page busy for seconds), the
// user opens a window of their own elsewhere; later the user clicks a
// target=_blank link in the tab the session binds, with real input on their own
// connection. Neither page is adopted (no Spawned window names it), and when
// the session is deleted both stay open, as does the bound tab.
func TestUserTabsStayTheUsersOnChromium(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	reading, err := h.Open(ctx, browser.OpenRequest{Key: "reading", URL: site.Path("/spawner?reading=1"), NewWindow: true})
	g.Expect(err).NotTo(HaveOccurred())
	// The hand lets go: the tab is the user's, recorded by nobody.
	g.Expect(h.Release(ctx, browser.ReleaseRequest{Key: "reading", ID: reading.ID})).To(Succeed())
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t, "proof")
	s := session(ns, "proof", "proof")
	g.Expect(u.Create(ctx, s)).To(Succeed())
	slow := openWindow(ns, "slow", "proof", site.Path("/slow?ms=4000"))
	g.Expect(u.Create(ctx, slow)).To(Succeed())
	bound := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reading"},
		Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: "proof"}, Source: twv1.SourceBind, BindTabID: reading.ID},
	}
	g.Expect(u.Create(ctx, bound)).To(Succeed())
	slowTab := waitOpen(t, g, slow)
	waitOpen(t, g, bound)
	g.Eventually(func() string { return pages(t, h)[slowTab].Title }).Should(Equal(fixture.TitleSlow))
	agent := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "proof", Thread: s.Spec.Thread, Timeout: time.Minute}

	// The user opens a window of their own while the action runs.
	done := make(chan struct{})
	go func() {
		defer close(done)
		agent.Act("slow", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Busy"}})
	}()
	g.Eventually(func() string { return pages(t, h)[slowTab].Title }).Should(Equal(fixture.TitleSlow))
	time.Sleep(time.Second) // the click is running: the page is busy for 4s
	during := userWindow(t, h, site.Path("/quiet?during=1"))
	<-done

	// The user clicks a target=_blank link in the bound tab.
	before := pages(t, h)
	g.Expect(click(ctx, h, reading.ID, "#open-tab")).To(Succeed())
	var fromBound string
	g.Eventually(func() string {
		for id, p := range pages(t, h) {
			if _, ok := before[id]; !ok && p.OpenerID == reading.ID {
				fromBound = id
			}
		}
		return fromBound
	}).ShouldNot(BeEmpty())

	g.Consistently(func(g Gomega) {
		for _, w := range spawned(ns, "proof") {
			g.Expect(w.Spec.Spawn.TabID).NotTo(BeElementOf(during.ID, fromBound), "the user's page was adopted as %s", w.Name)
		}
	}, "4s").Should(Succeed())

	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	now := pages(t, h)
	g.Expect(now).NotTo(HaveKey(slowTab), "the session's own page is closed")
	for what, id := range map[string]string{"the user's window opened during the action": during.ID, "the user's tab opened from the bound tab": fromBound, "the bound tab": reading.ID} {
		g.Expect(now).To(HaveKey(id), what+" stays open")
	}
}
