package controllers_test

import (
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
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://user.example/reading")
	startController(t)
	agentRole := startAgent(t, "orphans", b)
	w := sessionWithWindow(g, ns, "s", "orphans", "page", "https://work.example/orphan")
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

// TestRestartedAgentFindsWindowsByUID: an agent that restarts knows the
// windows behind the driver's records from its cache, by uid: a spawn from a
// page opened before the restart is adopted under the page's window, while a
// record whose window was deleted and made again under the same name does not
// follow the name: that page is collected as an orphan and the new window gets
// a page of its own.
func TestRestartedAgentFindsWindowsByUID(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	b := fake.New()
	startController(t)
	agentRole := startAgent(t, "restart-uid", b)
	g.Expect(k8s.Create(ctx, session(ns, "s", "restart-uid"))).To(Succeed())
	keeper := openWindow(ns, "keeper", "s", "https://work.example/keeper")
	reused := openWindow(ns, "reused", "s", "https://work.example/first")
	g.Expect(k8s.Create(ctx, keeper)).To(Succeed())
	g.Expect(k8s.Create(ctx, reused)).To(Succeed())
	tabs := openedTabs(t, g, keeper, reused)
	keeperPage, oldPage := tabs[0], tabs[1]
	oldUID := get(t, reused).UID

	// While the agent is away, "reused" goes without it and is made again.
	agentRole.Stop()
	g.Expect(k8s.Patch(ctx, reused, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	g.Expect(k8s.Delete(ctx, reused)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(reused), &twv1.BrowserWindow{}))
	}).Should(BeTrue())
	again := openWindow(ns, "reused", "s", "https://work.example/second")
	g.Expect(k8s.Create(ctx, again)).To(Succeed())
	g.Expect(again.UID).NotTo(Equal(oldUID))

	startAgent(t, "restart-uid", b)
	newPage := openedTabs(t, g, again)[0]
	g.Expect(newPage).NotTo(Equal(oldPage), "the new window has a page of its own")
	g.Eventually(func() bool { return b.HasPage(oldPage) }).Should(BeFalse(), "the old window's page is an orphan, collected")
	g.Expect(b.CloseCount(oldPage)).To(Equal(1))
	g.Expect(b.HasPage(newPage)).To(BeTrue(), "the orphan's collection leaves the new window's page")

	// A spawn from a page opened before the restart is adopted under its window.
	popup, err := b.Spawn(keeperPage, "https://work.example/popup", true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		w := spawnedWindow(ns, "s", popup)
		g.Expect(w).NotTo(BeNil())
		g.Expect(w.Spec.Spawn.SpawnedBy).To(Equal("keeper"))
	}).Should(Succeed())
}
