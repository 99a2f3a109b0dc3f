package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// lifecycleWorld is one session of the user "ada" (the shipped edit role in a
// namespace of her own) with one temporary page open, served by an agent on the
// fake browser and the controller, each under its own identity.
type lifecycleWorld struct {
	ns   string
	b    *fake.Browser
	user client.Client
	s    *twv1.BrowserSession
	page *twv1.BrowserWindow
	tab  string
}

func newLifecycleWorld(t *testing.T, g *WithT, profile string, spec func(*twv1.BrowserSessionSpec)) *lifecycleWorld {
	t.Helper()
	w := &lifecycleWorld{ns: newNamespace(t), b: fake.New()}
	w.b.UserOpenWindow("https://user.example/")
	contactsSite(w.b)
	w.user = testenv.UserClient(t, cfg, w.ns, "ada")
	startController(t)
	startAgent(t, profile, w.b)
	w.s = session(w.ns, "captcha", profile)
	spec(&w.s.Spec)
	g.Expect(w.user.Create(context.Background(), w.s)).To(Succeed())
	w.page = openWindow(w.ns, "contacts", "captcha", contactsURL)
	g.Expect(w.user.Create(context.Background(), w.page)).To(Succeed())
	w.tab = openedTabs(t, g, w.page)[0]
	return w
}

// setState is the driver saying the session waits for its user, or is back.
func (w *lifecycleWorld) setState(t *testing.T, g *WithT, state twv1.SessionState) {
	t.Helper()
	s := &twv1.BrowserSession{}
	g.Expect(w.user.Get(context.Background(), client.ObjectKeyFromObject(w.s), s)).To(Succeed())
	before := s.DeepCopy()
	s.Spec.State = state
	g.Expect(w.user.Patch(context.Background(), s, client.MergeFrom(before))).To(Succeed())
}

// finished waits for the session to finish with reason and returns when its
// page was seen gone.
func (w *lifecycleWorld) finished(t *testing.T, g *WithT, reason string) time.Time {
	t.Helper()
	g.Eventually(func(g Gomega) {
		s := get(t, w.s)
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseFinished))
		g.Expect(s.Status.EndReason).To(Equal(reason))
		g.Expect(apimeta.FindStatusCondition(s.Status.Conditions, twv1.ReadyCondition)).To(HaveField("Reason", reason))
		g.Expect(w.b.HasPage(w.tab)).To(BeFalse(), "the session's page closed")
	}).WithPolling(50 * time.Millisecond).Should(Succeed())
	return time.Now()
}

// TestWaitingIsNotIdleness: a session waiting for its user (a captcha) outlives
// three times its idle timeout with its page open, records when the wait began,
// and once the driver is back its idle timeout runs from the end of the wait
// and ends it on time.
func TestWaitingIsNotIdleness(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	const idle = 2 * time.Second
	w := newLifecycleWorld(t, g, "wait", func(s *twv1.BrowserSessionSpec) {
		s.IdleTimeout = &metav1.Duration{Duration: idle}
	})
	w.setState(t, g, twv1.SessionWaitingForUser)
	g.Eventually(func(g Gomega) {
		s := get(t, w.s)
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseWaitingForUser))
		g.Expect(s.Status.WaitingSince).NotTo(BeNil(), "status.waitingSince says when the wait began")
	}).Should(Succeed())

	g.Consistently(func(g Gomega) {
		s := get(t, w.s)
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseWaitingForUser))
		g.Expect(s.Status.EndReason).To(BeEmpty())
		g.Expect(w.b.HasPage(w.tab)).To(BeTrue(), "the page the user solves the captcha in stays open")
	}).WithTimeout(3 * idle).WithPolling(100 * time.Millisecond).Should(Succeed())

	w.setState(t, g, twv1.SessionActive)
	back := time.Now()
	g.Eventually(func(g Gomega) {
		s := get(t, w.s)
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseActive))
		g.Expect(s.Status.WaitingSince).To(BeNil())
	}).Should(Succeed())
	gone := w.finished(t, g, twv1.ReasonIdleTimeout)
	took := gone.Sub(back)
	t.Logf("back from the wait -> idle end, page gone: %s (idleTimeout %s)", took, idle)
	// Activity times have one-second resolution.
	g.Expect(took).To(BeNumerically(">=", idle-time.Second), "the end of the wait is activity: the idle timer starts there")
	g.Expect(took).To(BeNumerically("<", idle+3*time.Second), "an idle Active session ends on time")
}

// TestUserWaitTimeout: spec.userWaitTimeout ends a wait that lasts too long,
// with its own reason, an Event, and the session's pages closed.
func TestUserWaitTimeout(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	const wait = 2 * time.Second
	w := newLifecycleWorld(t, g, "waitlimit", func(s *twv1.BrowserSessionSpec) {
		s.UserWaitTimeout = &metav1.Duration{Duration: wait}
	})
	w.setState(t, g, twv1.SessionWaitingForUser)
	start := time.Now()
	gone := w.finished(t, g, twv1.ReasonUserWaitTimeout)
	t.Logf("wait began -> UserWaitTimeout end, page gone: %s (userWaitTimeout %s)", gone.Sub(start), wait)
	g.Expect(gone.Sub(start)).To(BeNumerically(">=", wait-time.Second))
	g.Expect(gone.Sub(start)).To(BeNumerically("<", wait+3*time.Second))
	g.Expect(get(t, w.s).Status.WaitingSince).To(BeNil(), "a finished session waits for nobody")
	g.Eventually(func() []string { return eventReasons(t, w.ns, "captcha") }).Should(ContainElement(twv1.ReasonUserWaitTimeout))
}

// TestDrivenSessionDoesNotIdleOut: a session driven by actions (short ones
// back to back, then one whose Wait step outlasts the idle timeout) never idles
// out, though no window changes; once the driving stops it ends on time.
func TestDrivenSessionDoesNotIdleOut(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	// 3 s: on a loaded machine an action may wait a second to be claimed.
	const idle = 3 * time.Second
	w := newLifecycleWorld(t, g, "driven", func(s *twv1.BrowserSessionSpec) {
		s.IdleTimeout = &metav1.Duration{Duration: idle}
	})
	ag := &testenv.ScriptedAgent{T: t, C: w.user, NS: w.ns, Session: "captcha", Thread: w.s.Spec.Thread}
	alive := func() {
		t.Helper()
		s := get(t, w.s)
		g.Expect(s.Status.EndReason).To(BeEmpty(), "driven at %s", time.Now())
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseActive))
		g.Expect(w.b.HasPage(w.tab)).To(BeTrue())
	}
	for end := time.Now().Add(3 * idle); time.Now().Before(end); {
		act := ag.Act("contacts", observe())
		g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "%s: %s", act.Status.Reason, act.Status.Message)
		alive()
		time.Sleep(idle / 4)
	}
	long := ag.Act("contacts", twv1.ActionStep{Type: twv1.StepWait, Duration: &metav1.Duration{Duration: 2 * idle}})
	g.Expect(long.Status.Phase).To(Equal(twv1.ActionSucceeded), "%s: %s", long.Status.Reason, long.Status.Message)
	alive()
	stopped := time.Now()
	gone := w.finished(t, g, twv1.ReasonIdleTimeout)
	t.Logf("last action -> idle end, page gone: %s (idleTimeout %s)", gone.Sub(stopped), idle)
	g.Expect(gone.Sub(stopped)).To(BeNumerically("<", idle+3*time.Second))
}

// TestHostilePagesCloseWithTheirSession: a session's pages that resist
// closing (an unsent draft with a beforeunload handler, a page stuck in
// alert(), a crashed tab) close with the session's deletion; no dialog is left
// showing, and the prompt the draft raised was accepted, the alert dismissed.
func TestHostilePagesCloseWithTheirSession(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	w := newLifecycleWorld(t, g, "hostile", func(*twv1.BrowserSessionSpec) {})
	alert, crash := openWindow(w.ns, "alert", "captcha", "https://work.example/alert"), openWindow(w.ns, "crash", "captcha", "https://work.example/crash")
	g.Expect(w.user.Create(ctx, alert)).To(Succeed())
	g.Expect(w.user.Create(ctx, crash)).To(Succeed())
	tabs := openedTabs(t, g, w.page, alert, crash)
	w.b.ArmBeforeUnload(tabs[0])
	w.b.OpenDialog(tabs[1], "alert")
	w.b.CrashPage(tabs[2])
	g.Expect(w.b.DialogsShowing()).To(Equal(1))

	start := time.Now()
	g.Expect(w.user.Delete(ctx, w.s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, id := range tabs {
			g.Expect(w.b.HasPage(id)).To(BeFalse(), "page %s closed", id)
		}
	}).WithPolling(20 * time.Millisecond).Should(Succeed())
	t.Logf("delete -> draft, alert and crashed pages gone: %s", time.Since(start))
	g.Expect(w.b.DialogsShowing()).To(BeZero())
	g.Expect(w.b.Answered()).To(ConsistOf("beforeunload:accepted", "alert:dismissed"))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(w.user.Get(ctx, client.ObjectKeyFromObject(w.s), &twv1.BrowserSession{}))
	}).Should(BeTrue())
}

// TestPendingActionsAreActivity: creating an action is driving the session,
// even while no agent has claimed it yet (a busy or restarting agent): a
// session whose driver keeps creating actions never idles out; once the
// driving stops it ends on time.
func TestPendingActionsAreActivity(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	const idle = 3 * time.Second
	ns := newNamespace(t)
	b := fake.New()
	contactsSite(b)
	user := testenv.UserClient(t, cfg, ns, "ada")
	startController(t)
	ag := startAgent(t, "pending-acts", b)
	s := session(ns, "captcha", "pending-acts")
	s.Spec.IdleTimeout = &metav1.Duration{Duration: idle}
	g.Expect(user.Create(context.Background(), s)).To(Succeed())
	page := openWindow(ns, "contacts", "captcha", contactsURL)
	g.Expect(user.Create(context.Background(), page)).To(Succeed())
	openedTabs(t, g, page)
	// The agent stops: nothing claims the actions from here on.
	ag.Stop()

	create := func() {
		t.Helper()
		act := &twv1.BrowserAction{}
		act.Namespace, act.GenerateName = ns, "drive-"
		act.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "captcha"}, Thread: s.Spec.Thread,
			WindowRef: twv1.ActionWindowReference{Name: "contacts"}, Steps: []twv1.ActionStep{observe()}}
		g.Expect(user.Create(context.Background(), act)).To(Succeed())
	}
	for end := time.Now().Add(3 * idle); time.Now().Before(end); {
		create()
		time.Sleep(idle / 3)
		cur := get(t, s)
		g.Expect(cur.Status.EndReason).To(BeEmpty(), "driven at %s by actions no agent has claimed", time.Now())
	}
	var pending twv1.BrowserActionList
	g.Expect(k8s.List(context.Background(), &pending, client.InNamespace(ns))).To(Succeed())
	for _, a := range pending.Items {
		g.Expect(a.Status.StartTime).To(BeNil(), "action %s was claimed: the agent is stopped", a.Name)
	}
	stopped := time.Now()
	g.Eventually(func() string { return get(t, s).Status.EndReason }).Should(Equal(twv1.ReasonIdleTimeout))
	took := time.Since(stopped)
	t.Logf("last action created -> idle end: %s (idleTimeout %s)", took, idle)
	g.Expect(took).To(BeNumerically("<", idle+3*time.Second), "an idle session ends on time")
}
