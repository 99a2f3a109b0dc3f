package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// kstatusOf is what kstatus (the library behind kubectl wait's and Flux's and
// Argo CD's health checks of custom resources) computes for obj as stored.
func kstatusOf(g Gomega, obj client.Object) status.Status {
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	g.Expect(err).NotTo(HaveOccurred())
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	g.Expect(err).NotTo(HaveOccurred())
	return res.Status
}

// TestKstatusThroughIncident: health checks read tabwarden objects as a user
// expects at each step of the incident: a session is Current while it does what
// it should, InProgress while a spawn waits for acknowledgement or while it
// cleans up, Current again once finished and clean; a window is InProgress while
// held, Current when open or closed by tabwarden, Failed when the user closed its
// page (nothing reopens it); an action is Current once it succeeded and Failed
// once refused; a profile is InProgress while its browser is away.
func TestKstatusThroughIncident(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	contactsSite(b)
	b.UserOpenWindow("https://mail.example/inbox")
	startRoles(t, "kstatus", b)
	profile := &twv1.BrowserProfile{}
	profile.Name = "kstatus"
	g.Eventually(func(g Gomega) { g.Expect(kstatusOf(g, profile)).To(Equal(status.CurrentStatus)) }).Should(Succeed())

	s := session(ns, "taxes", "kstatus")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	contacts := openWindow(ns, "contacts", "taxes", "https://contacts.example/people")
	g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(kstatusOf(g, contacts)).To(Equal(status.CurrentStatus))
		g.Expect(contacts.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(kstatusOf(g, s)).To(Equal(status.CurrentStatus))
	}).Should(Succeed())
	for _, c := range s.Status.Conditions {
		g.Expect(c.ObservedGeneration).To(Equal(s.Generation), "condition %s", c.Type)
	}
	g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))

	// A spawn: the session waits for its acknowledgement; a new window is held.
	compose, err := b.Spawn(contacts.Status.TabID, "https://mail.example/compose?to=ada", true)
	g.Expect(err).NotTo(HaveOccurred())
	var composeWin *twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		composeWin = spawnedWindow(ns, "taxes", compose)
		g.Expect(composeWin).NotTo(BeNil())
		g.Expect(kstatusOf(g, s)).To(Equal(status.InProgressStatus))
	}).Should(Succeed())
	form := openWindow(ns, "form", "taxes", "https://forms.example/taxes")
	g.Expect(k8s.Create(ctx, form)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(t, form).Status.Conditions).To(ContainElement(HaveField("Type", twv1.OpenedCondition)))
		g.Expect(kstatusOf(g, form)).To(Equal(status.InProgressStatus))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(kstatusOf(g, form)).To(Equal(status.InProgressStatus)) }, "1s").Should(Succeed())

	// An action meanwhile is refused: Failed, with the guard's reason on Stalled.
	sa := &testenv.ScriptedAgent{T: t, C: k8s, NS: ns, Session: "taxes", Thread: s.Spec.Thread}
	refused := sa.Act("contacts", clickText("grace@example.com"))
	g.Expect(refused.Status.Phase).To(Equal(twv1.ActionRefused))
	g.Eventually(func(g Gomega) { g.Expect(kstatusOf(g, refused)).To(Equal(status.FailedStatus)) }).Should(Succeed())
	g.Expect(apimeta.FindStatusCondition(refused.Status.Conditions, twv1.StalledCondition)).To(And(
		HaveField("Reason", twv1.ReasonUnacknowledgedSpawns), HaveField("Message", ContainSubstring("kubectl patch browserwindow "+composeWin.Name))))
	g.Expect(refused.Status.ObservedGeneration).To(Equal(refused.Generation))

	// Acknowledged with Close: the compose window is done (Current), the session
	// and the held window are Current.
	ack(t, composeWin, twv1.DispositionClose)
	g.Eventually(func(g Gomega) {
		g.Expect(kstatusOf(g, composeWin)).To(Equal(status.CurrentStatus))
		g.Expect(composeWin.Status.Phase).To(Equal(twv1.WindowClosed))
		g.Expect(kstatusOf(g, form)).To(Equal(status.CurrentStatus))
		g.Expect(kstatusOf(g, s)).To(Equal(status.CurrentStatus))
	}).Should(Succeed())

	// An action that succeeds is Current (Ready).
	done := sa.Act("contacts", observe())
	g.Expect(done.Status.Phase).To(Equal(twv1.ActionSucceeded))
	g.Expect(kstatusOf(g, done)).To(Equal(status.CurrentStatus))
	g.Expect(apimeta.IsStatusConditionTrue(done.Status.Conditions, twv1.ReadyCondition)).To(BeTrue())

	// The user closes the form's page: nothing reopens it, the window Failed.
	b.UserCloseTab(get(t, form).Status.TabID)
	g.Eventually(func(g Gomega) {
		g.Expect(kstatusOf(g, form)).To(Equal(status.FailedStatus))
		g.Expect(form.Status.Phase).To(Equal(twv1.WindowGone))
	}).Should(Succeed())

	// The browser goes away: the profile is InProgress; the session finished
	// meanwhile is InProgress (cleaning up) until the browser is back.
	b.Disconnect()
	g.Eventually(func(g Gomega) { g.Expect(kstatusOf(g, profile)).To(Equal(status.InProgressStatus)) }).Should(Succeed())
	g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(kstatusOf(g, s)).To(Equal(status.InProgressStatus))
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseFinishing))
		g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
	}).Should(Succeed())
	b.Reconnect()
	g.Eventually(func(g Gomega) {
		g.Expect(kstatusOf(g, s)).To(Equal(status.CurrentStatus))
		g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseFinished))
		g.Expect(kstatusOf(g, profile)).To(Equal(status.CurrentStatus))
	}).Should(Succeed())
	g.Expect(profile.Status.ObservedGeneration).To(Equal(profile.Generation))
}
