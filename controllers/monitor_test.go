package controllers_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
)

// monitoredBrowser is the fake browser with a Session Monitor, as the extension
// driver has: it records what the agent publishes.
type monitoredBrowser struct {
	*fake.Browser
	mu        sync.Mutex
	published [][]browser.MonitorSession
}

func (m *monitoredBrowser) PublishSessions(_ context.Context, s []browser.MonitorSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.published = append(m.published, slices.Clone(s))
	return nil
}

func (m *monitoredBrowser) last() ([]browser.MonitorSession, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.published) == 0 {
		return nil, 0
	}
	return m.published[len(m.published)-1], len(m.published)
}

// TestSessionMonitorPublishes: an agent whose driver shows a Session Monitor
// publishes the sessions placed on its profile with their windows (a spawn
// marked unacknowledged until it has a disposition), coalesces a burst of
// changes into a few publishes, and publishes nothing when nothing changed.
func TestSessionMonitorPublishes(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	b := &monitoredBrowser{Browser: fake.New()}
	startRoles(t, "monitored", b)
	other := session(ns, "elsewhere", "not-this-profile")
	g.Expect(k8s.Create(ctx, other)).To(Succeed())

	s := session(ns, "taxes", "monitored")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	// A burst: ten windows at once.
	ws := createOpenWindows(g, ns, "taxes", "page-%02d", "https://site.example/%d", 10)
	g.Eventually(func(g Gomega) {
		last, _ := b.last()
		g.Expect(last).To(HaveLen(1), "only the session placed on this profile")
		g.Expect(last[0].Namespace).To(Equal(ns))
		g.Expect(last[0].Name).To(Equal("taxes"))
		g.Expect(last[0].Thread).To(Equal(s.Spec.Thread))
		g.Expect(last[0].Purpose).To(Equal(s.Spec.Purpose))
		g.Expect(last[0].Phase).To(Equal("Active"))
		g.Expect(last[0].Windows).To(HaveLen(10))
		for i, w := range last[0].Windows {
			g.Expect(w.Name).To(Equal(ws[i].Name))
			g.Expect(w.Phase).To(Equal("Open"))
			g.Expect(w.TabID).To(Equal(get(t, ws[i]).Status.TabID))
			g.Expect(w.Source).To(Equal("Open"))
			g.Expect(w.Unacknowledged).To(BeFalse())
		}
	}).Should(Succeed())
	_, n := b.last()
	t.Logf("%d publishes for the burst", n)
	// Each window makes several changes (created, finalizer, labels, tab id,
	// Open, url, title): dozens of events. They come out as a few publishes.
	g.Expect(n).To(BeNumerically("<=", 10), "a burst of changes is coalesced")
	g.Consistently(func() int { _, m := b.last(); return m }, "3s", "200ms").Should(Equal(n), "nothing changed: nothing published")

	// A spawn is published marked unacknowledged, then acknowledged.
	spawned, err := b.Spawn(ws[0].Status.TabID, "https://mail.example/compose", true)
	g.Expect(err).NotTo(HaveOccurred())
	var sw *twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		sw = spawnedWindow(ns, "taxes", spawned)
		g.Expect(sw).NotTo(BeNil())
		last, _ := b.last()
		i := slices.IndexFunc(last[0].Windows, func(w browser.MonitorWindow) bool { return w.Name == sw.Name })
		g.Expect(i).To(BeNumerically(">=", 0))
		g.Expect(last[0].Windows[i]).To(And(HaveField("Source", "Spawned"), HaveField("Unacknowledged", true), HaveField("TabID", spawned)))
	}).Should(Succeed())
	ack(t, sw, twv1.DispositionKeep)
	g.Eventually(func(g Gomega) {
		last, _ := b.last()
		i := slices.IndexFunc(last[0].Windows, func(w browser.MonitorWindow) bool { return w.Name == sw.Name })
		g.Expect(last[0].Windows[i]).To(And(HaveField("Disposition", "Keep"), HaveField("Unacknowledged", false)))
	}).Should(Succeed())

	// Deleted: the session leaves the monitor.
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		last, _ := b.last()
		g.Expect(last).To(BeEmpty())
	}).Should(Succeed())
}
