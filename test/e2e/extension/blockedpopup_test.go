package extension_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestBlockedPopupLeavesTheUsersPopupThroughExtension: a session's click
// calls window.open twice; Chrome opens the first and its popup blocker stops
// the second, whose Page.windowOpen still reaches the extension's debugger
// session. Right after, the user clicks a window.open button in a window of
// their own. The user's popup is theirs: never adopted into the session, and
// open after the session is deleted.
func TestBlockedPopupLeavesTheUsersPopupThroughExtension(t *testing.T) {
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	startRoles(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	s := session(ns, "blocked")
	g.Expect(u.Create(ctx, s)).To(Succeed())
	sa := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "blocked", Thread: s.Spec.Thread, Timeout: time.Minute}
	w := openWindow(ns, "two", "blocked", fx.Path("/two-popups"))
	g.Expect(u.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w.Status.URL).To(Equal(fx.Path("/two-popups")))
	}).Should(Succeed())
	tab := w.Status.TabID
	userTargets, _ := openUserWindow(t, fx.Path("/window-open?user="+ns))
	userPage := userTargets[0]

	done := make(chan *twv1.BrowserAction, 1)
	go func() {
		done <- sa.Act("two", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Two popups"}})
	}()
	g.Eventually(func() bool { return hasPageURL(fx.Path("/landing?k=first")) }).WithTimeout(10 * time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
	// The user's own click in their own window, right after.
	clickIn(t, userPage, "#open-tab")
	act := <-done
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	var users []string
	g.Eventually(func(g Gomega) {
		users = nil
		for id, url := range chromePages(g) {
			if url == fx.Path("/landing") {
				users = append(users, id)
			}
		}
		g.Expect(users).To(HaveLen(1), "the user's popup opened")
	}).Should(Succeed())
	// Only the session's popup is adopted; the user's stays theirs.
	g.Consistently(func(g Gomega) {
		for _, sw := range windowsOf(ns, "blocked") {
			if sw.Spec.Source != twv1.SourceSpawned {
				continue
			}
			g.Expect(sw.Status.URL).NotTo(Equal(fx.Path("/landing")), "the user's popup was adopted as %s (reason %s, opener %s; the session's tab is %s)", sw.Name, sw.Spec.Spawn.Reason, sw.Spec.Spawn.OpenerTabID, tab)
		}
	}, "3s").Should(Succeed())
	spawned := 0
	for _, sw := range windowsOf(ns, "blocked") {
		if sw.Spec.Source == twv1.SourceSpawned {
			spawned++
			t.Logf("spawned %s: tab %s opener %s reason %s url %s", sw.Name, sw.Spec.Spawn.TabID, sw.Spec.Spawn.OpenerTabID, sw.Spec.Spawn.Reason, sw.Status.URL)
		}
	}
	g.Expect(spawned).To(Equal(1), "the session spawned one popup")
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).WithTimeout(30 * time.Second).Should(BeTrue())
	pages := chromePages(g)
	for _, id := range users {
		g.Expect(pages).To(HaveKey(id), "the user's popup stays open")
	}
	for _, url := range pages {
		g.Expect(strings.Contains(url, "/two-popups")).To(BeFalse(), "the session's page is closed")
	}
}
