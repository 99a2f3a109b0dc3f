package extension_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestUsersNewTabDuringAnActThroughExtension: a session's page lives as a
// background tab in the user's window (placement Tab, pinned there). While an
// action of the session runs on it (a click that keeps the page busy for seconds), the user opens a
// new tab of their own in that same window. The tab is the user's: never
// adopted, and open after the session is deleted. (Only proof ties a page to a
// session: a tab without an opener that merely appears in the acted-on tab's
// window while an act runs is no proof.)
func TestUsersNewTabDuringAnActThroughExtension(t *testing.T) {
	g, ctx, ns, user, s, sa := readerInUsersWindow(t)

	done := make(chan *twv1.BrowserAction, 1)
	go func() {
		done <- sa.Act("notes", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Busy"}})
	}()
	time.Sleep(2 * time.Second) // the click runs
	// The user's own new tab in their window (the last active one).
	userURL := fx.Path("/quiet?users-new-tab=" + ns)
	target, err := devtools.create(context.Background(), wire.CreateTarget{URL: userURL})
	g.Expect(err).NotTo(HaveOccurred())
	win, err := windowOfTarget(ctx, target)
	g.Expect(err).NotTo(HaveOccurred())
	// Chrome puts a new tab in the last active window, the user's: a tab
	// elsewhere would prove nothing about the acted-on tab's window.
	g.Expect(win).To(Equal(user.win), "the user's new tab landed in another window than theirs")
	created := time.Now()
	act := <-done
	t.Logf("user's tab created %v before the action returned; action status %+v", time.Since(created), act.Status)
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	neverAdopted(g, ns, userURL)
	deleteSession(g, s)
	g.Expect(chromePages(g)).To(HaveKey(target), "the user's new tab stays open")
}

// TestUsersOpenerlessTabDuringAnActThroughExtension: as above, but the user's
// tab comes with no opener at all, as a link another application hands to
// Chrome does (here chrome.tabs.create in the extension's own worker, which
// names no opener), in the window where the session's busy action runs. A tab
// that merely appears there while an act runs is no proof: never adopted, and
// open after the session is deleted.
func TestUsersOpenerlessTabDuringAnActThroughExtension(t *testing.T) {
	g, ctx, ns, user, s, sa := readerInUsersWindow(t)

	// The worker's session, ready before the action starts.
	sw, err := runningWorker(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	sess, err := devtools.attach(ctx, sw.TargetID)
	g.Expect(err).NotTo(HaveOccurred())
	defer devtools.detach(context.Background(), sess)
	g.Expect(devtools.do(ctx, sess, wire.RuntimeEnable{})).To(Succeed())
	_ = devtools.do(ctx, sess, wire.RunIfWaitingForDebugger{})
	g.Eventually(func() (bool, error) {
		var ready bool
		err := devtools.eval(ctx, sess, `typeof chrome === "object" && !!chrome.tabs`, &ready)
		return ready, err
	}, "20s").Should(BeTrue())

	done := make(chan *twv1.BrowserAction, 1)
	go func() {
		done <- sa.Act("notes", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Busy"}})
	}()
	time.Sleep(2 * time.Second) // the click runs
	userURL := fx.Path("/quiet?users-openerless-tab=" + ns)
	var res string
	g.Expect(devtools.eval(ctx, sess, fmt.Sprintf(`chrome.tabs.create({windowId: %d, url: %q, active: false}).then((t) => "opener " + t.openerTabId, (e) => "error: " + e.message)`, user.win, userURL), &res)).To(Succeed())
	g.Expect(res).To(Equal("opener undefined"), "the user's tab was created with no opener")
	act := <-done
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	var target string
	g.Eventually(func() string {
		for id, u := range chromePages(g) {
			if u == userURL {
				target = id
			}
		}
		return target
	}).ShouldNot(BeEmpty())
	neverAdopted(g, ns, userURL)
	deleteSession(g, s)
	g.Expect(chromePages(g)).To(HaveKey(target), "the user's tab stays open")
}

// readerInUsersWindow: the user's window (beginWithUser), a session "reader"
// pinned to it, and its window "notes" there as a background tab of the
// fixture's /slow page (whose "Busy" button keeps a click running for
// seconds), with the scripted agent that acts for the session.
func readerInUsersWindow(t *testing.T) (*WithT, context.Context, string, userWindow, *twv1.BrowserSession, *testenv.ScriptedAgent) {
	t.Helper()
	g, ctx, ns, user := beginWithUser(t, "mail", "news")
	u := testenv.UserClient(t, cfg, ns, "ada")
	s := session(ns, "reader")
	s.Spec.PinnedWindowID = user.windowID
	g.Expect(u.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "notes", "reader", fx.Path("/slow?ms=4000&ns="+ns))
	w.Spec.Placement = twv1.PlacementTab
	g.Expect(u.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w.Status.WindowID).To(Equal(user.windowID))
	}).Should(Succeed())
	sa := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "reader", Thread: s.Spec.Thread, Timeout: time.Minute}
	return g, ctx, ns, user, s, sa
}

// neverAdopted checks for 3 s that no Spawned window of the session "reader"
// is the page at url.
func neverAdopted(g *WithT, ns, url string) {
	g.Consistently(func(g Gomega) {
		for _, sw := range windowsOf(ns, "reader") {
			if sw.Spec.Source == twv1.SourceSpawned {
				g.Expect(sw.Spec.Spawn.URL).NotTo(Equal(url), "the user's tab was adopted as %s (reason %s)", sw.Name, sw.Spec.Spawn.Reason)
				g.Expect(sw.Status.URL).NotTo(Equal(url), "the user's tab was adopted as %s (reason %s)", sw.Name, sw.Spec.Spawn.Reason)
			}
		}
	}, "3s").Should(Succeed())
}
