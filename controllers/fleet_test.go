package controllers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

const testGrace = 3 * time.Second

// labelProfile is the administrator's `kubectl label browserprofile` (and maxSessions).
func labelProfile(t *testing.T, g *WithT, name, pool string, max int32) {
	t.Helper()
	p := get(t, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: name}})
	before := p.DeepCopy()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["pool"] = pool
	p.Spec.MaxSessions = max
	g.Expect(k8s.Patch(context.Background(), p, client.MergeFrom(before))).To(Succeed())
}

func selectorSession(ns, name, pool string) *twv1.BrowserSession {
	s := session(ns, name, "")
	s.Spec.ProfileSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}
	return s
}

func condOf(conds []metav1.Condition, typ string) metav1.Condition {
	if c := apimeta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// TestAgentLostFailover: an agent that stops renewing its Lease makes its
// profile Connected=Unknown (AgentLost) within the grace period; a selector
// session with no page moves to a live profile and its window opens there; a
// session with a page stays, says profile_lost, and converges when the agent
// returns with nothing opened twice; new sessions avoid the lost profile.
func TestAgentLostFailover(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	pool := ns
	testenv.StartControllerWith(t, cfg, run.ControllerOptions{AgentGrace: testGrace})
	ba, bb := fake.New(), fake.New()
	agentA := startAgent(t, "fo-a", ba)
	labelProfile(t, g, "fo-a", pool, 0)
	g.Eventually(func() bool {
		return apimeta.IsStatusConditionTrue(get(t, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "fo-a"}}).Status.Conditions, twv1.ConnectedCondition)
	}).Should(BeTrue())

	stays := selectorSession(ns, "stays", pool)
	g.Expect(k8s.Create(ctx, stays)).To(Succeed())
	w1 := openWindow(ns, "w1", "stays", "https://work.example/1")
	g.Expect(k8s.Create(ctx, w1)).To(Succeed())
	tab := openedTabs(t, g, w1)[0]
	g.Expect(get(t, stays).Status.ProfileName).To(Equal("fo-a"))
	pagesA := ba.PageCount()

	agentA.Stop()
	stopped := time.Now()
	// Placed on fo-a (still Connected until the grace runs out), no page yet.
	moves := selectorSession(ns, "moves", pool)
	g.Expect(k8s.Create(ctx, moves)).To(Succeed())
	w2 := openWindow(ns, "w2", "moves", "https://work.example/2")
	g.Expect(k8s.Create(ctx, w2)).To(Succeed())
	g.Eventually(func() string { return get(t, moves).Status.ProfileName }).Should(Equal("fo-a"))
	startAgent(t, "fo-b", bb)
	labelProfile(t, g, "fo-b", pool, 0)

	g.Eventually(func(g Gomega) {
		c := condOf(get(t, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "fo-a"}}).Status.Conditions, twv1.ConnectedCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(c.Reason).To(Equal(twv1.ReasonAgentLost))
		g.Expect(c.Message).To(ContainSubstring("kubectl get lease tabwarden-profile-fo-a"))
	}).Should(Succeed())
	lostAfter := time.Since(stopped)
	// The last renewal was up to a heartbeat (1s) before the stop.
	g.Expect(lostAfter).To(BeNumerically(">=", testGrace-time.Second))

	g.Eventually(func(g Gomega) {
		g.Expect(get(t, moves).Status.ProfileName).To(Equal("fo-b"))
		get(t, w2)
		g.Expect(w2.Labels[twv1.ProfileLabel]).To(Equal("fo-b"))
		g.Expect(w2.Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())
	movedAfter := time.Since(stopped)
	t.Logf("agent stopped: profile lost after %s, session moved and its window open on fo-b after %s (grace %s)", lostAfter.Round(time.Millisecond), movedAfter.Round(time.Millisecond), testGrace)
	g.Expect(ba.PageCount()).To(Equal(pagesA), "nothing opened in the lost browser")

	g.Eventually(func(g Gomega) {
		get(t, stays)
		g.Expect(stays.Status.ProfileName).To(Equal("fo-a"), "a session with a page stays")
		c := condOf(stays.Status.Conditions, twv1.ProfileReachableCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(twv1.ReasonProfileLost))
		g.Expect(c.Message).To(ContainSubstring("it has pages there"))
		g.Expect(condOf(stays.Status.Conditions, twv1.ReadyCondition).Reason).To(Equal(twv1.ReasonProfileLost))
	}).Should(Succeed())

	fresh := selectorSession(ns, "fresh", pool)
	g.Expect(k8s.Create(ctx, fresh)).To(Succeed())
	g.Eventually(func() string { return get(t, fresh).Status.ProfileName }).Should(Equal("fo-b"))

	// The agent returns: its profile and its session converge, its page is the same.
	startAgent(t, "fo-a", ba)
	g.Eventually(func(g Gomega) {
		get(t, stays)
		g.Expect(condOf(stays.Status.Conditions, twv1.ProfileReachableCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(apimeta.IsStatusConditionTrue(stays.Status.Conditions, twv1.ReadyCondition)).To(BeTrue())
		g.Expect(get(t, w1).Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w1.Status.TabID).To(Equal(tab))
	}).Should(Succeed())
	g.Consistently(ba.PageCount, "1s").Should(Equal(pagesA))
	g.Expect(get(t, w2).Labels[twv1.ProfileLabel]).To(Equal("fo-b"))
}

// TestBurstPlacement: sessions created at once are spread least-loaded over
// the profiles of a pool and never exceed maxSessions, counted by the
// controller (kubectl get browsersessions -o custom-columns=PROFILE:.status.profileName).
func TestBurstPlacement(t *testing.T) {
	for _, tc := range []struct {
		name        string
		max         int32
		sessions    int
		wantEach    int
		wantPending int
	}{
		{name: "100 sessions over two profiles of 50", max: 50, sessions: 100, wantEach: 50},
		{name: "12 sessions over two unlimited profiles", max: 0, sessions: 12, wantEach: 6},
		{name: "16 sessions over two profiles of 5", max: 5, sessions: 16, wantEach: 5, wantPending: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ctx, ns := begin(t, 90*time.Second)
			profiles := []string{ns + "-p1", ns + "-p2"}
			for _, p := range profiles {
				startAgent(t, p, fake.New())
				labelProfile(t, g, p, ns, tc.max)
			}
			g.Eventually(func(g Gomega) {
				for _, p := range profiles {
					g.Expect(apimeta.IsStatusConditionTrue(get(t, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: p}}).Status.Conditions, twv1.ConnectedCondition)).To(BeTrue())
				}
			}).Should(Succeed())
			startController(t)

			start := time.Now()
			var wg sync.WaitGroup
			for i := range tc.sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					g.Expect(k8s.Create(ctx, selectorSession(ns, fmt.Sprintf("s-%03d", i), ns))).To(Succeed())
				}()
			}
			wg.Wait()
			count := func() map[string]int {
				var list twv1.BrowserSessionList
				g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				n := map[string]int{}
				for _, s := range list.Items {
					n[s.Status.ProfileName]++
				}
				return n
			}
			placed := tc.sessions - tc.wantPending
			var overshoot []string
			g.Eventually(func(g Gomega) {
				n := count()
				if tc.max > 0 {
					for _, p := range profiles {
						if n[p] > int(tc.max) {
							overshoot = append(overshoot, fmt.Sprintf("%s: %d", p, n[p]))
						}
					}
				}
				g.Expect(n[profiles[0]] + n[profiles[1]]).To(Equal(placed))
			}).WithPolling(50 * time.Millisecond).Should(Succeed())
			g.Expect(overshoot).To(BeEmpty(), "maxSessions exceeded while placing")
			t.Logf("%d sessions placed in %s: %v", placed, time.Since(start).Round(time.Millisecond), count())
			g.Consistently(func(g Gomega) {
				n := count()
				g.Expect(n[profiles[0]]).To(Equal(tc.wantEach))
				g.Expect(n[profiles[1]]).To(Equal(tc.wantEach))
				g.Expect(n[""]).To(Equal(tc.wantPending))
			}, "1s").Should(Succeed())
			if tc.wantPending > 0 {
				// Each unplaced session says why once its status is written (its
				// reconcile may still be queued behind the placements).
				g.Eventually(func(g Gomega) {
					var list twv1.BrowserSessionList
					g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
					for _, s := range list.Items {
						if s.Status.ProfileName == "" {
							g.Expect(condOf(s.Status.Conditions, twv1.RegisteredCondition).Reason).To(Equal(twv1.ReasonNoProfile), "session %s", s.Name)
						}
					}
				}).Should(Succeed())
			}
		})
	}
}

// TestWindowBeforeSessionHandoff: a window created before its session loses its
// session_unregistered conditions as soon as the controller registers it, before
// any agent takes it.
func TestWindowBeforeSessionHandoff(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	startController(t)
	w := openWindow(ns, "early", "late", "https://example.com/")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	g.Eventually(func() string { return condOf(get(t, w).Status.Conditions, twv1.ReadyCondition).Reason }).Should(Equal(twv1.ReasonSessionUnregistered))

	// Pinned to a profile whose agent is not running: nobody but the controller touches the window.
	s := session(ns, "late", "nobody-"+ns)
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Labels[twv1.SessionLabel]).To(Equal("late"))
		g.Expect(metav1.GetControllerOf(w)).NotTo(BeNil())
		for _, c := range w.Status.Conditions {
			g.Expect(c.Reason).NotTo(Equal(twv1.ReasonSessionUnregistered), "condition %s", c.Type)
		}
		g.Expect(condOf(w.Status.Conditions, twv1.RegisteredCondition).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed())
}
