package cdp_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"

	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
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

// TestPoolContextKeptForKeepPage: a pool session ends with a Keep page; the
// page is released, not closed, and its browser context (with the session's
// cookies) lives as long as the page does; once the user closes it, the
// context is disposed.
func TestPoolContextKeptForKeepPage(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	ctx := context.Background()
	h := hand(t)
	ns := newNamespace(t)
	profile := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "pool-keep"}, Spec: twv1.BrowserProfileSpec{Driver: twv1.DriverCDP, Pool: true, Namespaces: []string{ns}}}
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

	raw(t, wire.CloseTarget{TargetID: tab})
	g.Eventually(func(g Gomega) {
		g.Expect(browserContexts(t)).NotTo(HaveKey(ctxID))
		_, ok := poolContext(t, "pool-keep", ns+"/carol")
		g.Expect(ok).To(BeFalse())
	}).Should(Succeed(), "the context goes with the last page")
}
