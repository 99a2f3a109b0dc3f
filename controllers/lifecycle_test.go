package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/controllers"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
)

// createOpenWindows creates n Open windows of session, named and pointed at
// urls from the two formats (each given the window's index).
func createOpenWindows(g *WithT, ns, session, nameFmt, urlFmt string, n int) []*twv1.BrowserWindow {
	var ws []*twv1.BrowserWindow
	for i := range n {
		w := openWindow(ns, fmt.Sprintf(nameFmt, i), session, fmt.Sprintf(urlFmt, i))
		g.Expect(k8s.Create(context.Background(), w)).To(Succeed())
		ws = append(ws, w)
	}
	return ws
}

func openedTabs(t *testing.T, g *WithT, ws ...*twv1.BrowserWindow) []string {
	t.Helper()
	var ids []string
	g.Eventually(func(g Gomega) {
		ids = ids[:0]
		for _, w := range ws {
			get(t, w)
			g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen), "window %s", w.Name)
			ids = append(ids, w.Status.TabID)
		}
	}).Should(Succeed())
	return ids
}

// TestRestartMidCleanup stops the controller and the agent in the middle of the
// cleanup of ten windows: it finishes, nothing closes twice, no user tab closes.
func TestRestartMidCleanup(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	b := fake.New()
	userWin, userTabs := b.UserOpenWindow("https://user.example/a", "https://user.example/b")
	ctl := startController(t)
	agt := startAgent(t, "restart", b)

	s := session(ns, "ten", "restart")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	ws := createOpenWindows(g, ns, "ten", "page-%d", "https://work.example/%d", 10)
	tabs := openedTabs(t, g, ws...)

	// The agent goes away; the session is deleted; the controller marks every
	// window for deletion and is stopped too.
	agt.Stop()
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, w := range ws {
			g.Expect(get(t, w).DeletionTimestamp).NotTo(BeNil())
		}
	}).Should(Succeed())
	ctl.Stop()

	// The agent comes back alone, closes some pages, and is stopped again mid-way.
	agt = startAgent(t, "restart", b)
	g.Eventually(func() int { return b.PageCount() }).Should(BeNumerically("<", len(userTabs)+10))
	agt.Stop()

	// Both come back: the cleanup finishes.
	startRoles(t, "restart", b)
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	g.Expect(windowsOf(ns, "ten")).To(BeEmpty())
	for _, id := range tabs {
		g.Expect(b.HasPage(id)).To(BeFalse(), "page %s closed", id)
		g.Expect(b.CloseCount(id)).To(Equal(1), "page %s closed exactly once", id)
	}
	g.Expect(b.WindowTabs(userWin)).To(Equal(userTabs))
}

// TestListingBySource: a label selector returns exactly what a session owns, split by source.
func TestListingBySource(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://user.example/reading")
	startRoles(t, "listing", b)

	g.Expect(k8s.Create(ctx, session(ns, "mine", "listing"))).To(Succeed())
	g.Expect(k8s.Create(ctx, session(ns, "other", "listing"))).To(Succeed())
	a1, a2 := openWindow(ns, "a1", "mine", "https://a.example/1"), openWindow(ns, "a2", "mine", "https://a.example/2")
	o1 := openWindow(ns, "o1", "other", "https://o.example/1")
	for _, w := range []*twv1.BrowserWindow{a1, a2, o1} {
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
	}
	bind := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reading"},
		Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: "mine"}, Source: twv1.SourceBind, BindTabID: userTabs[0]},
	}
	g.Expect(k8s.Create(ctx, bind)).To(Succeed())
	tabs := openedTabs(t, g, a1)
	_, err := b.Spawn(tabs[0], "https://a.example/popup", true)
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		g.Expect(windowsOf(ns, "mine")).To(HaveLen(4))
		g.Expect(names(windowsOf(ns, "mine", twv1.SourceLabel, "open"))).To(ConsistOf("a1", "a2"))
		g.Expect(windowsOf(ns, "mine", twv1.SourceLabel, "spawned")).To(HaveLen(1))
		g.Expect(names(windowsOf(ns, "mine", twv1.SourceLabel, "bind"))).To(ConsistOf("reading"))
		g.Expect(names(windowsOf(ns, "other"))).To(ConsistOf("o1"))
		get(t, bind)
		g.Expect(apimeta.IsStatusConditionTrue(bind.Status.Conditions, twv1.BoundCondition)).To(BeTrue())
		g.Expect(bind.Status.URL).To(Equal("https://user.example/reading"))
	}).Should(Succeed())
}

func names(ws []twv1.BrowserWindow) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return out
}

// TestBoundTabLifecycle: a bound tab is used, never closed: it is detached when
// the session ends; when the user closes it the binding fails and no other tab
// takes its place; a bind to a tab that does not exist fails the same way.
func TestBoundTabLifecycle(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	userWin, userTabs := b.UserOpenWindow("https://user.example/1", "https://user.example/2", "https://user.example/3")
	startRoles(t, "binding", b)
	g.Expect(k8s.Create(ctx, session(ns, "reader", "binding"))).To(Succeed())
	bindTo := func(name, tab string) *twv1.BrowserWindow {
		w := &twv1.BrowserWindow{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: "reader"}, Source: twv1.SourceBind, BindTabID: tab},
		}
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		return w
	}
	kept, lost, missing := bindTo("kept", userTabs[0]), bindTo("lost", userTabs[1]), bindTo("missing", "tab-does-not-exist")
	openedTabs(t, g, kept, lost)

	b.UserCloseTab(userTabs[1])
	g.Eventually(func(g Gomega) {
		get(t, lost)
		g.Expect(lost.Status.Phase).To(Equal(twv1.WindowGone))
		c := apimeta.FindStatusCondition(lost.Status.Conditions, twv1.BoundCondition)
		g.Expect(c.Reason).To(Equal(twv1.ReasonBoundTabGone))
		g.Expect(lost.Status.TabID).To(Equal(userTabs[1]), "nothing picks another tab")
		get(t, missing)
		g.Expect(missing.Status.Phase).To(Equal(twv1.WindowGone))
		g.Expect(apimeta.FindStatusCondition(missing.Status.Conditions, twv1.BoundCondition).Reason).To(Equal(twv1.ReasonBoundTabNotFound))
	}).Should(Succeed())
	g.Consistently(func() string { return get(t, lost).Status.TabID }, "1s").Should(Equal(userTabs[1]))

	// Closing a bound tab through its disposition is refused by the API server.
	err := k8s.Patch(ctx, kept, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"Close"}}`)))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("a bound tab is the user's"))

	s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}
	deleteAndWait(t, g, s)
	g.Expect(b.WindowTabs(userWin)).To(Equal([]string{userTabs[0], userTabs[2]}), "the detached tab stays open")
	g.Expect(b.CloseCount(userTabs[0])).To(BeZero())
}

// TestDisconnectIsUnknownNotGone: pages are never declared closed because the
// browser became unreachable, and nothing opens twice after it is back.
func TestDisconnectIsUnknownNotGone(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	startRoles(t, "flaky", b)
	w := sessionWithWindow(g, ns, "s", "flaky", "w", "https://work.example/")
	tab := openedTabs(t, g, w)[0]
	pages := b.PageCount()

	b.Disconnect()
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowUnknown))
		g.Expect(apimeta.FindStatusCondition(w.Status.Conditions, twv1.OpenedCondition).Reason).To(Equal(twv1.ReasonBrowserUnreachable))
		p := get(t, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "flaky"}})
		g.Expect(apimeta.IsStatusConditionFalse(p.Status.Conditions, twv1.ConnectedCondition)).To(BeTrue())
	}).Should(Succeed())
	// A window created meanwhile waits instead of failing.
	later := openWindow(ns, "later", "s", "https://work.example/later")
	g.Expect(k8s.Create(ctx, later)).To(Succeed())

	b.Reconnect()
	g.Eventually(func(g Gomega) {
		g.Expect(get(t, w).Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w.Status.TabID).To(Equal(tab))
		g.Expect(get(t, later).Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())
	g.Consistently(b.PageCount, "1s").Should(Equal(pages + 1))
}

// TestFinishedSession: state Finished closes temporary pages, releases Keep
// pages as deliverables and keeps the session as a record.
func TestFinishedSession(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	startRoles(t, "finish", b)
	s := session(ns, "report", "finish")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	tmp, keep := openWindow(ns, "search", "report", "https://search.example/"), openWindow(ns, "result", "report", "https://result.example/")
	keep.Spec.Disposition = twv1.DispositionKeep
	g.Expect(k8s.Create(ctx, tmp)).To(Succeed())
	g.Expect(k8s.Create(ctx, keep)).To(Succeed())
	tabs := openedTabs(t, g, tmp, keep)

	g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, s)
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseFinished))
		g.Expect(s.Status.Deliverables).To(ConsistOf(twv1.Deliverable{Window: "result", URL: "https://result.example/", Title: "Title of https://result.example/"}))
		g.Expect(apimeta.IsStatusConditionTrue(s.Status.Conditions, twv1.CleanCondition)).To(BeTrue())
	}).Should(Succeed())
	g.Expect(windowsOf(ns, "report")).To(BeEmpty())
	g.Expect(b.HasPage(tabs[0])).To(BeFalse())
	g.Expect(b.HasPage(tabs[1])).To(BeTrue())

	// A finished session stays finished.
	err := k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Active"}}`)))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
}

// TestLastTabKeepsUserWindow: a session placing tabs in the user's window never
// closes that window, even when its tab is the last one left.
func TestLastTabKeepsUserWindow(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	userWin, userTabs := b.UserOpenWindow("https://user.example/only")
	startRoles(t, "lasttab", b)
	s := session(ns, "tabs", "lasttab")
	s.Spec.Placement = twv1.PlacementTab
	s.Spec.PinnedWindowID = userWin
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "bg", "tabs", "https://work.example/")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	tab := openedTabs(t, g, w)[0]
	g.Expect(w.Status.WindowID).To(Equal(userWin))
	g.Expect(w.Status.OwnsWindow).To(BeFalse())

	b.UserCloseTab(userTabs[0]) // the session's tab is now the window's last
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return b.HasPage(tab) }).Should(BeFalse())
	left := b.WindowTabs(userWin)
	g.Expect(left).To(HaveLen(1), "the user's window survives")
	snap, _ := b.Snapshot(ctx)
	p, _ := snap.Page(left[0])
	g.Expect(p.URL).To(Equal("about:blank"))
}

// TestUserClosedPageIsGone: a page the user closes is Gone, not re-opened.
func TestUserClosedPageIsGone(t *testing.T) {
	g, _, ns := begin(t, 20*time.Second)
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	startRoles(t, "gone", b)
	w := sessionWithWindow(g, ns, "s", "gone", "w", "https://work.example/")
	tab := openedTabs(t, g, w)[0]
	pages := b.PageCount()
	b.UserCloseTab(tab)
	g.Eventually(func() twv1.WindowPhase { return get(t, w).Status.Phase }).Should(Equal(twv1.WindowGone))
	g.Consistently(b.PageCount, "1s").Should(Equal(pages - 1))
}

// TestIdleTimeout: a session without activity for spec.idleTimeout finishes by
// itself: temporary pages close, Keep pages are released, Ready says why.
func TestIdleTimeout(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	startRoles(t, "idle", b)
	s := session(ns, "sleepy", "idle")
	// Long enough for both pages to open first on a loaded 2-core machine
	// (activity is kept to the second: a window's creation and open times).
	s.Spec.IdleTimeout = &metav1.Duration{Duration: 6 * time.Second}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	tmp, keep := openWindow(ns, "tmp", "sleepy", "https://work.example/tmp"), openWindow(ns, "keep", "sleepy", "https://work.example/keep")
	keep.Spec.Disposition = twv1.DispositionKeep
	g.Expect(k8s.Create(ctx, tmp)).To(Succeed())
	g.Expect(k8s.Create(ctx, keep)).To(Succeed())
	tabs := openedTabs(t, g, tmp, keep)
	g.Expect(get(t, s).Status.Phase).To(Equal(twv1.SessionPhaseActive), "active before the timeout")

	g.Eventually(func(g Gomega) {
		get(t, s)
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseFinished))
		g.Expect(s.Status.EndReason).To(Equal(twv1.ReasonIdleTimeout))
		c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(twv1.ReasonIdleTimeout))
	}).Should(Succeed())
	g.Expect(b.HasPage(tabs[0])).To(BeFalse())
	g.Expect(b.HasPage(tabs[1])).To(BeTrue())
	g.Expect(windowsOf(ns, "sleepy")).To(BeEmpty())
}

// TestTabPlacementPinnedCondition: the first Tab page pins its window (Placed=True,
// status.pinnedWindowId); a page the driver could not place there says so
// (Placed=False, placement_not_pinned, naming both windows and why), and the pin
// does not move to where that page landed.
func TestTabPlacementPinnedCondition(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	startRoles(t, "pinned", b)
	s := session(ns, "tabs", "pinned")
	s.Spec.Placement = twv1.PlacementTab
	g.Expect(k8s.Create(ctx, s)).To(Succeed())

	placed := func(w *twv1.BrowserWindow) *metav1.Condition {
		return apimeta.FindStatusCondition(w.Status.Conditions, twv1.PlacedCondition)
	}
	first := openWindow(ns, "first", "tabs", "https://work.example/1")
	g.Expect(k8s.Create(ctx, first)).To(Succeed())
	openedTabs(t, g, first)
	pin := first.Status.WindowID
	g.Expect(pin).NotTo(BeEmpty())
	g.Expect(first.Status.PinnedWindowID).To(Equal(pin))
	g.Expect(placed(first)).NotTo(BeNil())
	g.Expect(placed(first).Status).To(Equal(metav1.ConditionTrue))

	other, _ := b.UserOpenWindow("https://user.example/new")
	b.MisplaceTabs(other)
	second := openWindow(ns, "second", "tabs", "https://work.example/2")
	g.Expect(k8s.Create(ctx, second)).To(Succeed())
	openedTabs(t, g, second)
	g.Expect(second.Status.WindowID).To(Equal(other))
	g.Expect(second.Status.PinnedWindowID).To(Equal(pin))
	c := placed(second)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(twv1.ReasonPlacementNotPinned))
	g.Expect(c.Message).To(And(ContainSubstring(pin), ContainSubstring(other), ContainSubstring("cannot place")))

	b.MisplaceTabs("")
	third := openWindow(ns, "third", "tabs", "https://work.example/3")
	g.Expect(k8s.Create(ctx, third)).To(Succeed())
	openedTabs(t, g, third)
	g.Expect(third.Status.WindowID).To(Equal(pin), "the pin never follows where a page landed")
	g.Expect(placed(third).Status).To(Equal(metav1.ConditionTrue))

	// The user closes the pinned window: the next page opens in a window of its
	// own (never in whatever window has focus), and Placed says why.
	for _, tab := range b.WindowTabs(pin) {
		b.UserCloseTab(tab)
	}
	fourth := openWindow(ns, "fourth", "tabs", "https://work.example/4")
	g.Expect(k8s.Create(ctx, fourth)).To(Succeed())
	openedTabs(t, g, fourth)
	g.Expect(fourth.Status.WindowID).NotTo(BeElementOf(pin, other))
	g.Expect(fourth.Status.OwnsWindow).To(BeTrue(), "its window was made for it, and closes with it")
	c = placed(fourth)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(ContainSubstring("pinned window " + pin + " is gone"))
}

// TestRegistrationStoresThePageFinalizer: the controller's registration write
// hands a window to its profile's agent with the page finalizer already on it
// (the agent opens the page with no write of its own first). A window no agent
// took, of a session whose profile is gone, does not hold the session's
// deletion: the controller lets it go.
func TestRegistrationStoresThePageFinalizer(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	startController(t)
	// A profile with no agent: the session is placed on it (pinned), nothing takes its windows.
	createProfile(t, "no-agent", twv1.BrowserProfileSpec{Namespaces: []string{ns}})
	s := session(ns, "waits", "no-agent")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "w", "waits", "https://example.com/")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Labels).To(HaveKeyWithValue(twv1.ProfileLabel, "no-agent"))
		g.Expect(w.Finalizers).To(ContainElement(twv1.PageFinalizer), "stored with the label, in the same write")
		g.Expect(metav1.GetControllerOf(w)).NotTo(BeNil())
	}).Should(Succeed())
	g.Expect(controllers.AgentTook(w)).To(BeFalse(), "no agent wrote its status")

	// The profile goes, then the session: the window nobody took is let go.
	g.Expect(k8s.Delete(ctx, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "no-agent"}})).To(Succeed())
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(w), &twv1.BrowserWindow{}))
	}).Should(BeTrue(), "the untaken window is released and deleted")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), &twv1.BrowserSession{}))
	}).Should(BeTrue(), "the session goes")
}

// TestCleanupToldOnce: deleting a session with open pages reports
// dirty_session once while they close and SessionCleaned once when they are
// closed, however many reconciles the windows' going causes; the session goes.
func TestCleanupToldOnce(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	b := fake.New()
	startRoles(t, "told-once", b)

	s := session(ns, "told", "told-once")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	ws := createOpenWindows(g, ns, "told", "told-%d", "https://work.example/told/%d", 5)
	tabs := openedTabs(t, g, ws...)

	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), &twv1.BrowserSession{}))
	}).Should(BeTrue())
	for _, id := range tabs {
		g.Expect(b.HasPage(id)).To(BeFalse(), "page %s closed", id)
	}
	told := func(reason string) int32 {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var n int32
		for _, e := range list.Items {
			if e.Regarding.Kind != "BrowserSession" || e.Regarding.Name != "told" || e.Reason != reason {
				continue
			}
			if e.Series != nil {
				n += e.Series.Count
			} else {
				n++
			}
		}
		return n
	}
	g.Eventually(func() int32 { return told(twv1.EventSessionCleaned) }).Should(Equal(int32(1)))
	g.Consistently(func(g Gomega) {
		g.Expect(told(twv1.EventSessionCleaned)).To(Equal(int32(1)), "SessionCleaned once")
		g.Expect(told(twv1.ReasonDirtySession)).To(Equal(int32(1)), "dirty_session once")
	}, "2s").Should(Succeed())
}

// TestEndedSessionClosesAheadOfDeletion: the first window of an ended session
// to be cleaned up closes the temporary pages of all its windows at once, even
// of windows whose deletion has not arrived (here the controller is down and
// one window is deleted by hand). Those windows, reconciled meanwhile, are not
// told their page was never tabwarden's; the Keep page and the user's tabs
// stay; once the controller is back, every window and the session go, and no
// page closed twice.
func TestEndedSessionClosesAheadOfDeletion(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	b := fake.New()
	userWin, userTabs := b.UserOpenWindow("https://user.example/reading")
	ctl := startController(t)
	startAgent(t, "ahead", b)

	s := session(ns, "ahead", "ahead")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	ws := createOpenWindows(g, ns, "ahead", "ahead-%d", "https://work.example/ahead/%d", 3)
	keep := openWindow(ns, "deliverable", "ahead", "https://work.example/deliverable")
	keep.Spec.Disposition = twv1.DispositionKeep
	g.Expect(k8s.Create(ctx, keep)).To(Succeed())
	tabs := openedTabs(t, g, ws...)
	keepTab := openedTabs(t, g, keep)[0]

	ctl.Stop()
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Expect(k8s.Delete(ctx, ws[0])).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, id := range tabs {
			g.Expect(b.HasPage(id)).To(BeFalse(), "page %s closed with the session's first window cleanup", id)
		}
	}).Should(Succeed())
	g.Expect(b.HasPage(keepTab)).To(BeTrue(), "the Keep page stays open")

	// The windows not deleted yet are reconciled (an edit wakes them): nothing
	// claims their page was never opened by tabwarden.
	for _, w := range ws[1:] {
		get(t, w)
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations["example.com/poke"] = "1"
		g.Expect(k8s.Update(ctx, w)).To(Succeed())
	}
	g.Consistently(func(g Gomega) {
		for i, w := range ws[1:] {
			get(t, w)
			g.Expect(w.Status.TabID).To(Equal(tabs[i+1]), "window %s keeps naming its page", w.Name)
		}
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for _, e := range list.Items {
			g.Expect(e.Reason).NotTo(Equal(twv1.ReasonSpawnNotObserved), "event on %s: %s", e.Regarding.Name, e.Note)
		}
	}, "2s").Should(Succeed())

	startController(t)
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	g.Expect(windowsOf(ns, "ahead")).To(BeEmpty())
	for _, id := range tabs {
		g.Expect(b.CloseCount(id)).To(Equal(1), "page %s closed exactly once", id)
	}
	g.Expect(b.HasPage(keepTab)).To(BeTrue(), "the Keep page stays open, released")
	g.Expect(b.WindowTabs(userWin)).To(Equal(userTabs))
}
