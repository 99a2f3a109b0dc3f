package cdp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

func ack(t *testing.T, w *twv1.BrowserWindow, d twv1.Disposition) {
	t.Helper()
	testenv.Ack(t, k8s, w, d)
}

func waitOpen(t *testing.T, g *WithT, w *twv1.BrowserWindow) string {
	t.Helper()
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w.Status.TabID).NotTo(BeEmpty())
	}).Should(Succeed())
	return w.Status.TabID
}

// userWindow opens a window of the user's, not through tabwarden, and returns its pages.
func userWindow(t *testing.T, h interface {
	Open(context.Context, browser.OpenRequest) (browser.Page, error)
}, url string) browser.Page {
	t.Helper()
	p, err := h.Open(context.Background(), browser.OpenRequest{Key: fmt.Sprintf("user-%d", time.Now().UnixNano()), URL: url, NewWindow: true})
	if err != nil {
		t.Fatalf("opening the user's window: %v", err)
	}
	return p
}

// TestIncidentOnChromium: the incident on real Chromium, with a real click.
func TestIncidentOnChromium(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	user := userWindow(t, h, site.Path("/quiet?user=1"))
	userBefore := pages(t, h)
	ns := newNamespace(t)
	startRoles(t, "incident")

	s := session(ns, "contacts-form", "incident")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	contacts := openWindow(ns, "contacts", "contacts-form", site.Path("/contacts"))
	g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
	contactsTab := waitOpen(t, g, contacts)
	g.Expect(contacts.Status.OwnsWindow).To(BeTrue())
	g.Expect(contacts.Status.WindowID).NotTo(Equal(user.WindowID))

	// A real click on an e-mail address spawns a standalone compose window.
	clicked := time.Now()
	g.Expect(click(ctx, h, contactsTab, "#contact-0")).To(Succeed())
	var compose *twv1.BrowserWindow
	g.Eventually(func() *twv1.BrowserWindow { compose = spawnedOf(ns, "contacts-form", contactsTab); return compose }).ShouldNot(BeNil())
	t.Logf("click → Spawned BrowserWindow listed: %v", time.Since(clicked))
	g.Eventually(func(g Gomega) {
		get(t, compose)
		g.Expect(compose.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(compose.Status.URL).To(HavePrefix(site.Path("/compose")))
		g.Expect(compose.Status.OwnsWindow).To(BeTrue(), "the compose popup is a window of its own")
		g.Expect(compose.Spec.Spawn.SpawnedBy).To(Equal("contacts"))
		g.Expect(metav1.GetControllerOf(compose).Name).To(Equal("contacts-form"))
		get(t, s)
		c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.SpawnsAcknowledgedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
	}).Should(Succeed())
	composeTab := compose.Status.TabID
	g.Expect(pages(t, h)).To(HaveKey(composeTab))

	// The next Open window is held.
	next := openWindow(ns, "next", "contacts-form", site.Path("/quiet?next=1"))
	g.Expect(k8s.Create(ctx, next)).To(Succeed())
	g.Eventually(func() string {
		c := apimeta.FindStatusCondition(get(t, next).Status.Conditions, twv1.OpenedCondition)
		if c == nil {
			return ""
		}
		return c.Reason
	}).Should(Equal(twv1.ReasonUnacknowledgedSpawns))
	g.Expect(pagesAt(t, h, site.Path("/quiet?next=1"))).To(BeZero())

	// Acknowledge with Close: the compose window is gone from Chromium; the held window opens.
	acked := time.Now()
	ack(t, compose, twv1.DispositionClose)
	g.Eventually(func() map[string]browser.Page { return pages(t, h) }).ShouldNot(HaveKey(composeTab))
	t.Logf("ack Close → compose page gone from Chromium: %v", time.Since(acked))
	waitOpen(t, g, next)

	// Delete the session: its pages close; the user's window keeps all its tabs.
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	now := pages(t, h)
	g.Expect(now).NotTo(HaveKey(contactsTab))
	g.Expect(now).NotTo(HaveKey(next.Status.TabID))
	for id, p := range userBefore {
		g.Expect(now).To(HaveKey(id), "page %s (%s) open before the session is still open", id, p.URL)
	}
	g.Expect(now[user.ID].WindowID).To(Equal(user.WindowID))
}

// TestEverySpawnKindIsAdopted: popups, target=_blank and noopener links, and an
// OAuth popup's own popup are all adopted into the session.
func TestEverySpawnKindIsAdopted(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	startRoles(t, "kinds")
	g.Expect(k8s.Create(ctx, session(ns, "kinds", "kinds"))).To(Succeed())

	for _, tc := range []struct{ page, click, spawnPath string }{
		{"/contacts", "#contact-1", "/compose"},
		{"/blank-link", "#open-landing", "/landing"},
		{"/noopener", "#open-landing", "/landing"},
		{"/oauth", "#signin", "/oauth/authorize"},
	} {
		name := strings.Trim(strings.ReplaceAll(tc.page, "/", "-"), "-")
		w := openWindow(ns, name, "kinds", site.Path(tc.page))
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		tab := waitOpen(t, g, w)
		// Each click comes after the previous spawn was acknowledged (Keep), as the gate demands.
		g.Expect(click(ctx, h, tab, tc.click)).To(Succeed())
		var sw *twv1.BrowserWindow
		g.Eventually(func(g Gomega) {
			sw = spawnedOf(ns, "kinds", tab)
			g.Expect(sw).NotTo(BeNil(), "%s: spawn of %s adopted", tc.page, tc.click)
			get(t, sw)
			g.Expect(sw.Status.URL).To(HavePrefix(site.Path(tc.spawnPath)))
			g.Expect(sw.Spec.Spawn.SpawnedBy).To(Equal(name))
			g.Expect(sw.Spec.Spawn.Reason).To(Equal("opener"))
		}).Should(Succeed())
		if tc.page == "/oauth" {
			// The authorize popup opens the consent popup: adopted transitively.
			g.Expect(click(ctx, h, sw.Status.TabID, "#consent")).To(Succeed())
			g.Eventually(func(g Gomega) {
				consent := spawnedOf(ns, "kinds", sw.Status.TabID)
				g.Expect(consent).NotTo(BeNil())
				g.Expect(consent.Spec.Spawn.SpawnedBy).To(Equal(sw.Name))
				g.Expect(get(t, consent).Status.URL).To(HavePrefix(site.Path("/oauth/consent")))
				ack(t, consent, twv1.DispositionKeep)
			}).Should(Succeed())
		}
		ack(t, sw, twv1.DispositionKeep)
	}
	g.Expect(spawned(ns, "kinds")).To(HaveLen(5))
}

// TestCleanupOfTenPages: deleting a session owning ten pages closes them all in
// Chromium; its Keep page stays open and is released; a bound user tab stays.
func TestCleanupOfTenPages(t *testing.T) {
	g, ctx, h := begin(t, 45*time.Second)
	reading := userWindow(t, h, site.Path("/quiet?reading=1"))
	ns := newNamespace(t)
	startRoles(t, "ten")
	s := session(ns, "ten", "ten")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	var ws []*twv1.BrowserWindow
	for i := range 10 {
		w := openWindow(ns, fmt.Sprintf("p%d", i), "ten", site.Path(fmt.Sprintf("/quiet?ten=%d", i)))
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		ws = append(ws, w)
	}
	keep := openWindow(ns, "deliverable", "ten", site.Path("/landing?deliverable=1"))
	keep.Spec.Disposition = twv1.DispositionKeep
	g.Expect(k8s.Create(ctx, keep)).To(Succeed())
	bound := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reading"},
		Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: "ten"}, Source: twv1.SourceBind, BindTabID: reading.ID},
	}
	g.Expect(k8s.Create(ctx, bound)).To(Succeed())
	var tabs []string
	for _, w := range ws {
		tabs = append(tabs, waitOpen(t, g, w))
	}
	keepTab := waitOpen(t, g, keep)
	waitOpen(t, g, bound)
	// An Open returns before its page commits: the ten reach their urls soon after.
	g.Eventually(func() int { return pagesAt(t, h, site.Path("/quiet?ten=")) }).Should(Equal(10))

	deleted := time.Now()
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() int { return pagesAt(t, h, site.Path("/quiet?ten=")) }).Should(BeZero())
	t.Logf("delete session → its 10 pages gone from Chromium: %v", time.Since(deleted))
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	t.Logf("delete session → session object gone: %v", time.Since(deleted))
	now := pages(t, h)
	g.Expect(now).To(HaveKey(keepTab), "the Keep page stays open")
	g.Expect(now).To(HaveKey(reading.ID), "the bound user tab stays open")
	for _, id := range tabs {
		g.Expect(now).NotTo(HaveKey(id))
	}
	// The pages went together, ahead of their windows' deletion: no window
	// was told its page was never tabwarden's.
	g.Consistently(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for _, e := range list.Items {
			g.Expect(e.Reason).NotTo(Equal(twv1.ReasonSpawnNotObserved), "event on %s/%s: %s", e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}, "2s").Should(Succeed())
}

// TestReconnectDeclaresNothingClosed: the agent's DevTools connection drops mid-
// session: pages become Unknown, never Gone; nothing is opened twice; after the
// link is back the state converges; an agent restart converges the same way.
func TestReconnectDeclaresNothingClosed(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	px := newLink(t, strings.TrimPrefix(chrome.HTTPURL, "http://"))
	ns := newNamespace(t)
	startController(t)
	agt := startAgent(t, "flaky", "http://"+px.Addr(), false)
	s := session(ns, "flaky", "flaky")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "w", "flaky", site.Path("/contacts?flaky=1"))
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	tab := waitOpen(t, g, w)

	px.Drop()
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowUnknown))
		g.Expect(apimeta.FindStatusCondition(w.Status.Conditions, twv1.OpenedCondition).Reason).To(Equal(twv1.ReasonBrowserUnreachable))
	}).Should(Succeed())
	// While cut: the page is still open in Chromium, and a spawn happens that
	// the agent cannot see yet.
	g.Expect(pages(t, h)).To(HaveKey(tab))
	g.Expect(click(ctx, h, tab, "#contact-2")).To(Succeed())
	g.Consistently(func() twv1.WindowPhase { return get(t, w).Status.Phase }, "1s").Should(Equal(twv1.WindowUnknown))

	px.Heal()
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w.Status.TabID).To(Equal(tab))
		g.Expect(spawnedOf(ns, "flaky", tab)).NotTo(BeNil(), "the spawn made while the link was down is adopted on reconnect")
	}).Should(Succeed())
	g.Expect(pagesAt(t, h, site.Path("/contacts?flaky=1"))).To(Equal(1), "nothing opened twice")

	// Restart the agent: same convergence, no duplicate page, no second adoption.
	agt.Stop()
	startAgent(t, "flaky", chrome.WebSocketURL, false)
	g.Consistently(func(g Gomega) {
		g.Expect(pagesAt(t, h, site.Path("/contacts?flaky=1"))).To(Equal(1))
		g.Expect(spawned(ns, "flaky")).To(HaveLen(1))
		g.Expect(get(t, w).Status.Phase).NotTo(Equal(twv1.WindowGone))
	}, "2s").Should(Succeed())
	g.Eventually(func() twv1.WindowPhase { return get(t, w).Status.Phase }).Should(Equal(twv1.WindowOpen))
}

// TestPoolSessionsAreIsolated: two sessions on one pool Chrome each get their own
// browser context; cleaning one up leaves the other's pages and cookies intact.
func TestPoolSessionsAreIsolated(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	profile := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "pool"}, Spec: twv1.BrowserProfileSpec{Driver: twv1.DriverCDP, Pool: true, Namespaces: []string{ns},
		// The fixture site is on loopback: the admin allows private destinations.
		URLPolicy: &twv1.URLPolicy{AllowPrivateNetworks: true}}}
	g.Expect(k8s.Create(ctx, profile)).To(Succeed())
	startController(t)
	agt := startAgent(t, "pool", chrome.WebSocketURL, true)

	for _, name := range []string{"alice", "bob"} {
		g.Expect(k8s.Create(ctx, session(ns, name, "pool"))).To(Succeed())
		w := openWindow(ns, name+"-login", name, site.Path("/set-cookie?user="+name))
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		waitOpen(t, g, w)
	}
	cookiesOf := func(name string) *twv1.BrowserWindow {
		w := openWindow(ns, name+"-cookies", name, site.Path("/cookies?who="+name))
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		waitOpen(t, g, w)
		return w
	}
	alice, bob := cookiesOf("alice"), cookiesOf("bob")
	g.Eventually(func(g Gomega) {
		g.Expect(get(t, alice).Status.Title).To(Equal(fixture.CookiesTitle(cookie("user", "alice"))))
		g.Expect(get(t, bob).Status.Title).To(Equal(fixture.CookiesTitle(cookie("user", "bob"))))
	}).Should(Succeed())

	// Each session's context is recorded in the agent's ledger file.
	aliceCtx, ok := poolContext(t, "pool", ns+"/alice")
	g.Expect(ok).To(BeTrue(), "alice's context is recorded")
	bobCtx, ok := poolContext(t, "pool", ns+"/bob")
	g.Expect(ok).To(BeTrue(), "bob's context is recorded")
	g.Expect(aliceCtx).NotTo(Equal(bobCtx))
	g.Expect(browserContexts(t)).To(And(HaveKey(aliceCtx), HaveKey(bobCtx)))

	// An agent restart mid-session reuses bob's context: his cookie, set
	// before the restart, is seen by a page opened after it.
	agt.Stop()
	startAgent(t, "pool", chrome.WebSocketURL, true)
	after := openWindow(ns, "bob-after-restart", "bob", site.Path("/cookies?restarted=bob"))
	g.Expect(k8s.Create(ctx, after)).To(Succeed())
	waitOpen(t, g, after)
	g.Eventually(func() string { return get(t, after).Status.Title }).Should(Equal(fixture.CookiesTitle(cookie("user", "bob"))))
	ctxAfter, _ := poolContext(t, "pool", ns+"/bob")
	g.Expect(ctxAfter).To(Equal(bobCtx), "the same context after the restart")

	a := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"}}
	g.Expect(k8s.Delete(ctx, a)).To(Succeed())
	g.Eventually(func() int { return pagesAt(t, h, site.Path("/cookies?who=alice")) }).Should(BeZero())
	g.Expect(pagesAt(t, h, site.Path("/cookies?who=bob"))).To(Equal(1))
	g.Expect(pagesAt(t, h, site.Path("/set-cookie?user=bob"))).To(Equal(1))
	// Alice's session over, her context is disposed; bob's stays.
	g.Eventually(func(g Gomega) {
		g.Expect(browserContexts(t)).NotTo(HaveKey(aliceCtx))
		_, ok := poolContext(t, "pool", ns+"/alice")
		g.Expect(ok).To(BeFalse(), "the ledger forgets alice's context")
	}).Should(Succeed())
	g.Expect(browserContexts(t)).To(HaveKey(bobCtx))
	g.Expect(pagesAt(t, h, site.Path("/cookies?who=bob"))).To(Equal(1))
	g.Expect(pagesAt(t, h, site.Path("/cookies?restarted=bob"))).To(Equal(1))
	// Bob's cookie is still his: reload-free check through a fresh page of his session.
	again := openWindow(ns, "bob-again", "bob", site.Path("/cookies?who=bob-again"))
	g.Expect(k8s.Create(ctx, again)).To(Succeed())
	waitOpen(t, g, again)
	g.Eventually(func() string { return get(t, again).Status.Title }).Should(Equal(fixture.CookiesTitle(cookie("user", "bob"))))
}

// TestTabPlacement: a session with placement Tab opens background tabs in one
// existing window, pinned at start, never a new window.
func TestTabPlacement(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	startRoles(t, "tabs")
	s := session(ns, "tabs", "tabs")
	s.Spec.Placement = twv1.PlacementTab
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	first := openWindow(ns, "first", "tabs", site.Path("/landing?tab=1"))
	g.Expect(k8s.Create(ctx, first)).To(Succeed())
	waitOpen(t, g, first)
	g.Expect(first.Status.OwnsWindow).To(BeFalse())
	second := openWindow(ns, "second", "tabs", site.Path("/landing?tab=2"))
	g.Expect(k8s.Create(ctx, second)).To(Succeed())
	waitOpen(t, g, second)
	g.Expect(second.Status.WindowID).To(Equal(first.Status.WindowID), "pinned to the window of the first tab")
	g.Expect(pages(t, h)).To(HaveKey(second.Status.TabID))
}

// landsIn returns the window a background tab lands in when nothing names one:
// Chromium's last active window (the probe tab is closed again).
func landsIn(t *testing.T, h *cdp.Browser) string {
	t.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	p, err := h.Open(ctx, browser.OpenRequest{Key: key, URL: "about:blank#probe"})
	if err != nil {
		t.Fatalf("probe tab: %v", err)
	}
	if err := h.Close(ctx, browser.CloseRequest{Key: key, ID: p.ID}); err != nil {
		t.Fatalf("closing the probe tab: %v", err)
	}
	return p.WindowID
}

// TestTabPlacementNeverFollowsFocus: the session's first Tab page pins the
// user's window W; the user then opens a new window, which Chromium makes the
// last active one (where createTarget would put a tab); the session's next Tab
// pages still land in W, opened from the session's own page there, and the
// user's pages are untouched. A session that owns no page in its pinned window
// falls back and says so: Placed=False, placement_not_pinned, both windows and why.
func TestTabPlacementNeverFollowsFocus(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	startRoles(t, "focus")
	placed := func(w *twv1.BrowserWindow) metav1.Condition {
		c := apimeta.FindStatusCondition(w.Status.Conditions, twv1.PlacedCondition)
		g.Expect(c).NotTo(BeNil(), "window %s has a Placed condition", w.Name)
		return *c
	}

	userW := userNewWindow(t, site.Path("/landing?user=w"))
	W := userW.WindowID
	g.Expect(landsIn(t, h)).To(Equal(W), "a new window is the last active one")
	s := session(ns, "focus", "focus")
	s.Spec.Placement = twv1.PlacementTab
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	first := openWindow(ns, "first", "focus", site.Path("/landing?tab=1"))
	g.Expect(k8s.Create(ctx, first)).To(Succeed())
	waitOpen(t, g, first)
	g.Expect(first.Status.WindowID).To(Equal(W), "the first tab opens in the user's window and pins it")
	g.Expect(first.Status.PinnedWindowID).To(Equal(W))
	g.Expect(placed(first).Status).To(Equal(metav1.ConditionTrue))

	// The user opens a new window: Chromium's last active window now.
	userX := userNewWindow(t, site.Path("/landing?user=x"))
	X := userX.WindowID
	g.Expect(X).NotTo(Equal(W))
	g.Expect(landsIn(t, h)).To(Equal(X), "createTarget would now put a tab in the user's new window")

	for i, name := range []string{"second", "third"} {
		w := openWindow(ns, name, "focus", site.Path(fmt.Sprintf("/landing?tab=%d", i+2)))
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		id := waitOpen(t, g, w)
		g.Expect(w.Status.WindowID).To(Equal(W), "%s: in the pinned window, not the newest one", name)
		g.Expect(w.Status.PinnedWindowID).To(Equal(W))
		g.Expect(placed(w).Status).To(Equal(metav1.ConditionTrue))
		g.Eventually(func(g Gomega) {
			p, ok := pages(t, h)[id]
			g.Expect(ok).To(BeTrue())
			g.Expect(p.WindowID).To(Equal(W))
			g.Expect(p.OpenerID).To(BeEmpty())
			g.Expect(p.URL).To(Equal(site.Path(fmt.Sprintf("/landing?tab=%d", i+2))))
		}).Should(Succeed())
		// Nothing is focused: the new page is a background tab, and each user
		// window keeps its active tab.
		g.Expect(visibility(t, id)).To(Equal("hidden"), "%s is a background tab", name)
		g.Expect(visibility(t, userW.ID)).To(Equal("visible"), "the pinned window keeps the user's active tab")
		g.Expect(visibility(t, userX.ID)).To(Equal("visible"), "the user's newest window keeps its active tab")
	}
	// The user's pages are untouched, and the new window holds only the user's page.
	now := pages(t, h)
	for _, u := range []browser.Page{userW, userX} {
		g.Expect(now).To(HaveKey(u.ID))
		g.Expect(now[u.ID].URL).To(Equal(u.URL))
		g.Expect(now[u.ID].WindowID).To(Equal(u.WindowID))
	}
	inX := 0
	for _, p := range now {
		if p.WindowID == X {
			inX++
		}
	}
	g.Expect(inX).To(Equal(1), "nothing of the session's in the user's new window")

	// Fallback: a session pinned to W that owns no page there.
	userY := userNewWindow(t, site.Path("/landing?user=y"))
	Y := userY.WindowID
	g.Expect(landsIn(t, h)).To(Equal(Y))
	s2 := session(ns, "nopage", "focus")
	s2.Spec.Placement = twv1.PlacementTab
	s2.Spec.PinnedWindowID = W
	g.Expect(k8s.Create(ctx, s2)).To(Succeed())
	lost := openWindow(ns, "lost", "nopage", site.Path("/landing?tab=lost"))
	g.Expect(k8s.Create(ctx, lost)).To(Succeed())
	waitOpen(t, g, lost)
	g.Expect(lost.Status.WindowID).To(Equal(Y))
	g.Expect(lost.Status.PinnedWindowID).To(Equal(W))
	c := placed(lost)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(twv1.ReasonPlacementNotPinned))
	g.Expect(c.Message).To(And(ContainSubstring(W), ContainSubstring(Y), ContainSubstring("owns no page in window "+W)))
	g.Expect(pages(t, h)).To(HaveKey(userW.ID))
}

// TestForgedObjectsNeverCloseUserTabs: on real Chromium, a Spawned window that
// names the user's tab and an Open window whose status is patched to another
// user tab never give tabwarden authority over those tabs: the forged spawn is
// refused (spawn_not_observed), and ending the session closes only the page
// the agent opened; the user's windows keep the same tab ids.
func TestForgedObjectsNeverCloseUserTabs(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	mail := userWindow(t, h, site.Path("/quiet?user=mail"))
	bank := userWindow(t, h, site.Path("/quiet?user=bank"))
	byWindow := func() map[string][]string {
		out := map[string][]string{}
		for id, p := range pages(t, h) {
			if p.WindowID == mail.WindowID || p.WindowID == bank.WindowID {
				out[p.WindowID] = append(out[p.WindowID], id)
			}
		}
		return out
	}
	userBefore := byWindow()
	g.Expect(userBefore).To(HaveLen(2))
	ns := newNamespace(t)
	startRoles(t, "forged")
	s := session(ns, "taxes", "forged")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	form := openWindow(ns, "form", "taxes", site.Path("/contacts?forged=1"))
	g.Expect(k8s.Create(ctx, form)).To(Succeed())
	mine := waitOpen(t, g, form)

	// Forged under the only identities the admission policies let write such
	// objects: a stolen credential of the agent itself creates the Spawned window,
	// a bug in the controller writes the window's status.
	spawn := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-a-spawn", Labels: map[string]string{twv1.ProfileLabel: "forged"}},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: "taxes"}, Source: twv1.SourceSpawned,
			Spawn: &twv1.SpawnInfo{TabID: mail.ID, SpawnedBy: "form", Reason: "opener"},
		},
	}
	g.Expect(testenv.AgentClient(t, cfg, "forged").Create(ctx, spawn)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, spawn)
		c := apimeta.FindStatusCondition(spawn.Status.Conditions, twv1.OpenedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(twv1.ReasonSpawnNotObserved))
		g.Expect(spawn.Status.URL).To(BeEmpty(), "the user's url is never read into the forged object")
	}).Should(Succeed())
	ack(t, spawn, twv1.DispositionClose)

	forged := fmt.Sprintf(`{"status":{"tabId":%q,"windowId":%q,"ownsWindow":true}}`, bank.ID, bank.WindowID)
	buggy := testenv.ControllerClient(t, cfg)
	g.Expect(buggy.Status().Patch(ctx, form, client.RawPatch("application/merge-patch+json", []byte(forged)))).To(Succeed())
	g.Eventually(func() string { return get(t, form).Status.TabID }).Should(Equal(mine))
	g.Expect(buggy.Status().Patch(ctx, form, client.RawPatch("application/merge-patch+json", []byte(forged)))).To(Succeed())

	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	g.Expect(pages(t, h)).NotTo(HaveKey(mine), "the page the agent opened is closed")
	g.Expect(byWindow()).To(Equal(userBefore), "the user's windows keep the same tabs")
}
