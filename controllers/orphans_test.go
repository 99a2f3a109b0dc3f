package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
)

// TestOrphanedPagesAreCollected: a window that went without its agent closing
// the page (its finalizer taken off while the agent was away) leaves a page the
// ledger still holds; the agent, back, closes it. A user's tab is never touched.
func TestOrphanedPagesAreCollected(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	ns := newNamespace(t)
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://user.example/reading")
	startController(t)
	agentRole := startAgent(t, "orphans", b)
	g.Expect(k8s.Create(ctx, session(ns, "s", "orphans"))).To(Succeed())
	w := openWindow(ns, "page", "s", "https://work.example/orphan")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	page := openedTabs(t, g, w)[0]

	// The agent goes away; someone lets the window go without it.
	agentRole.Stop()
	g.Expect(k8s.Patch(ctx, w, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	g.Expect(k8s.Delete(ctx, w)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(w), &twv1.BrowserWindow{}))
	}).Should(BeTrue())
	g.Expect(b.HasPage(page)).To(BeTrue(), "nobody closed it while the agent was away")

	startAgent(t, "orphans", b)
	g.Eventually(func() bool { return b.HasPage(page) }).Should(BeFalse(), "the agent closes the page whose window is gone")
	g.Expect(b.CloseCount(page)).To(Equal(1))
	for _, id := range userTabs {
		g.Expect(b.HasPage(id)).To(BeTrue(), "the user's tab stays")
		g.Expect(b.CloseCount(id)).To(BeZero())
	}
}
