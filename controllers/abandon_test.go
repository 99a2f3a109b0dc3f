package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authzv1 "k8s.io/api/authorization/v1"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

func abandoning(ns, name, profile string, after time.Duration) *twv1.BrowserSession {
	s := session(ns, name, profile)
	s.Spec.AbandonAfter = &metav1.Duration{Duration: after}
	return s
}

// TestAbandonedWithoutHolder: a session with abandonAfter that no client ever
// holds counts from its creation: NotYetHeld, then Held=False (Abandoned),
// endReason Abandoned, its page closed, Ready=True reason Abandoned. A Lease
// named after it that it does not own (made by someone else, or left by an
// earlier session of the same name) does not hold it.
func TestAbandonedWithoutHolder(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://user.example/inbox")
	startRoles(t, "abandon-noholder", b)

	// A forged Lease: the session's name and label, but not owned by it.
	forged := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody", Labels: map[string]string{twv1.SessionLabel: "nobody"}},
		Spec:       coordv1.LeaseSpec{HolderIdentity: ptr.To("squatter"), RenewTime: &metav1.MicroTime{Time: time.Now().Add(time.Hour)}},
	}
	g.Expect(k8s.Create(ctx, forged)).To(Succeed())

	const after = 5 * time.Second
	s := abandoning(ns, "nobody", "abandon-noholder", after)
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "page", "nobody", "https://work.example/form")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	tab := openedTabs(t, g, w)[0]
	c := apimeta.FindStatusCondition(get(t, s).Status.Conditions, twv1.HeldCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Reason).To(Equal(twv1.ReasonNotYetHeld))
	g.Expect(s.Status.Holder).To(BeEmpty(), "a Lease the session does not own names no holder")

	g.Eventually(func() string { return get(t, s).Status.EndReason }).Should(Equal(twv1.ReasonAbandoned))
	ended := time.Now()
	g.Expect(ended.Sub(s.CreationTimestamp.Time)).To(BeNumerically(">=", after-time.Second), "abandoned no earlier than abandonAfter after creation (1s timestamp resolution)")
	g.Eventually(func() bool { return b.HasPage(tab) }).Should(BeFalse())
	g.Eventually(func() twv1.SessionPhase { return get(t, s).Status.Phase }).Should(Equal(twv1.SessionPhaseFinished))
	c = apimeta.FindStatusCondition(s.Status.Conditions, twv1.HeldCondition)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(twv1.ReasonAbandoned))
	g.Expect(apimeta.FindStatusCondition(s.Status.Conditions, twv1.ReadyCondition).Reason).To(Equal(twv1.ReasonAbandoned))
	g.Expect(b.HasPage(userTabs[0])).To(BeTrue(), "the user's tab stays")
}

// TestHolderLeaseAccess: the session's driver (tabwarden-edit in its
// namespace) holds it through ops.Hold, and it outlives abandonAfter many times
// over; a user of another namespace can neither renew nor take over that Lease;
// the controller may read Leases but write none outside its own namespace. Once
// the holder stops, the session is abandoned.
func TestHolderLeaseAccess(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)
	b := fake.New()
	startRoles(t, "abandon-held", b)
	alice, err := client.New(testenv.AllowUser(t, cfg, ns, "alice-holder"), client.Options{Scheme: run.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	mallory, err := client.New(testenv.AllowUser(t, cfg, other, "mallory-holder"), client.Options{Scheme: run.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	const after = 3 * time.Second
	s := abandoning(ns, "held", "abandon-held", after)
	g.Expect(alice.Create(ctx, s)).To(Succeed())
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	o := &ops.Ops{Client: alice, Namespace: ns}
	go func() { done <- o.Hold(hctx, "held", "alice's script", nil) }()
	w := openWindow(ns, "page", "held", "https://work.example/held")
	g.Expect(alice.Create(ctx, w)).To(Succeed())
	tab := openedTabs(t, g, w)[0]

	l := &coordv1.Lease{}
	g.Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, l) }).Should(Succeed())
	// Another namespace's user: no renewal, no takeover, not even a read.
	steal := l.DeepCopy()
	steal.Spec.HolderIdentity = ptr.To("mallory")
	steal.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
	g.Expect(apierrors.IsForbidden(mallory.Update(ctx, steal))).To(BeTrue(), "mallory renews alice's Lease")
	g.Expect(apierrors.IsForbidden(mallory.Get(ctx, client.ObjectKeyFromObject(l), &coordv1.Lease{}))).To(BeTrue())
	g.Expect(apierrors.IsForbidden(mallory.Delete(ctx, l))).To(BeTrue())
	// The controller's identity reads holder Leases and writes none in a user namespace.
	for verb, allowed := range map[string]bool{"watch": true, "list": true, "get": true, "update": false, "create": false, "delete": false, "patch": false} {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: "tabwarden-controller", Groups: []string{access.ControllerGroup},
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: "held"},
		}}
		g.Expect(k8s.Create(ctx, sar)).To(Succeed())
		g.Expect(sar.Status.Allowed).To(Equal(allowed), "controller %s leases in %s", verb, ns)
	}

	g.Consistently(func(g Gomega) {
		get(t, s)
		g.Expect(s.Ended()).To(BeFalse())
		g.Expect(s.Status.Holder).To(Equal("alice's script"))
		g.Expect(b.HasPage(tab)).To(BeTrue())
	}, 3*after, 250*time.Millisecond).Should(Succeed())
	g.Expect(apimeta.IsStatusConditionTrue(s.Status.Conditions, twv1.HeldCondition)).To(BeTrue())
	g.Expect(s.Status.LastRenewal).NotTo(BeNil())

	// The holder stops: abandoned after abandonAfter, its page closed.
	stop()
	g.Expect(<-done).To(Succeed())
	stopped := time.Now()
	g.Eventually(func() string { return get(t, s).Status.EndReason }).Should(Equal(twv1.ReasonAbandoned))
	t.Logf("holder stopped → abandoned: %s", time.Since(stopped).Round(10*time.Millisecond))
	g.Eventually(func() bool { return b.HasPage(tab) }).Should(BeFalse())
	t.Logf("holder stopped → page closed: %s", time.Since(stopped).Round(10*time.Millisecond))
}
