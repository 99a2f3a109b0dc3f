package cdp_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"

	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
	"github.com/tabwarden/tabwarden/internal/metrics"
)

// browserContexts lists the browser contexts Chromium has.
func browserContexts(t *testing.T) map[string]bool {
	t.Helper()
	r := raw(t, wire.GetBrowserContexts{})
	out := map[string]bool{}
	for _, id := range r.BrowserContextIDs {
		out[id] = true
	}
	return out
}

// poolContext reads the id of a pool context from the agent's ledger file.
func poolContext(t *testing.T, profile, name string) (string, bool) {
	t.Helper()
	l, err := ledger.New(cdp.LedgerFile(stateDir, profile))
	if err != nil {
		t.Fatal(err)
	}
	return l.Context(name)
}

// contextsDisposed reads tabwarden_pool_contexts_disposed_total{when} from the
// registry the in-process agents report to.
func contextsDisposed(t *testing.T, when string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metrics.PoolContextsDisposedName {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "when" && l.GetValue() == when {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestPoolCleanupDisposesContext: a pool session whose pages are all
// temporary (opened, and one spawned by a click) is cleaned up by disposing
// its browser context: every page of it closes, every window object goes, the
// session goes, and the context is gone from Chromium and from the ledger.
// Another session's page on the same pool Chrome stays open.
func TestPoolCleanupDisposesContext(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	profile := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "pool-dispose"}, Spec: twv1.BrowserProfileSpec{Driver: twv1.DriverCDP, Pool: true, Namespaces: []string{ns},
		// The fixture site is on loopback: the admin allows private destinations.
		URLPolicy: &twv1.URLPolicy{AllowPrivateNetworks: true}}}
	g.Expect(k8s.Create(ctx, profile)).To(Succeed())
	startController(t)
	startAgent(t, "pool-dispose", chrome.WebSocketURL, true)

	g.Expect(k8s.Create(ctx, session(ns, "erin", "pool-dispose"))).To(Succeed())
	other := openWindow(ns, "erin-stays", "erin", site.Path("/landing?stays=erin"))
	g.Expect(k8s.Create(ctx, other)).To(Succeed())
	otherTab := waitOpen(t, g, other)

	g.Expect(k8s.Create(ctx, session(ns, "dave", "pool-dispose"))).To(Succeed())
	var tabs []string
	for i := range 3 {
		w := openWindow(ns, fmt.Sprintf("dave-%d", i), "dave", site.Path(fmt.Sprintf("/landing?dave=%d", i)))
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		tabs = append(tabs, waitOpen(t, g, w))
	}
	contacts := openWindow(ns, "dave-contacts", "dave", site.Path("/contacts?dave=1"))
	g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
	tab := waitOpen(t, g, contacts)
	tabs = append(tabs, tab)
	g.Expect(click(ctx, h, tab, "#contact-1")).To(Succeed())
	g.Eventually(func(g Gomega) {
		sw := spawnedOf(ns, "dave", tab)
		g.Expect(sw).NotTo(BeNil(), "the compose page is adopted")
		g.Expect(get(t, sw).Status.TabID).NotTo(BeEmpty())
		tabs = append(tabs[:4], sw.Status.TabID)
	}).Should(Succeed())
	g.Expect(pages(t, h)).To(HaveKey(tabs[4]), "the spawned page is open")
	ctxID, ok := poolContext(t, "pool-dispose", ns+"/dave")
	g.Expect(ok).To(BeTrue(), "dave's context is recorded")
	inCleanup, after := contextsDisposed(t, metrics.DisposedInCleanup), contextsDisposed(t, metrics.DisposedAfterCleanup)

	g.Expect(k8s.Delete(ctx, &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dave"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		var list twv1.BrowserWindowList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{twv1.SessionLabel: "dave"})).To(Succeed())
		g.Expect(list.Items).To(BeEmpty(), "every window of dave goes")
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dave"}, &twv1.BrowserSession{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the session goes: %v", err)
	}).Should(Succeed())
	open := pages(t, h)
	for _, id := range tabs {
		g.Expect(open).NotTo(HaveKey(id), "page %s of dave is closed", id)
	}
	g.Expect(browserContexts(t)).NotTo(HaveKey(ctxID), "dave's context is disposed")
	_, ok = poolContext(t, "pool-dispose", ns+"/dave")
	g.Expect(ok).To(BeFalse(), "the ledger forgets dave's context")
	g.Expect(contextsDisposed(t, metrics.DisposedInCleanup)-inCleanup).To(Equal(1.0), "disposed by the cleanup, its pages with it")
	g.Expect(contextsDisposed(t, metrics.DisposedAfterCleanup)-after).To(BeZero(), "not one page at a time first")
	// Erin's session, on the same Chrome, is untouched.
	g.Expect(open).To(HaveKey(otherTab))
	g.Expect(get(t, other).Status.Phase).To(Equal(twv1.WindowOpen))
}

// TestPoolContextKeptForKeepPage: a pool session ends with a Keep page; the
// page is released, not closed, and its browser context (with the session's
// cookies) lives as long as the page does; once the user closes it, the
// context is disposed.
func TestPoolContextKeptForKeepPage(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	profile := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "pool-keep"}, Spec: twv1.BrowserProfileSpec{Driver: twv1.DriverCDP, Pool: true, Namespaces: []string{ns},
		// The fixture site is on loopback: the admin allows private destinations.
		URLPolicy: &twv1.URLPolicy{AllowPrivateNetworks: true}}}
	g.Expect(k8s.Create(ctx, profile)).To(Succeed())
	startController(t)
	startAgent(t, "pool-keep", chrome.WebSocketURL, true)

	g.Expect(k8s.Create(ctx, session(ns, "carol", "pool-keep"))).To(Succeed())
	login := openWindow(ns, "carol-login", "carol", site.Path("/set-cookie?user=carol"))
	g.Expect(k8s.Create(ctx, login)).To(Succeed())
	waitOpen(t, g, login)
	keep := openWindow(ns, "carol-keep", "carol", site.Path("/cookies?kept=carol"))
	keep.Spec.Disposition = twv1.DispositionKeep
	g.Expect(k8s.Create(ctx, keep)).To(Succeed())
	tab := waitOpen(t, g, keep)
	ctxID, ok := poolContext(t, "pool-keep", ns+"/carol")
	g.Expect(ok).To(BeTrue(), "carol's context is recorded")
	inCleanup, after := contextsDisposed(t, metrics.DisposedInCleanup), contextsDisposed(t, metrics.DisposedAfterCleanup)

	g.Expect(k8s.Delete(ctx, &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carol"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(keep), &twv1.BrowserWindow{}))
	}).Should(BeTrue(), "the Keep window is cleaned up")
	g.Eventually(func() int { return pagesAt(t, h, site.Path("/set-cookie?user=carol")) }).Should(BeZero())
	// Two heartbeats and more: the Keep page and its context stay.
	g.Consistently(func(g Gomega) {
		g.Expect(browserContexts(t)).To(HaveKey(ctxID))
		g.Expect(pages(t, h)).To(HaveKey(tab))
	}, "3s").Should(Succeed())
	g.Expect(contextsDisposed(t, metrics.DisposedInCleanup)-inCleanup).To(BeZero(), "a Keep page keeps the cleanup from disposing the context")

	raw(t, wire.CloseTarget{TargetID: tab})
	g.Eventually(func(g Gomega) {
		g.Expect(browserContexts(t)).NotTo(HaveKey(ctxID))
		_, ok := poolContext(t, "pool-keep", ns+"/carol")
		g.Expect(ok).To(BeFalse())
		g.Expect(contextsDisposed(t, metrics.DisposedAfterCleanup)-after).To(Equal(1.0), "counted as disposed after the cleanup")
	}).Should(Succeed(), "the context goes with the last page")
}
