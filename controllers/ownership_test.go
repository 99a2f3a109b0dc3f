package controllers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// These tests forge objects past the API server's policies on purpose, under the
// only identities the admission policies let write them (as a bug in the
// controller, or a stolen agent credential, would): they prove that authority
// over a page comes from what the agent's driver observed, so that no object can
// make tabwarden close or adopt a tab it does not own.

// forgedSpawn is a Spawned window naming a page the agent of profile never saw
// spawned, as only that agent's identity may create it.
func forgedSpawn(ns, name, sess, tab, spawnedBy, profile string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{twv1.ProfileLabel: profile}},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: sess},
			Source:     twv1.SourceSpawned,
			Spawn:      &twv1.SpawnInfo{TabID: tab, SpawnedBy: spawnedBy, Reason: agent.ReasonOpener},
		},
	}
}

func condition(w *twv1.BrowserWindow, typ string) metav1.Condition {
	if c := apimeta.FindStatusCondition(w.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// TestForgedSpawnNeverTouchesUserTab: a Spawned window naming one of the user's
// tabs (with or without a spawnedBy window of the session) is refused with
// spawn_not_observed; acknowledging it Close, and ending the session, close
// nothing of the user's.
func TestForgedSpawnNeverTouchesUserTab(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	userWin, userTabs := b.UserOpenWindow("https://mail.example/inbox", "https://bank.example/", "https://news.example/")
	startRoles(t, "forged-spawn", b)
	s := session(ns, "taxes", "forged-spawn")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	contacts := openWindow(ns, "contacts", "taxes", "https://contacts.example/people")
	g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
	openedTabs(t, g, contacts)

	cases := []struct{ name, tab, spawnedBy string }{
		{"claims-contacts", userTabs[0], "contacts"}, // the session's own page as the opener
		{"claims-nothing", userTabs[1], "no-such-window"},
		{"claims-itself", userTabs[2], "claims-itself"},
	}
	// A stolen credential of the agent itself: nobody else may create Spawned windows.
	stolen := testenv.AgentClient(t, cfg, "forged-spawn")
	for _, tc := range cases {
		g.Expect(stolen.Create(ctx, forgedSpawn(ns, tc.name, "taxes", tc.tab, tc.spawnedBy, "forged-spawn"))).To(Succeed())
	}
	for _, tc := range cases {
		w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}}
		g.Eventually(func(g Gomega) {
			get(t, w)
			c := condition(w, twv1.OpenedCondition)
			g.Expect(c.Reason).To(Equal(twv1.ReasonSpawnNotObserved), "%s", tc.name)
			g.Expect(c.Message).To(ContainSubstring("kubectl delete browserwindow " + tc.name + " -n " + ns))
			g.Expect(w.Status.Phase).NotTo(Equal(twv1.WindowOpen))
			g.Expect(w.Status.URL).To(BeEmpty(), "the user's url is never read back into the forged window")
			g.Expect(condition(w, twv1.ReadyCondition).Reason).To(Equal(twv1.ReasonSpawnNotObserved))
		}).Should(Succeed())
	}
	// A refused window holds nothing: the session's next page opens, and the
	// session does not count it as unacknowledged.
	next := openWindow(ns, "next", "taxes", "https://tax.example/next")
	g.Expect(k8s.Create(ctx, next)).To(Succeed())
	openedTabs(t, g, next)
	g.Eventually(func(g Gomega) {
		get(t, s)
		g.Expect(apimeta.IsStatusConditionTrue(s.Status.Conditions, twv1.SpawnsAcknowledgedCondition)).To(BeTrue())
		g.Expect(s.Status.Windows.Unacknowledged).To(BeZero())
	}).Should(Succeed())

	// Acknowledge one Close: it is marked closed, and the user's tab stays.
	ack(t, &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claims-contacts"}}, twv1.DispositionClose)
	g.Eventually(func() twv1.WindowPhase {
		return get(t, &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claims-contacts"}}).Status.Phase
	}).Should(Equal(twv1.WindowClosed))

	deleteAndWait(t, g, s)
	g.Expect(b.WindowTabs(userWin)).To(Equal(userTabs), "the user's window keeps the same tabs")
	for _, id := range userTabs {
		g.Expect(b.CloseCount(id)).To(BeZero())
	}
	g.Expect(b.HasPage(contacts.Status.TabID)).To(BeFalse(), "the session's own page is closed")
}

// TestForgedStatusNeverClosesUserTab: an Open window's status patched to name a
// user's tab does not move the window's authority; the agent writes its own
// page back, and ending the session closes that page, not the user's.
func TestForgedStatusNeverClosesUserTab(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	userWin, userTabs := b.UserOpenWindow("https://mail.example/inbox", "https://bank.example/")
	startRoles(t, "forged-status", b)
	s := session(ns, "taxes", "forged-status")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "form", "taxes", "https://tax.example/form")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	mine := openedTabs(t, g, w)[0]

	forged, err := json.Marshal(map[string]any{"status": map[string]any{"tabId": userTabs[1], "windowId": userWin, "ownsWindow": true, "phase": "Open"}})
	g.Expect(err).NotTo(HaveOccurred())
	// A bug in the controller: besides the window's agent, only it may write window status.
	buggy := testenv.ControllerClient(t, cfg)
	g.Expect(buggy.Status().Patch(ctx, w, client.RawPatch("application/merge-patch+json", forged))).To(Succeed())
	g.Eventually(func() string { return get(t, w).Status.TabID }).Should(Equal(mine), "the agent writes back the page it opened")

	// A forged status that races the session's end changes nothing either.
	g.Expect(buggy.Status().Patch(ctx, w, client.RawPatch("application/merge-patch+json", forged))).To(Succeed())
	deleteAndWait(t, g, s)
	g.Expect(b.HasPage(mine)).To(BeFalse(), "the page the agent opened is closed")
	g.Expect(b.WindowTabs(userWin)).To(Equal(userTabs))
	g.Expect(b.CloseCount(userTabs[1])).To(BeZero())
}

// TestLabelDoesNotChooseTheAgent: a window labelled for a profile whose agent
// runs, of a session the controller did not place there, is never opened there.
func TestLabelDoesNotChooseTheAgent(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	// No controller: nothing places the session, so only the label points here.
	startAgent(t, "desktop", b)
	w := sessionWithWindow(g, ns, "elsewhere", "pool-7", "intranet", "http://intranet.example/secrets")
	// A bug in the controller (only it may set the profile label) labels it for desktop.
	label := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+twv1.ProfileLabel+`":"desktop","`+twv1.SessionLabel+`":"elsewhere"}}}`))
	g.Expect(testenv.ControllerClient(t, cfg).Patch(ctx, w, label)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		c := condition(w, twv1.RegisteredCondition)
		g.Expect(c.Reason).To(Equal(twv1.ReasonProfileMismatch))
		g.Expect(c.Message).To(ContainSubstring(`placed on ""`))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(t, w).Status.TabID).To(BeEmpty())
		g.Expect(b.PageCount()).To(Equal(1), "nothing opened in the desktop profile")
	}, "1s").Should(Succeed())
}

// TestBindingIsExclusive: a tab is bound by at most one window, and a page a
// session owns is never bound by a window of another namespace; that page's
// spawns are adopted into its own session only.
func TestBindingIsExclusive(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	nsA, nsB := newNamespace(t), newNamespace(t)
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://user.example/reading")
	startRoles(t, "shared", b)
	g.Expect(k8s.Create(ctx, session(nsA, "a", "shared"))).To(Succeed())
	g.Expect(k8s.Create(ctx, session(nsB, "b", "shared"))).To(Succeed())
	login := openWindow(nsB, "login", "b", "https://login.example/")
	g.Expect(k8s.Create(ctx, login)).To(Succeed())
	owned := openedTabs(t, g, login)[0]

	bind := func(ns, sess, name, tab string) *twv1.BrowserWindow {
		w := &twv1.BrowserWindow{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: sess}, Source: twv1.SourceBind, BindTabID: tab},
		}
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		return w
	}
	steal := bind(nsA, "a", "steal-login", owned)
	first := bind(nsB, "b", "reading", userTabs[0])
	openedTabs(t, g, first)
	second := bind(nsA, "a", "reading-too", userTabs[0])
	for _, w := range []*twv1.BrowserWindow{steal, second} {
		g.Eventually(func(g Gomega) {
			get(t, w)
			c := condition(w, twv1.BoundCondition)
			g.Expect(c.Reason).To(Equal(twv1.ReasonTabInUse), "%s", w.Name)
			g.Expect(c.Message).To(ContainSubstring("bound by at most one window"))
			g.Expect(w.Status.TabID).To(BeEmpty())
		}).Should(Succeed())
	}

	// The OAuth popup that B's page spawns goes to B, never to A.
	popup, err := b.Spawn(owned, "https://login.example/authorize?code=secret", true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() *twv1.BrowserWindow { return spawnedWindow(nsB, "b", popup) }).ShouldNot(BeNil())
	g.Consistently(func() []twv1.BrowserWindow { return windowsOf(nsA, "a", twv1.SourceLabel, "spawned") }, "1s").Should(BeEmpty())

	// Deleting the refused bind in A touches nothing; B's binding still stands.
	g.Expect(k8s.Delete(ctx, second)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(second), second)) }).Should(BeTrue())
	g.Expect(b.HasPage(userTabs[0])).To(BeTrue())
	g.Expect(condition(get(t, first), twv1.BoundCondition).Status).To(Equal(metav1.ConditionTrue))
}

// TestOpenerlessSpawnDuringAction: a page that appears without an opener while
// an action of the session runs on its own page is adopted (during_action); one
// the user opens meanwhile outside any action is not; an action on a page the
// session does not own is refused by the driver.
func TestOpenerlessSpawnDuringAction(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://user.example/")
	startRoles(t, "acting", b)
	w := sessionWithWindow(g, ns, "s", "acting", "viewer", "https://docs.example/report")
	tab := openedTabs(t, g, w)[0]

	act := browser.ActRequest{Key: agent.ActionKey(ns, "s", "viewer"), Owner: string(w.UID), Page: tab}
	pdf, err := b.ActSpawn(ctx, act, "https://docs.example/report.pdf")
	g.Expect(err).NotTo(HaveOccurred())
	_, userMore := b.UserOpenWindow("https://user.example/other")
	g.Eventually(func(g Gomega) {
		sw := spawnedWindow(ns, "s", pdf)
		g.Expect(sw).NotTo(BeNil())
		g.Expect(sw.Spec.Spawn.Reason).To(Equal(agent.ReasonDuringAction))
		g.Expect(sw.Spec.Spawn.SpawnedBy).To(Equal("viewer"))
		g.Expect(get(t, sw).Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())
	g.Consistently(func() *twv1.BrowserWindow { return spawnedWindow(ns, "s", userMore[0]) }, "1s").Should(BeNil())

	_, err = b.ActSpawn(ctx, browser.ActRequest{Key: agent.ActionKey(ns, "s", "viewer"), Owner: string(w.UID), Page: userTabs[0]}, "https://x.example/")
	g.Expect(err).To(MatchError(browser.ErrNotOwned), "an action on the user's tab is refused by the driver")
}

// TestCloseWaitsForTheDriversRecords: a spawn acknowledged Close while its
// agent is down, the agent back before its browser is: nothing is marked closed
// until the driver's records say what the window owns, and then its page is
// really closed (never left open as "Closed").
func TestCloseWaitsForTheDriversRecords(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	startController(t)
	agt := startAgent(t, "late", b)
	s := session(ns, "s", "late")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "contacts", "s", "https://contacts.example/")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	tab := openedTabs(t, g, w)[0]
	popup, err := b.Spawn(tab, "https://mail.example/compose", true)
	g.Expect(err).NotTo(HaveOccurred())
	var sw *twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		sw = spawnedWindow(ns, "s", popup)
		g.Expect(sw).NotTo(BeNil())
		g.Expect(get(t, sw).Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())

	agt.Stop()
	b.Disconnect()
	ack(t, sw, twv1.DispositionClose)
	startAgent(t, "late", b)
	g.Consistently(func(g Gomega) {
		g.Expect(get(t, sw).Status.Phase).NotTo(Equal(twv1.WindowClosed))
		g.Expect(b.HasPage(popup)).To(BeTrue())
	}, "2s").Should(Succeed())
	b.Reconnect()
	g.Eventually(func() bool { return b.HasPage(popup) }).Should(BeFalse())
	g.Eventually(func() twv1.WindowPhase { return get(t, sw).Status.Phase }).Should(Equal(twv1.WindowClosed))
	g.Expect(b.CloseCount(popup)).To(Equal(1))
	deleteAndWait(t, g, s)
	g.Expect(b.HasPage(tab)).To(BeFalse())
}

// TestForgedProfileLabelAtCreate: a user may create a window already labelled
// for a profile (the label routes; it grants nothing). Labelled for a profile its
// session is not placed on, the window is never opened there: that agent refuses
// it, the controller moves the label to the session's profile, and the page opens
// in the browser the session was placed on.
func TestForgedProfileLabelAtCreate(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	desktop, pool := fake.New(), fake.New()
	desktop.UserOpenWindow("https://mail.example/inbox")
	startController(t)
	startAgent(t, "desktop", desktop)
	startAgent(t, "pool-7", pool)
	alice := testenv.UserClient(t, cfg, ns, "alice")
	s := session(ns, "elsewhere", "pool-7")
	g.Expect(alice.Create(ctx, s)).To(Succeed())
	g.Eventually(func() string { return get(t, s).Status.ProfileName }).Should(Equal("pool-7"))

	w := openWindow(ns, "intranet", "elsewhere", "http://intranet.example/secrets")
	s.Status.ProfileName = "desktop" // what a lying creator would claim
	w.Register(s, true)
	g.Expect(w.Labels[twv1.ProfileLabel]).To(Equal("desktop"))
	g.Expect(alice.Create(ctx, w)).To(Succeed(), "a registered window is the user's to create")

	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Labels[twv1.ProfileLabel]).To(Equal("pool-7"), "the controller follows the session's placement")
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(pool.HasPage(w.Status.TabID)).To(BeTrue(), "opened in the session's browser")
	}).Should(Succeed())
	g.Consistently(func() int { return desktop.PageCount() }, "1s").Should(Equal(1), "nothing opened in the desktop profile")
}

// TestRegisteredAtCreateIsNotRewritten: a window its creator registered for its
// session's placement (what kubectl tabwarden open and the MCP server do) opens
// without any write to its metadata: no registration patch by the controller, no
// finalizer patch by the agent.
func TestRegisteredAtCreateIsNotRewritten(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := fake.New()
	startRoles(t, "registered", b)
	alice, err := client.NewWithWatch(testenv.AllowUser(t, cfg, ns, "alice"), client.Options{Scheme: run.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	s := session(ns, "tax", "registered")
	g.Expect(alice.Create(ctx, s)).To(Succeed())
	g.Eventually(func() string { return get(t, s).Status.ProfileName }).Should(Equal("registered"))

	w := openWindow(ns, "form", "tax", "https://forms.example/1040")
	w.Register(s, true)
	g.Expect(alice.Create(ctx, w)).To(Succeed())
	created := w.DeepCopy()
	// From the create on: every change to the window after it is seen.
	watch, err := alice.Watch(ctx, &twv1.BrowserWindowList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: created.ResourceVersion}})
	g.Expect(err).NotTo(HaveOccurred())
	defer watch.Stop()
	opened := false
	for !opened {
		select {
		case ev := <-watch.ResultChan():
			got, ok := ev.Object.(*twv1.BrowserWindow)
			if !ok || got.Name != w.Name {
				continue
			}
			g.Expect(got.Labels).To(Equal(created.Labels), "labels as created")
			g.Expect(got.Finalizers).To(Equal(created.Finalizers), "finalizers as created")
			g.Expect(got.OwnerReferences).To(Equal(created.OwnerReferences), "owner as created")
			opened = got.Status.Phase == twv1.WindowOpen
		case <-time.After(20 * time.Second):
			t.Fatal("the window did not open within 20s")
		}
	}
	g.Expect(b.HasPage(get(t, w).Status.TabID)).To(BeTrue())
}
