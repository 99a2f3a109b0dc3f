// Package testenv starts a real kube-apiserver and etcd (built from source by
// hack/envtest.sh) with tabwarden's CRDs and its shipped access control installed
// (config/rbac bound to the roles' certificate identities, config/admission), for
// tests and benchmarks. Tests set things up as an administrator (the config Start
// returns) and run the controller and agents under their own identities.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
)

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Assets returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS
// when set, else what hack/envtest.sh builds (or finds cached).
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(Root(), "hack", "envtest.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the envtest binaries with hack/envtest.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// plane is a control plane started by Start, found again by its administrator's config.
type plane struct {
	env       *envtest.Environment
	manifests *access.Manifests
	admin     *rest.Config

	mu      sync.Mutex
	users   map[string]*rest.Config
	leaseNS map[string]bool
}

var (
	planesMu sync.Mutex
	planes   = map[string]*plane{}
)

// Start starts the control plane with the CRDs from crds/, the roles of
// config/rbac (ClusterRoles and lease Roles, bound to the groups
// tabwarden:controllers and tabwarden:agents) and the admission policies of
// config/admission, and waits until they are enforced. The config it returns is
// an administrator's (system:masters; the admission policies apply to it too).
func Start() (*envtest.Environment, *rest.Config, error) {
	return StartWith(nil)
}

// StartWith is Start with configure applied to the environment before it starts
// (e.g. flags of etcd or the API server for a benchmark); nil configures nothing.
func StartWith(configure func(*envtest.Environment)) (*envtest.Environment, *rest.Config, error) {
	assets, err := Assets()
	if err != nil {
		return nil, nil, err
	}
	manifests, err := access.Load(Root())
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(Root(), "crds")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if configure != nil {
		configure(env)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	fail := func(err error) (*envtest.Environment, *rest.Config, error) {
		_ = env.Stop()
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	if err := manifests.Install(ctx, c); err != nil {
		return fail(fmt.Errorf("installing config/rbac and config/admission: %w", err))
	}
	if err := access.WaitEnforced(ctx, cfg, run.Scheme()); err != nil {
		return fail(err)
	}
	planesMu.Lock()
	planes[cfg.Host] = &plane{env: env, manifests: manifests, admin: cfg, users: map[string]*rest.Config{}, leaseNS: map[string]bool{}}
	planesMu.Unlock()
	return env, cfg, nil
}

func planeOf(admin *rest.Config) (*plane, error) {
	planesMu.Lock()
	defer planesMu.Unlock()
	p := planes[admin.Host]
	if p == nil {
		return nil, fmt.Errorf("no control plane started by testenv.Start serves %s", admin.Host)
	}
	return p, nil
}

// UserConfig returns a config that authenticates to the control plane of admin
// (a config testenv.Start returned) with a client certificate for user in groups.
func UserConfig(admin *rest.Config, user string, groups ...string) (*rest.Config, error) {
	p, err := planeOf(admin)
	if err != nil {
		return nil, err
	}
	key := user + "\x00" + strings.Join(groups, "\x00")
	p.mu.Lock()
	defer p.mu.Unlock()
	if cfg := p.users[key]; cfg != nil {
		return rest.CopyConfig(cfg), nil
	}
	u, err := p.env.AddUser(envtest.User{Name: user, Groups: groups}, p.admin)
	if err != nil {
		return nil, fmt.Errorf("client certificate for %s: %w", user, err)
	}
	p.users[key] = u.Config()
	return rest.CopyConfig(p.users[key]), nil
}

// ControllerConfig is the controller's identity: user tabwarden:controller in
// group tabwarden:controllers.
func ControllerConfig(admin *rest.Config) (*rest.Config, error) {
	return UserConfig(admin, access.ControllerUser, access.ControllerGroup)
}

// AgentConfig is the identity of the agent of profile: user
// tabwarden:agent:<profile> in group tabwarden:agents.
func AgentConfig(admin *rest.Config, profile string) (*rest.Config, error) {
	return UserConfig(admin, access.AgentUser(profile), access.AgentGroup)
}

// AllowAgentLeases lets agents renew their heartbeat Leases in namespace ns (the
// shipped lease Role, there, bound to the agents' group); tabwarden-system
// always allows them.
func AllowAgentLeases(admin *rest.Config, ns string) error {
	if ns == "" || ns == access.SystemNamespace {
		return nil
	}
	p, err := planeOf(admin)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leaseNS[ns] {
		return nil
	}
	c, err := client.New(p.admin, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return err
	}
	if err := p.manifests.AllowAgentLeases(context.Background(), c, ns); err != nil {
		return err
	}
	p.leaseNS[ns] = true
	return nil
}

// MustConfig wraps UserConfig, ControllerConfig or AgentConfig for a test:
// MustConfig(t)(AgentConfig(admin, "a")) fails the test on error.
func MustConfig(t testing.TB) func(*rest.Config, error) *rest.Config {
	return func(cfg *rest.Config, err error) *rest.Config {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
}

// ControllerClient is a client under the controller's identity, for tests that
// write what only the controller may (as a bug in it would).
func ControllerClient(t testing.TB, admin *rest.Config) client.Client {
	t.Helper()
	return newClient(t, MustConfig(t)(ControllerConfig(admin)))
}

// AgentClient is a client under the identity of the agent of profile, for tests
// that write what only that agent may (as a stolen agent credential would).
func AgentClient(t testing.TB, admin *rest.Config, profile string) client.Client {
	t.Helper()
	return newClient(t, MustConfig(t)(AgentConfig(admin, profile)))
}

func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// UserClient is a client under the identity of a user who may edit namespace
// ns and read profiles (the shipped tabwarden-edit and tabwarden-profile-viewer
// roles): a person with kubectl, or an AI agent going through the API server.
func UserClient(t testing.TB, admin *rest.Config, ns, user string) client.Client {
	t.Helper()
	return newClient(t, AllowUser(t, admin, ns, user))
}
