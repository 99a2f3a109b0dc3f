package cdp_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestBlockedPopupLeavesTheUsersTabOnChromium: a session's click calls
// window.open twice; Chromium opens the first and its popup blocker stops the
// second, whose Page.windowOpen still fires. The user opens a window of their
// own right after the popup appears. Only the popup is the session's: the
// user's window is never adopted, and it stays open when the session is
// deleted (before the fix, the unanswered announcement attributed the user's
// window to the action for a second, the agent adopted it as Spawned, reason
// during_action, and the session's cleanup closed it).
func TestBlockedPopupLeavesTheUsersTabOnChromium(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t, "blocked")
	s := session(ns, "blocked", "blocked")
	g.Expect(u.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "two", "blocked", site.Path("/two-popups"))
	g.Expect(u.Create(ctx, w)).To(Succeed())
	tab := waitOpen(t, g, w)
	g.Eventually(func() string { return pages(t, h)[tab].Title }).Should(Equal(fixture.TitleTwoPopups))
	agent := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "blocked", Thread: s.Spec.Thread, Timeout: time.Minute}

	done := make(chan *twv1.BrowserAction)
	go func() {
		done <- agent.Act("two", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Two popups"}})
	}()
	// The popup is there: the step has returned or is about to. The user
	// opens a window of their own.
	var popup string
	deadline := time.Now().Add(10 * time.Second)
	for popup == "" && time.Now().Before(deadline) {
		for id, p := range pages(t, h) {
			if p.OpenerID == tab {
				popup = id
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.Expect(popup).NotTo(BeEmpty(), "the first popup opens")
	user := userWindow(t, h, "about:blank#the-users-own-window")
	act := <-done
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)

	g.Eventually(func() *twv1.BrowserWindow { return spawnedOf(ns, "blocked", tab) }).ShouldNot(BeNil(), "the popup is adopted by its opener")
	g.Consistently(func(g Gomega) {
		for _, sw := range spawned(ns, "blocked") {
			g.Expect(sw.Spec.Spawn.TabID).NotTo(Equal(user.ID), "the user's window was adopted as %s (reason %s)", sw.Name, sw.Spec.Spawn.Reason)
		}
	}, "3s").Should(Succeed())

	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	now := pages(t, h)
	g.Expect(now).NotTo(HaveKey(tab), "the session's page is closed")
	g.Expect(now).NotTo(HaveKey(popup), "the session's popup is closed")
	g.Expect(now).To(HaveKey(user.ID), "the user's own window stays open")
	for id, p := range now {
		if strings.Contains(p.URL, "k=second") {
			t.Errorf("the blocked popup opened after all: %s %s", id, p.URL)
		}
	}
}
