package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestIncident replays the spawned-compose-window incident, asserting at each
// step what a user would see with kubectl and in the browser.
func TestIncident(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	// 1. The user already has two windows of their own.
	userWin1, userTabs1 := b.UserOpenWindow("https://mail.example/inbox", "https://bank.example/")
	userWin2, userTabs2 := b.UserOpenWindow("https://news.example/")
	startRoles(t, "incident", b)

	s := session(ns, "taxes", "incident")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	contacts := openWindow(ns, "contacts", "taxes", "https://contacts.example/people")
	g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, contacts)
		g.Expect(contacts.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(contacts.Status.TabID).NotTo(BeEmpty())
		g.Expect(contacts.Labels).To(HaveKeyWithValue(twv1.SessionLabel, "taxes"))
		g.Expect(metav1.GetControllerOf(contacts).Name).To(Equal("taxes"))
	}).Should(Succeed())
	g.Expect(b.HasPage(contacts.Status.TabID)).To(BeTrue())
	// Created without a disposition: `kubectl get bw` shows the default in effect.
	g.Expect(contacts.Spec.Disposition).To(BeEmpty())
	g.Expect(contacts.Status.Disposition).To(Equal(twv1.EffectiveDisposition(twv1.DispositionTemporary)))
	g.Expect(columns(g, ns, "browserwindows", "contacts")).To(HaveKeyWithValue("Disposition", string(twv1.DispositionTemporary)))

	// 2. The contacts page spawns a standalone compose popup.
	compose, err := b.Spawn(contacts.Status.TabID, "https://mail.example/compose?to=ada", true)
	g.Expect(err).NotTo(HaveOccurred())
	var composeWin *twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		composeWin = spawnedWindow(ns, "taxes", compose)
		g.Expect(composeWin).NotTo(BeNil())
		g.Expect(composeWin.Spec.Spawn.OpenerTabID).To(Equal(contacts.Status.TabID))
		g.Expect(composeWin.Spec.Spawn.SpawnedBy).To(Equal("contacts"))
		g.Expect(composeWin.Status.OwnsWindow).To(BeTrue(), "a compose popup is a standalone window of its own")
		g.Expect(metav1.GetControllerOf(composeWin).Name).To(Equal("taxes"))
		g.Expect(composeWin.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(composeWin.Status.URL).To(Equal("https://mail.example/compose?to=ada"))
		g.Expect(composeWin.Status.Disposition).To(Equal(twv1.DispositionUnacknowledged), "a spawn nobody acknowledged says so")
	}).Should(Succeed())
	g.Expect(columns(g, ns, "browserwindows", composeWin.Name)).To(HaveKeyWithValue("Disposition", string(twv1.DispositionUnacknowledged)))
	g.Eventually(func(g Gomega) {
		get(t, s)
		c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.SpawnsAcknowledgedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
		g.Expect(c.Message).To(ContainSubstring(`kubectl patch browserwindow ` + composeWin.Name + ` -n ` + ns + ` --type=merge -p '{"spec":{"disposition":"Close"}}'`))
		g.Expect(s.Status.Windows.Unacknowledged).To(BeEquivalentTo(1))
	}).Should(Succeed())

	// A new Open window is held, with a condition that says why.
	pagesBefore := b.PageCount()
	second := openWindow(ns, "form", "taxes", "https://tax.example/form")
	g.Expect(k8s.Create(ctx, second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, second)
		c := apimeta.FindStatusCondition(second.Status.Conditions, twv1.OpenedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
		g.Expect(c.Message).To(ContainSubstring(composeWin.Name))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(t, second).Status.TabID).To(BeEmpty())
		g.Expect(b.PageCount()).To(Equal(pagesBefore))
	}, "1s").Should(Succeed())
	// The hold is told where it stops something: one Warning on the held window
	// (kubectl describe browserwindow form), none on the session for the spawn
	// itself, whose condition already says it (three writes per spawn).
	g.Eventually(func() []string { return eventReasons(t, ns, "form") }).Should(ContainElement(twv1.ReasonUnacknowledgedSpawns))
	g.Expect(eventReasons(t, ns, "taxes")).NotTo(ContainElement(twv1.ReasonUnacknowledgedSpawns))

	// 3. The popup's own spawn is adopted too, transitively.
	attach, err := b.Spawn(compose, "https://mail.example/attachment", false)
	g.Expect(err).NotTo(HaveOccurred())
	var attachWin *twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		attachWin = spawnedWindow(ns, "taxes", attach)
		g.Expect(attachWin).NotTo(BeNil())
		g.Expect(attachWin.Spec.Spawn.SpawnedBy).To(Equal(composeWin.Name))
	}).Should(Succeed())

	// 4. Acknowledge: close the compose window, keep the attachment.
	ack(t, composeWin, twv1.DispositionClose)
	ack(t, attachWin, twv1.DispositionKeep)
	g.Eventually(func() bool { return b.HasPage(compose) }).Should(BeFalse())
	g.Eventually(func(g Gomega) {
		g.Expect(get(t, composeWin).Status.Phase).To(Equal(twv1.WindowClosed))
		g.Expect(composeWin.Status.Disposition).To(Equal(twv1.EffectiveDisposition(twv1.DispositionClose)))
		g.Expect(get(t, attachWin).Status.Disposition).To(Equal(twv1.EffectiveDisposition(twv1.DispositionKeep)))
		g.Expect(get(t, second).Status.Phase).To(Equal(twv1.WindowOpen), "the held window opens once every spawn is acknowledged")
		get(t, s)
		g.Expect(apimeta.IsStatusConditionTrue(s.Status.Conditions, twv1.SpawnsAcknowledgedCondition)).To(BeTrue())
	}).Should(Succeed())

	// 5. Delete the session: temporary pages close, the Keep page stays and is
	// released, the user's windows are untouched, the objects are gone.
	deleteAndWait(t, g, s)
	g.Expect(windowsOf(ns, "taxes")).To(BeEmpty())
	g.Expect(b.HasPage(contacts.Status.TabID)).To(BeFalse())
	g.Expect(b.HasPage(second.Status.TabID)).To(BeFalse())
	g.Expect(b.HasPage(attach)).To(BeTrue(), "the Keep page outlives the session")
	g.Expect(b.WindowTabs(userWin1)).To(Equal(userTabs1))
	g.Expect(b.WindowTabs(userWin2)).To(Equal(userTabs2))
	for _, id := range []string{contacts.Status.TabID, second.Status.TabID, compose} {
		g.Expect(b.CloseCount(id)).To(Equal(1), "page %s closed exactly once", id)
	}
}

func ack(t *testing.T, w *twv1.BrowserWindow, d twv1.Disposition) {
	t.Helper()
	testenv.Ack(t, k8s, w, d)
}

// TestRegistrationRefused: a session without thread or purpose never exists.
func TestRegistrationRefused(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for name, mutate := range map[string]func(*twv1.BrowserSession){
		"no purpose": func(s *twv1.BrowserSession) { s.Spec.Purpose = "" },
		"no thread":  func(s *twv1.BrowserSession) { s.Spec.Thread = "" },
		"no profile": func(s *twv1.BrowserSession) { s.Spec.ProfileName = "" },
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := session(ns, "refused", "p")
			mutate(s)
			err := k8s.Create(ctx, s)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			if name != "no profile" {
				g.Expect(err.Error()).To(ContainSubstring("session_unregistered"))
				g.Expect(err.Error()).To(ContainSubstring(`spec: {thread: "thread-42", purpose: "file the 2026 tax return form"}`))
			} else {
				g.Expect(err.Error()).To(ContainSubstring("set exactly one of spec.profileName"))
			}
		})
	}
}

// TestWindowWithoutSession: a window naming a missing session is refused with
// session_unregistered and a command that registers the session; it is
// registered as soon as the session exists.
func TestWindowWithoutSession(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	startRoles(t, "orphans", b)
	w := openWindow(ns, "orphan", "ghost", "https://example.com/")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := apimeta.FindStatusCondition(get(t, w).Status.Conditions, twv1.RegisteredCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(twv1.ReasonSessionUnregistered))
		g.Expect(c.Message).To(ContainSubstring(`"kind":"BrowserSession","metadata":{"name":"ghost"`))
		g.Expect(w.Status.Disposition).To(Equal(twv1.EffectiveDisposition(twv1.DispositionTemporary)), "the refusal's status says what is in effect too")
	}).Should(Succeed())
	g.Expect(b.PageCount()).To(Equal(1), "nothing opens for an unregistered window")

	g.Expect(k8s.Create(ctx, session(ns, "ghost", "orphans"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(apimeta.IsStatusConditionTrue(w.Status.Conditions, twv1.RegisteredCondition)).To(BeTrue())
	}).Should(Succeed())
	g.Expect(b.PageCount()).To(Equal(2))
}

var _ = strings.Contains
