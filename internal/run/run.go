// Package run builds and runs tabwarden's two roles on a controller-runtime
// manager: the controller (sessions, window registration) and the agent (one
// browser profile).
package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/controllers"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
)

// Scheme knows the built-in kinds and tabwarden's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := twv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Where the roles serve their metrics by default: loopback only. On the pod
// network (config/manager, config/agent) they serve with MetricsSecure.
const (
	ControllerMetricsAddr = "127.0.0.1:8080"
	AgentMetricsAddr      = "127.0.0.1:8082"
)

// Common are the manager settings both roles take.
type Common struct {
	// MetricsAddr serves Prometheus metrics; "0" disables.
	MetricsAddr string
	// MetricsSecure serves the metrics over HTTPS (a self-signed certificate
	// unless MetricsCertDir holds tls.crt and tls.key) to callers the API server
	// authenticates (TokenReview) and authorizes (SubjectAccessReview: get on the
	// non-resource url /metrics, ClusterRole tabwarden-metrics-reader): whoever
	// reaches the port on the pod network reads nothing.
	MetricsSecure bool
	// MetricsCertDir holds the serving certificate of MetricsSecure.
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz; "0" or empty disables.
	ProbeAddr string
	// QPS and Burst of the client; the API server, not a client-side limiter,
	// should be what bounds tabwarden.
	QPS   float32
	Burst int
	// SkipNameValidation allows the same controller to be started again in one
	// process (tests restart roles; 'tabwarden up' runs several).
	SkipNameValidation bool
}

func (c Common) apply(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	if c.QPS > 0 {
		cfg.QPS = c.QPS
	}
	if c.Burst > 0 {
		cfg.Burst = c.Burst
	}
	return cfg
}

func (c Common) options() ctrl.Options {
	metrics := c.MetricsAddr
	if metrics == "" {
		metrics = "0"
	}
	probe := c.ProbeAddr
	if probe == "" {
		probe = "0"
	}
	mo := metricsserver.Options{BindAddress: metrics}
	if c.MetricsSecure {
		mo.SecureServing, mo.CertDir = true, c.MetricsCertDir
		mo.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return ctrl.Options{
		Scheme: Scheme(), Metrics: mo, HealthProbeBindAddress: probe,
		Controller: config.Controller{SkipNameValidation: &c.SkipNameValidation},
		// managedFields are a third of a window as stored (three writers: the
		// user, the controller, the agent) and nothing here reads them: tabwarden
		// writes merge patches, never server-side apply. Dropping them from the
		// caches is most of the memory a cached object costs at 10,000 sessions.
		// The strings most objects repeat are shared (index.Intern).
		Cache: cache.Options{DefaultTransform: index.StripAndIntern},
	}
}

func addProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", healthz.Ping)
}

// ControllerOptions configure the controller role.
type ControllerOptions struct {
	Common
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaseNamespace holds the agents' heartbeat Leases (tabwarden-profile-<profile>);
	// default tabwarden-system. "" there means the default, not "off".
	LeaseNamespace string
	// AgentGrace is how long a heartbeat Lease may go unrenewed before the
	// profile's agent is lost (Connected=Unknown); default 40s.
	AgentGrace time.Duration
	// Workers is how many objects each reconciler of the controller works on
	// at once (controller-runtime's MaxConcurrentReconciles); default 1.
	// Placement decisions stay serialized whatever it is.
	Workers int
}

// Controller runs the controller role until ctx ends.
func Controller(ctx context.Context, cfg *rest.Config, o ControllerOptions) error {
	opts := o.options()
	opts.LeaderElection = o.LeaderElection
	opts.LeaderElectionID = "controller.tabwarden.dev"
	opts.LeaderElectionNamespace = o.LeaderElectionNamespace
	opts.LeaderElectionReleaseOnCancel = true
	if o.Workers > 0 {
		opts.Controller.MaxConcurrentReconciles = o.Workers
	}
	leaseNS := o.LeaseNamespace
	if leaseNS == "" {
		leaseNS = access.SystemNamespace
	}
	// Leases are read in the lease namespace (the agents' heartbeats) and,
	// elsewhere, only the holder Leases of sessions (labelled with their
	// session): the cache holds no other Lease of the cluster.
	holders, err := labels.Parse(twv1.SessionLabel)
	if err != nil {
		return err
	}
	opts.Cache.ByObject = map[client.Object]cache.ByObject{
		&twv1.BrowserAction{}: {Transform: index.SlimAction},
		&coordv1.Lease{}: {Namespaces: map[string]cache.Config{
			leaseNS:             {},
			cache.AllNamespaces: {LabelSelector: holders},
		}},
	}
	mgr, err := ctrl.NewManager(o.apply(cfg), opts)
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := controllers.SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	if err := (&controllers.SessionReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tabwarden-controller")}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.ProfileLivenessReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tabwarden-controller"), LeaseNamespace: leaseNS, Grace: o.AgentGrace}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.ActionReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tabwarden-controller")}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.TabListReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.ScreenshotReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.WindowRegistrationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("tabwarden-controller")}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := addProbes(mgr); err != nil {
		return err
	}
	return start(ctx, mgr)
}

// AgentOptions configure the agent role.
type AgentOptions struct {
	Common
	agent.Options
}

// Agent runs the agent role for one profile until ctx ends.
func Agent(ctx context.Context, cfg *rest.Config, o AgentOptions) error {
	opts := o.options()
	co := agent.CacheOptions(o.Profile)
	co.DefaultTransform = opts.Cache.DefaultTransform
	opts.Cache = co
	mgr, err := ctrl.NewManager(o.apply(cfg), opts)
	if err != nil {
		return fmt.Errorf("creating the agent manager: %w", err)
	}
	if _, err := agent.Setup(ctx, mgr, o.Options); err != nil {
		return err
	}
	if err := addProbes(mgr); err != nil {
		return err
	}
	return start(ctx, mgr)
}

// unsyncedStopGrace is how long a role stopped before its caches synced waits
// for its manager to return (start).
const unsyncedStopGrace = 2 * time.Second

// start runs the manager until ctx ends. controller-runtime's manager cannot
// stop while it waits for its caches' first sync: canceled then, its start
// loop spins until the caches sync, which they cannot while the API server is
// unreachable (kubernetes-sigs/controller-runtime#3440, not in v0.25.3). A
// role stopped then returns after unsyncedStopGrace with an error saying so,
// instead of hanging; the manager's start returns by itself once the API
// server answers. A role stopped after its caches synced stops as the manager
// does (its graceful shutdown).
func start(ctx context.Context, mgr ctrl.Manager) error {
	synced := make(chan struct{})
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			close(synced)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case <-synced:
		return <-done
	default:
	}
	select {
	case err := <-done:
		return err
	case <-time.After(unsyncedStopGrace):
		return errors.New("stopped before its caches synced (the API server unreachable): the manager is abandoned, not stopped")
	}
}
