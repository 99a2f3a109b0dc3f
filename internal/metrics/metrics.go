// Package metrics holds tabwarden's domain metrics, registered with
// controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry)
// so that every role serves them on its manager's metrics endpoint next to
// controller-runtime's own. docs/metrics.md documents each one.
package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Metric names.
const (
	SpawnsAdoptedName        = "tabwarden_spawns_adopted_total"
	AdoptionLatencyName      = "tabwarden_spawn_adoption_latency_seconds"
	CleanupDurationName      = "tabwarden_session_cleanup_duration_seconds"
	DriverConnectedName      = "tabwarden_driver_connected"
	ActionResultsName        = "tabwarden_action_results_total"
	UnacknowledgedSpawnsName = "tabwarden_unacknowledged_spawns"
	DirtySessionsName        = "tabwarden_dirty_sessions"
	PoolContextsDisposedName = "tabwarden_pool_contexts_disposed_total"
)

// When a pool session's browser context was disposed (label "when").
const (
	// DisposedInCleanup: by the session's cleanup, its temporary pages with it
	// (one disposal instead of one close per page).
	DisposedInCleanup = "cleanup"
	// DisposedAfterCleanup: once nothing of the ended session lived in it any
	// more (its pages closed one by one, or its last Keep page closed by the user).
	DisposedAfterCleanup = "after_cleanup"
)

var (
	spawnsAdopted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: SpawnsAdoptedName,
		Help: "Pages spawned by a session's page (reason opener) or during one of its actions (reason during_action) and adopted as Spawned BrowserWindows (agent).",
	}, []string{"reason"})
	adoptionLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    AdoptionLatencyName,
		Help:    "Seconds from the browser reporting a spawned page to its Spawned BrowserWindow being created (agent).",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})
	cleanupDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    CleanupDurationName,
		Help:    "Seconds from a session ending (finished, idle timeout or deleted) to every page it owned being closed, released or detached (controller).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	})
	driverConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: DriverConnectedName,
		Help: "1 while the agent of the profile reaches its browser through the driver, 0 otherwise (agent).",
	}, []string{"profile", "driver"})
	actionResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ActionResultsName,
		Help: "BrowserActions finished, by phase (Succeeded, Failed, Refused) and reason (a guard reason such as unacknowledged_spawns, or the step's) (agent).",
	}, []string{"phase", "reason"})
	poolContextsDisposed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PoolContextsDisposedName,
		Help: "Browser contexts of ended pool sessions disposed, by when: cleanup (the disposal closed the session's temporary pages at once) or after_cleanup (nothing of the session lived in it any more) (agent).",
	}, []string{"when"})
)

func init() {
	crmetrics.Registry.MustRegister(spawnsAdopted, adoptionLatency, cleanupDuration, driverConnected, actionResults, poolContextsDisposed)
}

// SpawnAdopted counts a spawned page adopted for reason (opener or
// during_action) and observes how long after the browser reported it.
func SpawnAdopted(reason string, seen time.Time) {
	spawnsAdopted.WithLabelValues(reason).Inc()
	if !seen.IsZero() {
		adoptionLatency.Observe(time.Since(seen).Seconds())
	}
}

// SessionCleaned observes how long a session's cleanup took, from ended.
func SessionCleaned(ended time.Time) {
	if !ended.IsZero() {
		cleanupDuration.Observe(time.Since(ended).Seconds())
	}
}

// DriverConnected sets the connection state of a profile's driver.
func DriverConnected(profile, driver string, connected bool) {
	v := 0.0
	if connected {
		v = 1
	}
	driverConnected.WithLabelValues(profile, driver).Set(v)
}

// ActionFinished counts a BrowserAction that reached a final phase; reason is
// the guard reason of a refusal, the failure's reason, or "" on success.
func ActionFinished(phase, reason string) {
	actionResults.WithLabelValues(phase, reason).Inc()
}

// PoolContextDisposed counts a pool session's browser context disposed (when:
// DisposedInCleanup or DisposedAfterCleanup).
func PoolContextDisposed(when string) {
	poolContextsDisposed.WithLabelValues(when).Inc()
}

// sessionCollector reports gauges computed from the sessions in a cache at
// scrape time, so that they never drift from the API server's state.
type sessionCollector struct {
	mu             sync.Mutex
	reader         client.Reader
	gen            uint64 // counts SetSessionReader calls
	unacknowledged *prometheus.Desc
	dirty          *prometheus.Desc
}

var sessions = &sessionCollector{
	unacknowledged: prometheus.NewDesc(UnacknowledgedSpawnsName,
		"Spawned BrowserWindows without a disposition, per namespace: their sessions refuse new work until acknowledged (controller).",
		[]string{"namespace"}, nil),
	dirty: prometheus.NewDesc(DirtySessionsName,
		"Finished or deleted BrowserSessions that still own open pages (condition Clean=False, reason dirty_session), per namespace (controller).",
		[]string{"namespace"}, nil),
}

func init() { crmetrics.Registry.MustRegister(sessions) }

// SetSessionReader makes the unacknowledged spawns and dirty sessions gauges
// read the sessions from reader (the controller's cache) at each scrape. The
// last call wins; until one, the gauges report nothing. The returned func
// withdraws reader again, unless another call replaced it meanwhile.
//
// Call it once reader can answer (the cache has synced): the metrics endpoint
// serves before the caches start, and a scrape then must not fail.
func SetSessionReader(reader client.Reader) (withdraw func()) {
	sessions.mu.Lock()
	defer sessions.mu.Unlock()
	sessions.reader = reader
	sessions.gen++
	gen := sessions.gen
	return func() {
		sessions.mu.Lock()
		defer sessions.mu.Unlock()
		if sessions.gen == gen {
			sessions.reader = nil
		}
	}
}

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.unacknowledged
	ch <- c.dirty
}

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list twv1.BrowserSessionList
	if err := reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(c.unacknowledged, err)
		return
	}
	unacked, dirty := map[string]float64{}, map[string]float64{}
	for i := range list.Items {
		s := &list.Items[i]
		unacked[s.Namespace] += float64(s.Status.Windows.Unacknowledged)
		if isDirty(s) {
			dirty[s.Namespace]++
		} else {
			dirty[s.Namespace] += 0
		}
	}
	for ns, v := range unacked {
		ch <- prometheus.MustNewConstMetric(c.unacknowledged, prometheus.GaugeValue, v, ns)
	}
	for ns, v := range dirty {
		ch <- prometheus.MustNewConstMetric(c.dirty, prometheus.GaugeValue, v, ns)
	}
}

func isDirty(s *twv1.BrowserSession) bool {
	c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.CleanCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == twv1.ReasonDirtySession
}
