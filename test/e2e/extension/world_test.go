package extension_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// begin opens a test on the suite's shared world (TestMain): a gomega with the
// suite's timeouts (30 s, polling every poll) and the paired extension.
func begin(t *testing.T, poll time.Duration) (*WithT, context.Context) {
	t.Helper()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(poll)
	paired(t)
	return g, context.Background()
}

// userWindowBefore opens the user's own window, a tab per url, before any
// session: its targets, its window id as the driver reports it, Chrome's id of
// it, and the pages Chrome shows then (what must stay when the session ends).
func userWindowBefore(t *testing.T, g *WithT, urls ...string) (targets []string, windowID string, win int, before map[string]string) {
	t.Helper()
	targets, windowID = openUserWindow(t, urls...)
	win, err := windowOfTarget(context.Background(), targets[0])
	g.Expect(err).NotTo(HaveOccurred())
	return targets, windowID, win, chromePages(g)
}

// deleteSession deletes s and waits until the API server no longer has it (its
// finalizers done).
func deleteSession(g *WithT, s *twv1.BrowserSession) {
	ctx := context.Background()
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
}

// deleteSessionBackTo deletes s and waits until Chrome shows exactly the pages
// it showed before the session (recording how long that took as what), with no
// window of the session left.
func deleteSessionBackTo(t *testing.T, g *WithT, s *twv1.BrowserSession, before map[string]string, what string) {
	t.Helper()
	deleted := time.Now()
	deleteSession(g, s)
	g.Eventually(func(g Gomega) { g.Expect(chromePages(g)).To(Equal(before)) }).Should(Succeed())
	record(t, what, time.Since(deleted))
	g.Expect(windowsOf(s.Namespace, s.Name)).To(BeEmpty())
}

// userTabsStay checks that each of the user's tabs is open, in the user's window.
func userTabsStay(g *WithT, targets []string, win int) {
	for _, target := range targets {
		w, err := windowOfTarget(context.Background(), target)
		g.Expect(err).NotTo(HaveOccurred(), "the user's tab %s is open", target)
		g.Expect(w).To(Equal(win), "in the user's window")
	}
}

// attachPopup opens the extension's popup with open and attaches a DevTools
// session to its page; when the test ends, the session detaches and the popup
// closes.
func attachPopup(t *testing.T, g *WithT, open func(context.Context) (string, error)) (session string) {
	t.Helper()
	ctx := context.Background()
	popup, err := open(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = devtools.closeTarget(context.Background(), popup) // best-effort cleanup
	})
	session, err = devtools.attach(ctx, popup)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { devtools.detach(ctx, session) })
	return session
}

// waitOpen waits until each window is Open.
func waitOpen(t *testing.T, g *WithT, ws ...*twv1.BrowserWindow) {
	t.Helper()
	for _, w := range ws {
		g.Eventually(func(g Gomega) { g.Expect(get(t, w).Status.Phase).To(Equal(twv1.WindowOpen)) }).Should(Succeed())
	}
}
