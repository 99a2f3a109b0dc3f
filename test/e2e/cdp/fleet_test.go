package cdp_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

// fleetAgent runs a CDP agent that heartbeats its Lease in tabwarden-system,
// where the controller watches agents' liveness.
func fleetAgent(t *testing.T, profile, endpoint string) *testenv.Role {
	t.Helper()
	if err := testenv.EnsureProfile(context.Background(), k8s, profile, twv1.DriverCDP); err != nil {
		t.Fatal(err)
	}
	agentCfg := testenv.MustConfig(t)(testenv.AgentConfig(cfg, profile))
	return testenv.RunRole(t, func(ctx context.Context) error {
		b, err := cdp.New(ctx, endpoint, cdp.Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
			LedgerPath: cdp.LedgerFile(stateDir, profile)})
		if err != nil {
			return err
		}
		defer b.Shutdown()
		return run.Agent(ctx, agentCfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
			Profile: profile, Driver: twv1.DriverCDP, Browser: b, Heartbeat: time.Second, LeaseNamespace: "tabwarden-system",
		}})
	})
}

// TestFleetFailoverOnChromium: three real Chromiums, one agent each, selector
// sessions spread one per profile. Killing one agent makes its profile lost
// within the grace period; a session placed there with no page moves and its
// page opens in another Chromium; the session with a page stays, says its
// profile is lost, and converges (same page, nothing opened twice) when the
// agent comes back.
func TestFleetFailoverOnChromium(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(45 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	const grace = 3 * time.Second
	ns := newNamespace(t)
	endpoints := map[string]string{"fleet-a": chrome.WebSocketURL}
	for _, name := range []string{"fleet-b", "fleet-c"} {
		p, err := chromiumtest.Launch(chromium.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = p.Close() })
		endpoints[name] = p.WebSocketURL
	}
	eyes := map[string]*cdp.Browser{}
	for name, ep := range endpoints {
		eyes[name] = testenv.Hand(t, ep)
	}
	testenv.StartControllerWith(t, cfg, run.ControllerOptions{AgentGrace: grace})
	agents := map[string]*testenv.Role{}
	for _, name := range []string{"fleet-a", "fleet-b", "fleet-c"} {
		agents[name] = fleetAgent(t, name, endpoints[name])
		p := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
		before := get(t, p).DeepCopy()
		p.Labels = map[string]string{"fleet": ns}
		g.Expect(k8s.Patch(ctx, p, client.MergeFrom(before))).To(Succeed())
		g.Eventually(func() bool {
			return apimeta.IsStatusConditionTrue(get(t, p).Status.Conditions, twv1.ConnectedCondition)
		}).Should(BeTrue())
	}
	selector := func(name string) *twv1.BrowserSession {
		s := session(ns, name, "")
		s.Spec.ProfileSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": ns}}
		return s
	}
	open := func(sess, url string) *twv1.BrowserWindow {
		w := openWindow(ns, sess+"-page", sess, url)
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		return w
	}
	// Three sessions spread one per profile, each page in its own Chromium.
	placed := map[string]string{}
	windows := map[string]*twv1.BrowserWindow{}
	for _, name := range []string{"one", "two", "three"} {
		s := selector(name)
		g.Expect(k8s.Create(ctx, s)).To(Succeed())
		g.Eventually(func() string { return get(t, s).Status.ProfileName }).ShouldNot(BeEmpty())
		placed[name] = s.Status.ProfileName
		windows[name] = open(name, site.Path("/quiet?fleet="+name))
	}
	g.Expect(placed).To(HaveLen(3))
	g.Expect([]string{placed["one"], placed["two"], placed["three"]}).To(ConsistOf("fleet-a", "fleet-b", "fleet-c"), "one session per profile")
	for name, w := range windows {
		tab := waitOpen(t, g, w)
		g.Expect(pages(t, eyes[placed[name]])).To(HaveKey(tab), "%s's page is in %s's Chromium", name, placed[name])
	}

	// Kill the agent of the first session's profile for good.
	lostProfile := placed["one"]
	stayTab := windows["one"].Status.TabID
	agents[lostProfile].Stop()
	stopped := time.Now()
	g.Eventually(func(g Gomega) {
		c := apimeta.FindStatusCondition(get(t, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: lostProfile}}).Status.Conditions, twv1.ConnectedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(c.Reason).To(Equal(twv1.ReasonAgentLost))
	}).Should(Succeed())
	lostAfter := time.Since(stopped)

	// New work goes to the live profiles, and its page opens in their Chromium.
	late := selector("late")
	g.Expect(k8s.Create(ctx, late)).To(Succeed())
	lateWin := open("late", site.Path("/quiet?fleet=late"))
	lateTab := waitOpen(t, g, lateWin)
	movedAfter := time.Since(stopped)
	lateProfile := get(t, late).Status.ProfileName
	g.Expect(lateProfile).NotTo(Equal(lostProfile))
	g.Expect(pages(t, eyes[lateProfile])).To(HaveKey(lateTab))
	t.Logf("agent of %s stopped: profile lost after %s; a new session's page open on %s after %s (grace %s)",
		lostProfile, lostAfter.Round(time.Millisecond), lateProfile, movedAfter.Round(time.Millisecond), grace)

	// The session with a page stays and says why; its page stays open.
	one := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}}
	g.Eventually(func(g Gomega) {
		get(t, one)
		g.Expect(one.Status.ProfileName).To(Equal(lostProfile))
		c := apimeta.FindStatusCondition(one.Status.Conditions, twv1.ProfileReachableCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(twv1.ReasonProfileLost))
	}).Should(Succeed())
	g.Expect(pages(t, eyes[lostProfile])).To(HaveKey(stayTab))

	// The agent comes back: the profile and the session converge on the same page.
	fleetAgent(t, lostProfile, endpoints[lostProfile])
	g.Eventually(func(g Gomega) {
		get(t, one)
		g.Expect(apimeta.IsStatusConditionTrue(one.Status.Conditions, twv1.ProfileReachableCondition)).To(BeTrue())
		g.Expect(get(t, windows["one"]).Status.TabID).To(Equal(stayTab))
	}).Should(Succeed())
	g.Expect(pagesAt(t, eyes[lostProfile], site.Path("/quiet?fleet=one"))).To(Equal(1), "nothing opened twice")
}
