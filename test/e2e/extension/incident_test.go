package extension_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestIncidentThroughExtension replays the compose-window incident in a real
// Chromium, driven through the extension: the session opens the contacts page in
// a window of its own, a real click on an e-mail address spawns the compose popup,
// the agent adopts it from the extension's report, the session is held until it is
// acknowledged, and deleting the session closes exactly what it owned. The user's
// own window is never touched.
func TestIncidentThroughExtension(t *testing.T) {
	// 1. The user's own window, with two tabs, opened before any session.
	g, ctx, ns, user := beginWithUser(t, "mail", "bank")

	// 2. A session and its contacts page, in a window of its own.
	s, contacts, contactsURL := contactsSession(g, k8s, ns, "taxes", "")
	g.Eventually(func(g Gomega) {
		get(t, contacts)
		g.Expect(contacts.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(contacts.Status.TabID).NotTo(BeEmpty())
		g.Expect(contacts.Status.OwnsWindow).To(BeTrue())
		g.Expect(contacts.Status.Title).To(Equal(fixture.TitleContacts))
	}).Should(Succeed())
	g.Expect(contacts.Status.WindowID).NotTo(Equal(user.windowID), "placement Window opens a window of the session's own")
	contactsTarget := pageTarget(g, contactsURL)
	// Never focused: the session's window does not take focus, the user's active
	// tab stays the visible one of its window.
	g.Expect(pageFocus(g, contactsTarget).Focus).To(BeFalse(), "the session's window is opened unfocused")
	g.Expect(pageFocus(g, user.targets[0]).Visibility).To(Equal("visible"), "the user's active tab stays active")
	contactsWin, err := windowOfTarget(ctx, contactsTarget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(contactsWin).NotTo(Equal(user.win))
	g.Expect(recordsByOwner(g)).To(HaveKeyWithValue(string(contacts.UID), HaveLen(1)), "the extension recorded the page it opened")

	// 3. A real click on an e-mail address: the page spawns a standalone compose popup.
	clicked := time.Now()
	clickIn(t, contactsTarget, "#contact-0")
	composeURL := fx.Path("/compose?to=" + url.QueryEscape(fixture.Contacts[0]))
	var compose twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		spawned := spawnedOf(ns, "taxes", contacts.Status.TabID)
		g.Expect(spawned).To(HaveLen(1))
		compose = spawned[0]
	}).Should(Succeed())
	record(t, "spawn adoption (click → Spawned object)", time.Since(clicked))
	g.Expect(compose.Spec.Spawn.SpawnedBy).To(Equal("contacts"))
	g.Expect(metav1.GetControllerOf(&compose).Name).To(Equal("taxes"))
	g.Expect(compose.Spec.Disposition).To(BeEmpty(), "a spawn starts unacknowledged")
	g.Eventually(func(g Gomega) {
		get(t, &compose)
		g.Expect(compose.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(compose.Status.URL).To(Equal(composeURL))
		g.Expect(compose.Status.OwnsWindow).To(BeTrue(), "a compose popup is a standalone window of its own")
		g.Expect(compose.Status.WindowID).NotTo(Or(Equal(contacts.Status.WindowID), Equal(user.windowID)))
	}).Should(Succeed())
	composeTarget := pageTarget(g, composeURL)
	g.Eventually(func(g Gomega) {
		recs := recordsByOwner(g)[string(compose.UID)]
		g.Expect(recs).To(HaveLen(1), "the agent recorded the adopted page in the extension")
		g.Expect(recs[0].CreatedWindow).To(BeTrue(), "the popup's window was born with it")
	}).Should(Succeed())

	// The session says what is unacknowledged, and how to acknowledge it.
	g.Eventually(func(g Gomega) {
		get(t, s)
		c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.SpawnsAcknowledgedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
		g.Expect(c.Message).To(ContainSubstring("kubectl patch browserwindow " + compose.Name))
		g.Expect(s.Status.Windows.Unacknowledged).To(BeEquivalentTo(1))
	}).Should(Succeed())

	// 4. A new Open window is held: nothing opens in Chrome.
	formURL := fx.Path("/quiet?form=taxes&ns=" + ns)
	form := openWindow(ns, "form", "taxes", formURL)
	g.Expect(k8s.Create(ctx, form)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, form)
		c := apimeta.FindStatusCondition(form.Status.Conditions, twv1.OpenedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
		g.Expect(c.Message).To(ContainSubstring(compose.Name))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(t, form).Status.TabID).To(BeEmpty())
		g.Expect(hasPageURL(formURL)).To(BeFalse())
	}, "2s", "200ms").Should(Succeed())

	// 5. Acknowledge the compose window with Close: it goes from Chrome, with its
	// popup window; the held window opens.
	acked := time.Now()
	ack(t, &compose, twv1.DispositionClose)
	g.Eventually(func() bool { return hasPageURL(composeURL) }).Should(BeFalse())
	record(t, "ack Close → compose gone from Chrome", time.Since(acked))
	g.Eventually(func(g Gomega) {
		g.Expect(get(t, &compose).Status.Phase).To(Equal(twv1.WindowClosed))
		get(t, form)
		g.Expect(form.Status.Phase).To(Equal(twv1.WindowOpen), "the held window opens once every spawn is acknowledged")
		g.Expect(form.Status.TabID).NotTo(BeEmpty())
		get(t, s)
		g.Expect(apimeta.IsStatusConditionTrue(s.Status.Conditions, twv1.SpawnsAcknowledgedCondition)).To(BeTrue())
	}).Should(Succeed())
	_, err = windowOfTarget(ctx, composeTarget)
	g.Expect(err).To(HaveOccurred(), "the compose popup's window is gone with it")
	// The seam's contract: closing a page that is already gone succeeds. (The agent
	// does close again when it acts on a stale read of the window.)
	g.Expect(host.Driver().Close(ctx, browser.CloseRequest{Key: string(compose.UID), ID: compose.Status.TabID})).To(Succeed())
	formTarget := pageTarget(g, formURL)
	recs := recordsByOwner(g)
	g.Expect(recs).NotTo(HaveKey(string(compose.UID)), "a closed page's record is dropped")
	g.Expect(recs).To(HaveKey(string(form.UID)))

	// Nothing of the user's was touched so far.
	during := chromePages(g)
	for id, u := range user.before {
		g.Expect(during).To(HaveKeyWithValue(id, u))
	}

	// 6. Delete the session: its pages close; the user's window and tabs stay.
	deleteSessionBackTo(t, g, s, user.before, "cleanup (delete session → pages closed)")
	for _, target := range []string{contactsTarget, formTarget, composeTarget} {
		_, err := windowOfTarget(ctx, target)
		g.Expect(err).To(HaveOccurred(), "owned page %s is closed", target)
	}
	userTabsStay(g, user.targets, user.win)
	g.Expect(pageFocus(g, user.targets[0]).Visibility).To(Equal("visible"), "the user's active tab is still the active one")
	g.Expect(recordsByOwner(g)).NotTo(Or(HaveKey(string(contacts.UID)), HaveKey(string(form.UID))))
}

type focusState struct {
	Focus      bool
	Visibility string
}

// pageFocus reads document.hasFocus() and document.visibilityState of a page.
func pageFocus(g Gomega, target string) focusState {
	ctx := context.Background()
	sess, err := devtools.attach(ctx, target)
	g.Expect(err).NotTo(HaveOccurred())
	defer devtools.detach(ctx, sess)
	var st focusState
	g.Expect(devtools.eval(ctx, sess, `({Focus: document.hasFocus(), Visibility: document.visibilityState})`, &st)).To(Succeed())
	return st
}
