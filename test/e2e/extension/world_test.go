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
	"github.com/tabwarden/tabwarden/internal/testenv"
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

// beginWithUser opens a test (begin, polling every 100 ms) in a new namespace
// whose user has their own window, with a landing tab of user and a quiet tab
// of other, open before any session (userWindowBefore); then it starts the
// roles.
func beginWithUser(t *testing.T, user, other string) (*WithT, context.Context, string, userWindow) {
	t.Helper()
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	uw := userWindowBefore(t, g, fx.Path("/landing?user="+user+"&ns="+ns), fx.Path("/quiet?user="+other+"&ns="+ns))
	startRoles(t)
	return g, ctx, ns, uw
}

// userWindow is the user's own window, opened before any session: its page
// targets, its window id as the driver reports it, Chrome's id of it, and the
// pages Chrome showed then (what must stay when the session ends).
type userWindow struct {
	targets  []string
	windowID string
	win      int
	before   map[string]string
}

// userWindowBefore opens the user's own window, a tab per url, before any
// session.
func userWindowBefore(t *testing.T, g *WithT, urls ...string) userWindow {
	t.Helper()
	var uw userWindow
	uw.targets, uw.windowID = openUserWindow(t, urls...)
	win, err := windowOfTarget(context.Background(), uw.targets[0])
	g.Expect(err).NotTo(HaveOccurred())
	uw.win, uw.before = win, chromePages(g)
	return uw
}

// contactsSession creates with c the session name in ns (pinned to the window
// pinned unless that is empty) and its contacts page in a window of its own:
// the session, the page's BrowserWindow and the page's url.
func contactsSession(g *WithT, c client.Client, ns, name, pinned string) (*twv1.BrowserSession, *twv1.BrowserWindow, string) {
	ctx := context.Background()
	s := session(ns, name)
	s.Spec.PinnedWindowID = pinned
	g.Expect(c.Create(ctx, s)).To(Succeed())
	contactsURL := fx.Path("/contacts?ns=" + ns)
	contacts := openWindow(ns, "contacts", name, contactsURL)
	g.Expect(c.Create(ctx, contacts)).To(Succeed())
	return s, contacts, contactsURL
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

// onPage is a test's session driving one fixture page: its namespace, the
// page's url and a scripted agent of the session, acting as the namespace's
// user ada.
type onPage struct {
	ns, url string
	agent   *testenv.ScriptedAgent
}

// sessionOnPage opens the world of a test that drives one fixture page (begin
// first): a new namespace whose user ada has the shipped edit role, the roles,
// session name, and its window (window, at the fixture's path with the
// namespace in its query, so the page is the test's own) Open on a page
// titled title.
func sessionOnPage(t *testing.T, g *WithT, name, window, path, title string) onPage {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t)
	s := session(ns, name)
	g.Expect(u.Create(ctx, s)).To(Succeed())
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	url := fx.Path(path + sep + "ns=" + ns)
	w := openWindow(ns, window, name, url)
	g.Expect(u.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w.Status.Title).To(Equal(title))
	}).Should(Succeed())
	return onPage{ns: ns, url: url, agent: &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: name, Thread: s.Spec.Thread, Timeout: time.Minute}}
}
