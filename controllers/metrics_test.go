package controllers_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/controllers"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/metrics"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// scrape reads controller-runtime's registry as Prometheus would: through the
// metrics handler, in the text format.
func scrape(g Gomega) map[string]*dto.MetricFamily {
	srv := httptest.NewServer(promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// value is the value of the sample of family name with the given labels (a
// counter, a gauge, or a histogram's sample count); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// TestMetricsAfterIncident plays the incident on the fake browser and scrapes
// the metrics endpoint at each step: the spawns adopted by reason, the adoption
// latency, the unacknowledged spawns and dirty sessions of the namespace, the
// driver's connection and the cleanup duration move as a fleet operator would
// expect.
func TestMetricsAfterIncident(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	// A profile of this run's own: its series are this run's alone (the
	// registry outlives a run, and -count=N repeats it).
	prof := "metrics-" + strings.TrimPrefix(ns, "tw-")
	b := fake.New()
	contactsSite(b)
	b.UserOpenWindow("https://mail.example/inbox")
	startRoles(t, prof, b)
	before := scrape(g)
	// The agent's series carry its profile and driver.
	agentLabels := []string{"profile", prof, "driver", "fake"}
	at := func(labels ...string) []string { return append(append([]string{}, agentLabels...), labels...) }
	opened0 := max(0, value(before, metrics.PagesOpenedName, agentLabels...))
	openLatency0 := max(0, value(before, metrics.OpenLatencyName, agentLabels...))
	closed0 := max(0, value(before, metrics.PagesClosedName, agentLabels...))
	duration0 := max(0, value(before, metrics.ActionDurationName, at("phase", "Succeeded")...))
	refusedDuration0 := max(0, value(before, metrics.ActionDurationName, at("phase", "Refused")...))
	// This test's own agent only (its own profile): other tests' agents
	// share the registry and run meanwhile.
	opener0 := max(0, value(before, metrics.SpawnsAdoptedName, at("reason", agent.ReasonOpener)...))
	action0 := max(0, value(before, metrics.SpawnsAdoptedName, at("reason", agent.ReasonDuringAction)...))
	latency0 := max(0, value(before, metrics.AdoptionLatencyName, agentLabels...))
	cleanup0 := max(0, value(before, metrics.CleanupDurationName, "profile", prof))
	refused0 := max(0, value(before, metrics.ActionResultsName, at("phase", "Refused", "reason", twv1.ReasonUnacknowledgedSpawns)...))
	succeeded0 := max(0, value(before, metrics.ActionResultsName, at("phase", "Succeeded", "reason", "")...))

	g.Eventually(func(g Gomega) {
		g.Expect(value(scrape(g), metrics.DriverConnectedName, "profile", prof, "driver", "fake")).To(Equal(1.0))
	}).Should(Succeed())

	s := session(ns, "taxes", prof)
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	contacts := openWindow(ns, "contacts", "taxes", "https://contacts.example/people")
	g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(get(t, contacts).Status.Phase).To(Equal(twv1.WindowOpen)) }).Should(Succeed())
	g.Eventually(func(g Gomega) {
		m := scrape(g)
		g.Expect(value(m, metrics.PagesOpenedName, agentLabels...)).To(Equal(opened0 + 1))
		g.Expect(value(m, metrics.OpenLatencyName, agentLabels...)).To(Equal(openLatency0 + 1))
		g.Expect(value(m, metrics.SessionsName, "phase", "Active", "profile", prof)).To(Equal(1.0))
		g.Expect(value(m, metrics.WindowsName, "phase", "Open", "source", "Open", "profile", prof)).To(Equal(1.0))
	}).Should(Succeed())

	// Two spawns: a compose popup (opener) and a viewer during an action.
	compose, err := b.Spawn(contacts.Status.TabID, "https://mail.example/compose?to=ada", true)
	g.Expect(err).NotTo(HaveOccurred())
	pdf, err := b.ActSpawn(ctx, browser.ActRequest{Key: agent.ActionKey(ns, "taxes", "contacts"), Owner: string(contacts.UID), Page: contacts.Status.TabID}, "https://contacts.example/export.pdf")
	g.Expect(err).NotTo(HaveOccurred())
	var composeWin, pdfWin *twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		composeWin, pdfWin = spawnedWindow(ns, "taxes", compose), spawnedWindow(ns, "taxes", pdf)
		g.Expect(composeWin).NotTo(BeNil())
		g.Expect(pdfWin).NotTo(BeNil())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		m := scrape(g)
		g.Expect(value(m, metrics.SpawnsAdoptedName, at("reason", agent.ReasonOpener)...)).To(Equal(opener0 + 1))
		g.Expect(value(m, metrics.WindowsName, "phase", "Open", "source", "Spawned", "profile", prof)).To(Equal(2.0))
		g.Expect(value(m, metrics.SpawnsAdoptedName, at("reason", agent.ReasonDuringAction)...)).To(Equal(action0 + 1))
		g.Expect(value(m, metrics.AdoptionLatencyName, agentLabels...)).To(Equal(latency0 + 2))
		g.Expect(value(m, metrics.UnacknowledgedSpawnsName, "namespace", ns)).To(Equal(2.0))
		g.Expect(value(m, metrics.DirtySessionsName, "namespace", ns)).To(Equal(0.0))
	}).Should(Succeed())

	// An action meanwhile is refused (unacknowledged_spawns); once both spawns
	// are acknowledged the gauge drops and the next action succeeds.
	sa := &testenv.ScriptedAgent{T: t, C: k8s, NS: ns, Session: "taxes", Thread: s.Spec.Thread}
	g.Expect(sa.Act("contacts", clickText("ada@example.com")).Status.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
	for _, w := range []*twv1.BrowserWindow{composeWin, pdfWin} {
		ack(t, w, twv1.DispositionTemporary)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(value(scrape(g), metrics.UnacknowledgedSpawnsName, "namespace", ns)).To(Equal(0.0))
	}).Should(Succeed())
	g.Expect(sa.Act("contacts", observe()).Status.Phase).To(Equal(twv1.ActionSucceeded))
	g.Eventually(func(g Gomega) {
		m := scrape(g)
		g.Expect(value(m, metrics.ActionResultsName, at("phase", "Refused", "reason", twv1.ReasonUnacknowledgedSpawns)...)).To(Equal(refused0 + 1))
		g.Expect(value(m, metrics.ActionResultsName, at("phase", "Succeeded", "reason", "")...)).To(Equal(succeeded0 + 1))
		// Claim to completion, by final phase: unacknowledged_spawns refuses
		// the click at its step, after the action was claimed.
		g.Expect(value(m, metrics.ActionDurationName, at("phase", "Succeeded")...)).To(Equal(duration0 + 1))
		g.Expect(value(m, metrics.ActionDurationName, at("phase", "Refused")...)).To(Equal(refusedDuration0 + 1))
	}).Should(Succeed())

	// The browser goes away, then the session finishes: it is dirty (it still owns
	// open pages) until the browser is back and they close.
	b.Disconnect()
	g.Eventually(func(g Gomega) {
		g.Expect(value(scrape(g), metrics.DriverConnectedName, "profile", prof, "driver", "fake")).To(Equal(0.0))
	}).Should(Succeed())
	g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(value(scrape(g), metrics.DirtySessionsName, "namespace", ns)).To(Equal(1.0))
	}).Should(Succeed())
	// The cleanup histogram is by profile: other tests' cleanups, which a
	// controller that starts also finishes, count under their own profiles.
	// This session's is not done while its browser is away.
	g.Consistently(func(g Gomega) {
		g.Expect(max(0, value(scrape(g), metrics.CleanupDurationName, "profile", prof))).To(Equal(cleanup0))
	}, time.Second).Should(Succeed())
	b.Reconnect()
	g.Eventually(func(g Gomega) {
		m := scrape(g)
		g.Expect(value(m, metrics.DriverConnectedName, "profile", prof, "driver", "fake")).To(Equal(1.0))
		g.Expect(value(m, metrics.DirtySessionsName, "namespace", ns)).To(Equal(0.0))
		g.Expect(value(m, metrics.CleanupDurationName, "profile", prof)).To(Equal(cleanup0 + 1))
		// The contacts page and both temporary spawns, each counted once.
		g.Expect(value(m, metrics.PagesClosedName, agentLabels...)).To(Equal(closed0 + 3))
	}).Should(Succeed())
	g.Expect(get(t, s).Status.Phase).To(Equal(twv1.SessionPhaseFinished))
	g.Eventually(func(g Gomega) {
		m := scrape(g)
		g.Expect(value(m, metrics.SessionsName, "phase", "Finished", "profile", prof)).To(Equal(1.0))
		g.Expect(value(m, metrics.SessionsName, "phase", "Active", "profile", prof)).To(Equal(0.0))
	}).Should(Succeed())
}

// TestMetricsServeAcrossControllerRestarts scrapes as Prometheus would while
// a controller stops and another starts (a rollout, a lost leadership): the
// stopped controller's cache no longer answers, the new one has not synced
// yet, and no scrape may fail meanwhile; the session gauges come back once
// the new cache can answer.
func TestMetricsServeAcrossControllerRestarts(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	g.Expect(k8s.Create(context.Background(), session(ns, "early", "nowhere"))).To(Succeed())
	first := startController(t)
	g.Eventually(func(g Gomega) {
		g.Expect(value(scrape(g), metrics.DirtySessionsName, "namespace", ns)).To(Equal(0.0))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	first.Stop()
	scrape(g) // fails the test on an unparsable (error) body
	startController(t)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		scrape(g)
		time.Sleep(10 * time.Millisecond)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(value(scrape(g), metrics.DirtySessionsName, "namespace", ns)).To(Equal(0.0))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// TestMetricsServeBeforeTheCacheSyncs scrapes a controller that is set up
// but whose cache has not started, as Prometheus may when the pod comes up
// (the metrics endpoint serves before the caches): the scrape succeeds, and
// the session gauges, which read that cache, are simply absent until then.
func TestMetricsServeBeforeTheCacheSyncs(t *testing.T) {
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     run.Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect((&controllers.SessionReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("test")}).SetupWithManager(mgr)).To(Succeed())
	scrape(g) // fails the test on an unparsable (error) body
}

// unpaired is a browser that no extension has paired with yet: it cannot
// connect, as the extension driver before `tabwarden pair`.
type unpaired struct{ *fake.Browser }

func (unpaired) Paired() bool { return false }

// TestDriverPairedGauge: an extension-like profile nobody paired reports
// tabwarden_driver_connected 0 with tabwarden_driver_paired 0, so the
// documented TabwardenDriverDown (connected == 0 and paired == 1) stays
// quiet; a driver with nothing to pair reports paired 1, and its disconnection
// alerts as before.
func TestDriverPairedGauge(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	lonely := fake.New()
	lonely.Disconnect()
	startAgent(t, "metrics-unpaired", unpaired{lonely})
	paired := fake.New()
	startAgent(t, "metrics-paired", paired)
	// driverDown is the documented alert's expression for one profile.
	driverDown := func(m map[string]*dto.MetricFamily, profile string) bool {
		return value(m, metrics.DriverConnectedName, "profile", profile) == 0 && value(m, metrics.DriverPairedName, "profile", profile) == 1
	}
	g.Eventually(func(g Gomega) {
		m := scrape(g)
		g.Expect(value(m, metrics.DriverConnectedName, "profile", "metrics-unpaired", "driver", "fake")).To(Equal(0.0))
		g.Expect(value(m, metrics.DriverPairedName, "profile", "metrics-unpaired", "driver", "fake")).To(Equal(0.0))
		g.Expect(driverDown(m, "metrics-unpaired")).To(BeFalse())
		g.Expect(value(m, metrics.DriverConnectedName, "profile", "metrics-paired", "driver", "fake")).To(Equal(1.0))
		g.Expect(value(m, metrics.DriverPairedName, "profile", "metrics-paired", "driver", "fake")).To(Equal(1.0))
	}).Should(Succeed())
	paired.Disconnect()
	g.Eventually(func(g Gomega) { g.Expect(driverDown(scrape(g), "metrics-paired")).To(BeTrue()) }).Should(Succeed())
}
