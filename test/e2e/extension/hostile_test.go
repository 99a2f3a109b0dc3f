package extension_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// TestHostilePagesCloseWithTheirSession: a session's pages that resist
// closing (an unsent draft with a beforeunload handler armed after the user
// typed, a page stuck in alert(), a crashed tab) close with the session
// through the real extension, within seconds, and leave no dialog and no tab
// behind; the extension keeps serving (a page opened afterwards opens).
func TestHostilePagesCloseWithTheirSession(t *testing.T) {
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	startRoles(t)

	s := session(ns, "hostile")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	kinds := map[string]string{
		"draft": `document.body.textContent = 'unsent draft';
			window.addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'unsent'; return 'unsent'; }); true`,
		"alert": `setTimeout(() => alert('stuck'), 0); true`,
		"crash": ``,
	}
	urls := map[string]string{}
	for kind := range kinds {
		urls[kind] = fx.Path("/quiet?hostile=" + kind + "&ns=" + ns)
		if kind == "crash" {
			// Another site, so another renderer: the crash takes no other page with it.
			urls[kind] = strings.Replace(urls[kind], "127.0.0.1", "localhost", 1)
		}
		w := openWindow(ns, kind, "hostile", urls[kind])
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		g.Eventually(func() twv1.WindowPhase { return get(t, w).Status.Phase }).Should(Equal(twv1.WindowOpen))
	}
	for kind, js := range kinds {
		target := pageTarget(g, urls[kind])
		sess, err := devtools.attach(ctx, target)
		g.Expect(err).NotTo(HaveOccurred())
		if kind == "crash" {
			go func() { _, _ = call(context.Background(), devtools, sess, wire.PageCrash{}) }() // no reply: the renderer is gone
			continue
		}
		// Open means the page is there, not that its document has parsed a
		// body yet: arm it once the body exists (the scripts throw before that
		// without side effects, so a retry is safe).
		g.Eventually(func(g Gomega) {
			r, err := call(ctx, devtools, sess, wire.Evaluate{Expression: js, ReturnByValue: true, UserGesture: true})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.ExceptionDetails).To(BeNil(), "arming the %s page: %+v", kind, r.ExceptionDetails)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		devtools.detach(ctx, sess)
	}
	time.Sleep(500 * time.Millisecond) // the alert is up, the renderer has crashed

	start := time.Now()
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for kind, u := range urls {
			g.Expect(hasPageURL(u)).To(BeFalse(), "the %s page is closed", kind)
		}
	}).Should(Succeed())
	record(t, "delete session -> draft, alert and crashed pages gone", time.Since(start))
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	record(t, "delete session -> session gone (hostile pages)", time.Since(start))

	// The extension's queue is not stalled: the next session's page opens.
	s2 := session(ns, "after")
	g.Expect(k8s.Create(ctx, s2)).To(Succeed())
	w := openWindow(ns, "next", "after", fx.Path("/quiet?after="+ns))
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	g.Eventually(func() twv1.WindowPhase { return get(t, w).Status.Phase }).WithTimeout(10 * time.Second).Should(Equal(twv1.WindowOpen))
}
