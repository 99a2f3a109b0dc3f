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
	PagesOpenedName          = "tabwarden_pages_opened_total"
	OpenLatencyName          = "tabwarden_open_latency_seconds"
	PagesClosedName          = "tabwarden_pages_closed_total"
	PagesReleasedName        = "tabwarden_pages_released_total"
	ActionResultsName        = "tabwarden_action_results_total"
	ActionDurationName       = "tabwarden_action_duration_seconds"
	SpawnSettlesName         = "tabwarden_action_spawn_settles_total"
	PoolContextsDisposedName = "tabwarden_pool_contexts_disposed_total"
	DriverConnectedName      = "tabwarden_driver_connected"
	DriverPairedName         = "tabwarden_driver_paired"
	CleanupDurationName      = "tabwarden_session_cleanup_duration_seconds"
	UnacknowledgedSpawnsName = "tabwarden_unacknowledged_spawns"
	DirtySessionsName        = "tabwarden_dirty_sessions"
	SessionsName             = "tabwarden_sessions"
	WindowsName              = "tabwarden_windows"
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

// agentLabels label every agent-side metric: the profile the agent serves and
// its driver (cdp, extension, fake). Both are bounded by the fleet's profiles;
// no metric carries a session, window or url.
var agentLabels = []string{"profile", "driver"}

func withAgentLabels(extra ...string) []string {
	return append(append([]string{}, agentLabels...), extra...)
}

var (
	spawnsAdopted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: SpawnsAdoptedName,
		Help: "Pages spawned by a session's page (reason opener) or during one of its actions (reason during_action) and adopted as Spawned BrowserWindows (agent).",
	}, withAgentLabels("reason"))
	adoptionLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    AdoptionLatencyName,
		Help:    "Seconds from the browser reporting a spawned page to its Spawned BrowserWindow being created (agent).",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, agentLabels)
	pagesOpened = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PagesOpenedName,
		Help: "Pages opened in the browser for Open BrowserWindows (agent).",
	}, agentLabels)
	openLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    OpenLatencyName,
		Help:    "Seconds from an Open BrowserWindow being created (the intent; its creationTimestamp, to the second) to its page being open in the browser, holds included (agent).",
		Buckets: []float64{0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300, 1800},
	}, agentLabels)
	pagesClosed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PagesClosedName,
		Help: "Pages of sessions closed through the driver: disposition Close, a deleted window, an ended session's cleanup (agent).",
	}, agentLabels)
	pagesReleased = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PagesReleasedName,
		Help: "Pages let go and left open: Keep pages released as deliverables and bound tabs detached (agent).",
	}, agentLabels)
	actionResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ActionResultsName,
		Help: "BrowserActions finished, by phase (Succeeded, Failed, Refused) and reason (a guard reason such as unacknowledged_spawns, or the step's) (agent).",
	}, withAgentLabels("phase", "reason"))
	actionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    ActionDurationName,
		Help:    "Seconds from the agent claiming a BrowserAction (status.startTime) to its completion, by final phase; actions refused before the claim are not observed (agent).",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, withAgentLabels("phase"))
	spawnSettles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: SpawnSettlesName,
		Help: "Mutating action steps the driver ran, by what the agent waited for after them: none (the driver saw the page announce no new page), announced (it did: the agent waited for the spawns to be adopted) or blind (the driver cannot tell, or the step failed: a fixed settle) (agent).",
	}, withAgentLabels("settle"))
	poolContextsDisposed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PoolContextsDisposedName,
		Help: "Browser contexts of ended pool sessions disposed, by when: cleanup (the disposal closed the session's temporary pages at once) or after_cleanup (nothing of the session lived in it any more) (agent).",
	}, withAgentLabels("when"))
	driverConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: DriverConnectedName,
		Help: "1 while the agent of the profile reaches its browser through the driver, 0 otherwise (agent).",
	}, agentLabels)
	driverPaired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: DriverPairedName,
		Help: "1 when the profile's driver has a browser to reach: an extension paired with the host (extension driver), always for cdp and fake; 0 while no extension is paired (agent).",
	}, agentLabels)
	cleanupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    CleanupDurationName,
		Help:    "Seconds from a session ending (finished, idle timeout or deleted) to every page it owned being closed, released or detached, by the profile the session was placed on (controller).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"profile"})
)

// registered is every collector tabwarden registers (docs/metrics.md lists
// their metrics; TestMetricsDocumented checks it).
var registered = []prometheus.Collector{spawnsAdopted, adoptionLatency, pagesOpened, openLatency, pagesClosed, pagesReleased,
	actionResults, actionDuration, spawnSettles, poolContextsDisposed, driverConnected, driverPaired, cleanupDuration, sessions}

func init() { crmetrics.Registry.MustRegister(registered...) }

// Agent records the metrics of the agent serving one profile through one driver.
type Agent struct{ Profile, Driver string }

// For is the metrics of the agent of profile with driver.
func For(profile, driver string) Agent { return Agent{Profile: profile, Driver: driver} }

// SpawnAdopted counts a spawned page adopted for reason (opener or
// during_action) and observes how long after the browser reported it.
func (a Agent) SpawnAdopted(reason string, seen time.Time) {
	spawnsAdopted.WithLabelValues(a.Profile, a.Driver, reason).Inc()
	if !seen.IsZero() {
		adoptionLatency.WithLabelValues(a.Profile, a.Driver).Observe(time.Since(seen).Seconds())
	}
}

// PageOpened counts a page opened for an Open window and observes how long
// after intent (the window's creation) it opened.
func (a Agent) PageOpened(intent time.Time) {
	pagesOpened.WithLabelValues(a.Profile, a.Driver).Inc()
	if !intent.IsZero() {
		openLatency.WithLabelValues(a.Profile, a.Driver).Observe(max(0, time.Since(intent).Seconds()))
	}
}

// PageClosed counts a session's page closed through the driver.
func (a Agent) PageClosed() { pagesClosed.WithLabelValues(a.Profile, a.Driver).Inc() }

// PageReleased counts a page let go and left open (a Keep page released, a
// bound tab detached).
func (a Agent) PageReleased() { pagesReleased.WithLabelValues(a.Profile, a.Driver).Inc() }

// ActionFinished counts a BrowserAction that reached a final phase; reason is
// the guard reason of a refusal, the failure's reason, or "" on success.
// claimed is when the agent claimed it (zero: refused before the claim, not
// observed in the duration histogram).
func (a Agent) ActionFinished(phase, reason string, claimed time.Time) {
	actionResults.WithLabelValues(a.Profile, a.Driver, phase, reason).Inc()
	if !claimed.IsZero() {
		actionDuration.WithLabelValues(a.Profile, a.Driver, phase).Observe(max(0, time.Since(claimed).Seconds()))
	}
}

// SpawnSettle counts a mutating step the driver ran by the settle it needed
// (none, announced or blind).
func (a Agent) SpawnSettle(settle string) {
	spawnSettles.WithLabelValues(a.Profile, a.Driver, settle).Inc()
}

// PoolContextDisposed counts a pool session's browser context disposed (when:
// DisposedInCleanup or DisposedAfterCleanup).
func (a Agent) PoolContextDisposed(when string) {
	poolContextsDisposed.WithLabelValues(a.Profile, a.Driver, when).Inc()
}

// DriverConnected sets the connection state of the profile's driver, and
// whether it has a browser to reach at all (paired: an extension paired with
// the host; always true for drivers with nothing to pair).
func (a Agent) DriverConnected(connected, paired bool) {
	driverConnected.WithLabelValues(a.Profile, a.Driver).Set(b2f(connected))
	driverPaired.WithLabelValues(a.Profile, a.Driver).Set(b2f(paired))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// SessionCleaned observes how long the cleanup of a session placed on profile
// took, from ended. The profile is the session's status.profileName, written
// only by the controller from a profile that existed ("" when never placed).
func SessionCleaned(profile string, ended time.Time) {
	if !ended.IsZero() {
		cleanupDuration.WithLabelValues(profile).Observe(time.Since(ended).Seconds())
	}
}

// sessionCollector reports gauges computed from the sessions, windows and
// profiles in a cache at scrape time, so that they never drift from the API
// server's state (and are right from the first scrape after a restart).
type sessionCollector struct {
	mu             sync.Mutex
	reader         client.Reader
	gen            uint64 // counts SetSessionReader calls
	unacknowledged *prometheus.Desc
	dirty          *prometheus.Desc
	sessions       *prometheus.Desc
	windows        *prometheus.Desc
}

var sessions = &sessionCollector{
	unacknowledged: prometheus.NewDesc(UnacknowledgedSpawnsName,
		"Spawned BrowserWindows without a disposition, per namespace: their sessions refuse new work until acknowledged (controller).",
		[]string{"namespace"}, nil),
	dirty: prometheus.NewDesc(DirtySessionsName,
		"Finished or deleted BrowserSessions that still own open pages (condition Clean=False, reason dirty_session), per namespace (controller).",
		[]string{"namespace"}, nil),
	sessions: prometheus.NewDesc(SessionsName,
		"BrowserSessions that exist, by phase and by the profile they are placed on (\"\" while unplaced) (controller).",
		[]string{"phase", "profile"}, nil),
	windows: prometheus.NewDesc(WindowsName,
		"BrowserWindows that exist, by phase, source (Open, Spawned, Bind) and the profile their page lives in (\"\" while unplaced) (controller).",
		[]string{"phase", "source", "profile"}, nil),
}

// The phases the live gauges always report (0 when none), per profile.
var (
	sessionPhases = []twv1.SessionPhase{twv1.SessionPhasePending, twv1.SessionPhaseActive, twv1.SessionPhaseWaitingForUser, twv1.SessionPhaseFinishing, twv1.SessionPhaseFinished}
	windowPhases  = []twv1.WindowPhase{twv1.WindowPending, twv1.WindowOpen, twv1.WindowClosing, twv1.WindowClosed, twv1.WindowGone, twv1.WindowUnknown}
	windowSources = []twv1.WindowSource{twv1.SourceOpen, twv1.SourceSpawned, twv1.SourceBind}
)

// SetSessionReader makes the session and window gauges (unacknowledged spawns,
// dirty sessions, sessions and windows by phase) read the sessions, windows
// and profiles from reader (the controller's cache) at each scrape. The last
// call wins; until one, the gauges report nothing. The returned func
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
	ch <- c.sessions
	ch <- c.windows
}

type sessionKey struct{ phase, profile string }

type windowKey struct{ phase, source, profile string }

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
	if err := reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(c.unacknowledged, err)
		return
	}
	var windows twv1.BrowserWindowList
	if err := reader.List(ctx, &windows, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(c.windows, err)
		return
	}
	var profiles twv1.BrowserProfileList
	if err := reader.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(c.sessions, err)
		return
	}
	unacked, dirty := map[string]float64{}, map[string]float64{}
	// Every known profile, and "" (unplaced), reports each phase, 0 included.
	known := map[string]bool{"": true}
	for i := range profiles.Items {
		known[profiles.Items[i].Name] = true
	}
	bySession, byWindow := map[sessionKey]float64{}, map[windowKey]float64{}
	for i := range list.Items {
		s := &list.Items[i]
		unacked[s.Namespace] += float64(s.Status.Windows.Unacknowledged)
		if isDirty(s) {
			dirty[s.Namespace]++
		} else {
			dirty[s.Namespace] += 0
		}
		phase := s.Status.Phase
		if phase == "" {
			phase = twv1.SessionPhasePending
		}
		known[s.Status.ProfileName] = true
		bySession[sessionKey{string(phase), s.Status.ProfileName}]++
	}
	for i := range windows.Items {
		w := &windows.Items[i]
		phase := w.Status.Phase
		if phase == "" {
			phase = twv1.WindowPending
		}
		profile := w.Status.ProfileName
		if profile == "" {
			profile = w.Labels[twv1.ProfileLabel]
		}
		if !known[profile] {
			// Only names of real profiles become label values: a user may
			// label a window of a session that does not exist with anything.
			profile = ""
		}
		byWindow[windowKey{string(phase), string(w.Spec.Source), profile}]++
	}
	for p := range known {
		for _, ph := range sessionPhases {
			bySession[sessionKey{string(ph), p}] += 0
		}
		for _, ph := range windowPhases {
			for _, src := range windowSources {
				byWindow[windowKey{string(ph), string(src), p}] += 0
			}
		}
	}
	for ns, v := range unacked {
		ch <- prometheus.MustNewConstMetric(c.unacknowledged, prometheus.GaugeValue, v, ns)
	}
	for ns, v := range dirty {
		ch <- prometheus.MustNewConstMetric(c.dirty, prometheus.GaugeValue, v, ns)
	}
	for k, v := range bySession {
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, v, k.phase, k.profile)
	}
	for k, v := range byWindow {
		ch <- prometheus.MustNewConstMetric(c.windows, prometheus.GaugeValue, v, k.phase, k.source, k.profile)
	}
}

func isDirty(s *twv1.BrowserSession) bool {
	c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.CleanCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == twv1.ReasonDirtySession
}
