package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/run"
)

// Role is a running controller or agent that a test can stop (and start again).
type Role struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Stop stops the role and waits until it has stopped.
func (r *Role) Stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

// RunRole runs f until the test ends or Stop is called; an error from f fails the test.
func RunRole(t testing.TB, f func(ctx context.Context) error) *Role {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Role{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := f(ctx); err != nil {
			t.Errorf("role stopped with error: %v", err)
		}
	}()
	t.Cleanup(r.Stop)
	return r
}

// StartController runs the controller role under its own identity (user
// tabwarden:controller, with the shipped RBAC) on the control plane of admin, a
// config testenv.Start returned.
func StartController(t testing.TB, admin *rest.Config) *Role {
	t.Helper()
	return StartControllerWith(t, admin, run.ControllerOptions{})
}

// StartControllerWith is StartController with options (the agent grace period,
// the lease namespace).
func StartControllerWith(t testing.TB, admin *rest.Config, o run.ControllerOptions) *Role {
	t.Helper()
	cfg := MustConfig(t)(ControllerConfig(admin))
	o.SkipNameValidation = true
	return RunRole(t, func(ctx context.Context) error {
		return run.Controller(ctx, cfg, o)
	})
}

// StartAgent runs the agent of opts.Profile under its own identity (user
// tabwarden:agent:<profile>, with the shipped RBAC; its lease Role in
// opts.LeaseNamespace) on the control plane of admin; the heartbeat defaults to
// one second. Each tune, when given, changes the agent's rest config first (a
// test's transport that counts or slows its requests).
func StartAgent(t testing.TB, admin *rest.Config, opts agent.Options, tune ...func(*rest.Config)) *Role {
	t.Helper()
	if opts.Heartbeat == 0 {
		opts.Heartbeat = time.Second
	}
	// As an admin would before starting its agent: the profile, admitting every namespace.
	ensureProfile(t, admin, opts.Profile, opts.Driver)
	cfg := MustConfig(t)(AgentConfig(admin, opts.Profile))
	for _, f := range tune {
		f(cfg)
	}
	if err := AllowAgentLeases(admin, opts.LeaseNamespace); err != nil {
		t.Fatal(err)
	}
	return RunRole(t, func(ctx context.Context) error {
		return run.Agent(ctx, cfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: opts})
	})
}

// NewNamespace creates a namespace with a generated name.
func NewNamespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// Get reads obj back from the API server, failing the test on error.
func Get[T client.Object](t testing.TB, c client.Client, obj T) T {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %s: %v", client.ObjectKeyFromObject(obj), err)
	}
	return obj
}

// Ack gives a window a disposition, as `kubectl patch --type=merge` would.
func Ack(t testing.TB, c client.Client, w *twv1.BrowserWindow, d twv1.Disposition) {
	t.Helper()
	p := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"`+string(d)+`"}}`))
	if err := c.Patch(context.Background(), w, p); err != nil {
		t.Fatalf("acknowledging %s: %v", w.Name, err)
	}
}

// OpenWindow is an Open BrowserWindow for a session.
func OpenWindow(ns, name, session, url string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: session}, Source: twv1.SourceOpen, URL: url},
	}
}

// StartCDPAgent runs an agent for profile, under the agent's own identity, on
// the Chromium at endpoint (its DevTools WebSocket URL, or a proxy in front of
// it) through its own CDP connection, with its ledger in stateDir (an agent
// restarted in a test finds the records of the one before it, as `tabwarden
// agent --state-dir` does). It ensures the profile exists first.
func StartCDPAgent(t testing.TB, admin *rest.Config, profile, endpoint, stateDir string, pool bool) *Role {
	t.Helper()
	ensureProfile(t, admin, profile, twv1.DriverCDP)
	agentCfg := MustConfig(t)(AgentConfig(admin, profile))
	return RunRole(t, func(ctx context.Context) error {
		b, err := cdp.New(ctx, endpoint, cdp.Options{Pool: pool, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
			LedgerPath: cdp.LedgerFile(stateDir, profile)})
		if err != nil {
			return err
		}
		defer b.Shutdown()
		return run.Agent(ctx, agentCfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
			Profile: profile, Driver: twv1.DriverCDP, Browser: b, Heartbeat: time.Second,
		}})
	})
}
