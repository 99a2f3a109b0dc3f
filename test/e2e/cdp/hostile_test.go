package cdp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// TestHostilePagesCloseWithTheirSession: a session's pages that resist
// closing (an unsent draft with a beforeunload handler armed after the user
// typed, a page stuck in alert(), a crashed tab) close with the session's
// deletion through the CDP agent on real Chromium, and Chromium lists none of
// them afterwards (no dialog left behind on an open page).
func TestHostilePagesCloseWithTheirSession(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	startRoles(t, "hostile")
	s := session(ns, "hostile", "hostile")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	kinds := map[string]string{
		"draft": `document.body.textContent = 'unsent draft';
			window.addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'unsent'; return 'unsent'; }); true`,
		"alert": `setTimeout(() => alert('stuck'), 0); true`,
		"crash": ``,
	}
	urls, ids := map[string]string{}, map[string]string{}
	for kind := range kinds {
		urls[kind] = site.Path("/quiet?hostile=" + kind + "&ns=" + ns)
		if kind == "crash" {
			// Another site, so another renderer: the crash takes no other page with it.
			urls[kind] = strings.Replace(urls[kind], "127.0.0.1", "localhost", 1)
		}
		w := openWindow(ns, kind, "hostile", urls[kind])
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		ids[kind] = waitOpen(t, g, w)
	}
	// The pages' own doing, through a DevTools connection of their own.
	raw, err := wire.Dial(ctx, chrome.WebSocketURL, func(wire.Event) {})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(raw.Close)
	for kind, js := range kinds {
		a, err := wire.Call(ctx, raw, "", wire.AttachToTarget{TargetID: ids[kind], Flatten: true})
		g.Expect(err).NotTo(HaveOccurred())
		if kind == "crash" {
			go func() { _, _ = wire.Call(context.Background(), raw, a.SessionID, wire.PageCrash{}) }() // no reply: the renderer is gone
			continue
		}
		// Open means the page is there, not that its document has parsed a
		// body yet: arm it once the body exists (the scripts throw before that
		// without side effects, so a retry is safe).
		g.Eventually(func(g Gomega) {
			r, err := wire.Call(ctx, raw, a.SessionID, wire.Evaluate{Expression: js, ReturnByValue: true, UserGesture: true})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.ExceptionDetails).To(BeNil(), "arming the %s page: %+v", kind, r.ExceptionDetails)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		_, _ = wire.Call(ctx, raw, "", wire.DetachFromTarget{SessionID: a.SessionID}) // the page keeps its handler and its dialog
	}
	time.Sleep(500 * time.Millisecond) // the alert is up, the renderer has crashed

	start := time.Now()
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		now := pages(t, h)
		for kind, id := range ids {
			g.Expect(now).NotTo(HaveKey(id), "the %s page is closed", kind)
		}
	}).WithPolling(50 * time.Millisecond).Should(Succeed())
	t.Logf("delete session -> draft, alert and crashed pages gone from Chromium: %v", time.Since(start))
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	t.Logf("delete session -> session gone: %v", time.Since(start))
}
