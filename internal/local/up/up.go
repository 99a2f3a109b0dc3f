// Package up is `tabwarden up`: the whole of tabwarden on one machine. It starts
// an embedded control plane (kube-apiserver and etcd, built from source by
// hack/envtest.sh and run by controller-runtime's envtest) with tabwarden's CRDs
// and access control (the RBAC of config/rbac and the admission policies of
// config/admission, as in a cluster), a headless Chromium it owns, the controller
// role, an agent for profile `local` (cdp driver, that Chromium) and an agent for
// profile `my-chrome` (extension driver: a loopback host the user's own Chrome
// pairs with). Each role runs under its own least-privilege identity, a client
// certificate in a kubeconfig of its own; the user gets an admin kubeconfig. It
// prints what to run next and, when its context ends, stops everything it started.
//
// It is private to the OS user that runs it: the directory (Options.Dir) is
// forced to 0700 and etcd admits only the API server's client certificate
// (controlplane.go). The cluster's state persists across runs, as kind's and
// minikube's does: etcd's data is in Dir/etcd-data (Options.Fresh removes it
// first), and what up writes at start (CRDs, namespaces, RBAC, admission
// policies, profiles, kubeconfigs) is created or updated, never refused as
// existing. The browser is new each run: the pages of the last one are gone,
// and the agent reconciles the windows that named them (an Open window of a
// live session opens again, a Spawned or Bound one ends Gone, reason
// browser_restarted). The extension pairing (the state directory) stays too.
package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
)

// Module is the module path that identifies the repository root.
const Module = "github.com/tabwarden/tabwarden"

// Namespace is the system namespace: agents' heartbeat Leases live here.
const Namespace = access.SystemNamespace

// SessionNamespace is where the user's sessions go: the admin kubeconfig's
// namespace, the one config/samples and the printed commands use. The desktop
// profiles admit it and no other.
const SessionNamespace = "default"

// Defaults of Options.
const (
	DefaultDir              = ".tabwarden"
	DefaultLocalProfile     = "local"
	DefaultExtensionProfile = "my-chrome"
	// DefaultFixtureAddr is where `tabwarden up` serves the fixture site unless
	// told otherwise: a fixed port, so that config/samples and the README's
	// quick start name their pages offline (http://127.0.0.1:47322/form).
	DefaultFixtureAddr = "127.0.0.1:47322"
	// ExtensionOff as Options.ExtensionAddr disables the extension agent.
	ExtensionOff = "off"
	// Off as Options.FixtureAddr or Options.MetricsAddr disables that server.
	Off = "off"
)

// Files under Options.Dir.
const (
	// KubeconfigFile is the user's, an administrator's (system:masters).
	KubeconfigFile = "kubeconfig"
	// UserKubeconfigFile is UserName's: not an admin, what a driver of
	// sessions needs (give this one to an agent or an MCP client).
	UserKubeconfigFile = "user.kubeconfig"
	// ControllerKubeconfigFile is the controller's identity (tabwarden:controller).
	ControllerKubeconfigFile = "controller.kubeconfig"
	InfoFile                 = "up.json"
	PidsFile                 = "pids"
	StateDir                 = "state"
	lockFile                 = "up.lock"
)

// ReadyPrefix starts the line printed on standard output once everything runs.
const ReadyPrefix = "tabwarden up: ready"

// ReadyEnd is the last line of the message that ReadyPrefix begins.
const ReadyEnd = "Ctrl-C stops everything tabwarden up started."

// Options configure Run.
type Options struct {
	// Dir holds the kubeconfig, the extension state and the run's info files
	// (default .tabwarden, relative to the working directory).
	Dir string
	// Repo is the tabwarden checkout (hack/envtest.sh, crds/, extension/,
	// config/samples/). Default: found by walking up from the working directory.
	Repo string
	// Assets is the directory with kube-apiserver and etcd. Default:
	// $KUBEBUILDER_ASSETS, else what hack/envtest.sh builds or finds cached.
	Assets string
	// CDPEndpoint is a Chrome to drive as profile `local` instead of launching a
	// headless Chromium (ws://…/devtools/browser/… or http://host:port).
	CDPEndpoint string
	// Headful launches Chromium with a window (needs a display).
	Headful bool
	// ExtensionAddr is where the extension host listens (default
	// 127.0.0.1:47321); ExtensionOff disables the extension agent.
	ExtensionAddr string
	// LocalProfile and ExtensionProfile name the two profiles (local, my-chrome).
	LocalProfile, ExtensionProfile string
	// Self is how the user invokes this binary, for printed commands (default tabwarden).
	Self string
	// Stdout receives the ready line and what to run next; Stderr progress.
	Stdout, Stderr io.Writer
	// Logger is the roles' logger.
	Logger logr.Logger
	// ReadyTimeout bounds the wait for the agents after the control plane is
	// up (default 3 minutes).
	ReadyTimeout time.Duration
	// StopTimeout bounds the wait for the roles to stop (default 30 s).
	StopTimeout time.Duration
	// FixtureAddr is where the fixture site (internal/local/fixture: the incident's
	// contacts page and its compose popups) is served (default 127.0.0.1:0, a
	// free loopback port; its URL is printed and in up.json); "off" disables it.
	FixtureAddr string
	// MetricsAddr is where the roles' Prometheus metrics (one registry: they run
	// in this process) are served (default 127.0.0.1:0; printed and in up.json);
	// "off" disables it.
	MetricsAddr string
	// Fresh starts with an empty cluster: the state kept from the last run
	// (etcd's data, EtcdDataDir, and the cdp driver's ledger) is removed
	// first. The kubeconfigs are rewritten anyway; the extension pairing stays.
	Fresh bool
}

// AgentKubeconfigFile is the kubeconfig of the agent of profile
// (tabwarden:agent:<profile>).
func AgentKubeconfigFile(profile string) string { return "agent-" + profile + ".kubeconfig" }

// defaults fills in the zero fields of o and refuses one profile under two names.
func (o *Options) defaults() error {
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if o.ExtensionAddr == "" {
		o.ExtensionAddr = extension.DefaultAddr
	}
	if o.LocalProfile == "" {
		o.LocalProfile = DefaultLocalProfile
	}
	if o.ExtensionProfile == "" {
		o.ExtensionProfile = DefaultExtensionProfile
	}
	if o.Self == "" {
		o.Self = "tabwarden"
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 3 * time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 30 * time.Second
	}
	if o.FixtureAddr == "" {
		o.FixtureAddr = "127.0.0.1:0"
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "127.0.0.1:0"
	}
	if o.LocalProfile == o.ExtensionProfile {
		return fmt.Errorf("the local and extension profiles must differ (both %q)", o.LocalProfile)
	}
	return nil
}

// Run starts everything, prints the ready line and what to run next, and blocks
// until ctx ends (nil) or a role fails (its error); either way it stops
// everything it started before returning.
//
// It runs its steps in order: the first three only check and prepare; from
// the extension host on, everything a step starts is stopped on the way out
// by shutDown, users before what they use.
func Run(ctx context.Context, o Options) (err error) {
	// A step that ends because ctx ended returns errStopped: up stops quietly.
	defer func() {
		if errors.Is(err, errStopped) {
			err = nil
		}
	}()
	r := &runner{
		began: time.Now(),
		// Processes that ran before are not up's to account for or stop (when
		// Run is embedded in a bigger program).
		before: Descendants(os.Getpid()),
	}
	if err := o.defaults(); err != nil {
		return err
	}
	r.o, r.log = o, o.Logger
	r.info = Info{PID: os.Getpid(), Namespace: Namespace, LocalProfile: o.LocalProfile, RoleKubeconfigs: map[string]string{}}

	if err := r.findCheckout(); err != nil {
		return err
	}
	if err := r.prepareStateDir(); err != nil {
		return err
	}
	defer r.unlock()
	if err := r.checkPrerequisites(ctx); err != nil {
		return err
	}

	defer r.shutDown()
	for _, step := range []func(context.Context) error{
		r.startExtensionHost,
		r.serveSites,
		r.launchBrowser,
		r.bootControlPlane,
		r.installAccess,
		r.writeIdentities,
		r.connectBrowser,
		r.startRoles,
		r.waitUntilReady,
		r.announce,
		r.serve,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// errStopped is what a step returns when it ends because Run's context did:
// Run then returns nil, having stopped what it started.
var errStopped = errors.New("stopped")

// orStopped is errStopped when ctx has ended, else err.
func orStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errStopped
	}
	return err
}

// runner is one run of up: what the steps of Run found, made and started.
type runner struct {
	o      Options
	log    logr.Logger
	began  time.Time
	before []Proc

	// Found by the first steps.
	repo, crds, dir, assets string
	manifests               *access.Manifests
	unlock                  func()

	// Started by the later steps, stopped by shutDown.
	host       *extension.Host
	closers    []func() // the loopback servers, in the order they started
	chrome     *launch
	cp         *controlPlane
	cdpBrowser *cdp.Browser
	roles      *roleSet

	// What the steps made.
	k8s                                   client.Client
	controllerCfg, localCfg, extensionCfg *rest.Config
	// chromeExited is closed when the Chromium up launched exits; chromeErr
	// says why. The pipe is the browser's one connection: once Chromium exits
	// there is nothing to reconnect to, and up says so rather than run blind.
	chromeExited <-chan struct{}
	chromeErr    func() error
	// info is written to up.json once ready.
	info Info
}

// progress prints one line of progress on Options.Stderr.
func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.o.Stderr, "tabwarden up: "+format+"\n", args...)
}

// shutDown stops everything the steps started, users before what they use:
// the roles (cancelled first, then awaited after the loopback servers close),
// the extension host, the cdp driver, Chromium, the control plane; then kills
// any process left behind and removes the info files.
func (r *runner) shutDown() {
	if r.roles != nil {
		r.roles.cancel()
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	if r.roles != nil {
		r.roles.stop(r.o.StopTimeout, r.log)
	}
	if r.host != nil {
		_ = r.host.Close()
	}
	if r.cdpBrowser != nil {
		r.cdpBrowser.Shutdown()
	}
	if r.chrome != nil {
		if p, _ := r.chrome.wait(); p != nil {
			_ = p.Close()
		}
	}
	if r.cp != nil {
		if err := r.cp.Stop(); err != nil {
			r.log.Error(err, "Stopping kube-apiserver and etcd")
		}
	}
	if left := started(r.before); len(left) > 0 {
		// Nothing should be left; make sure of it rather than leak.
		for _, p := range left {
			r.log.Info("Killing a process left behind", "pid", p.PID, "comm", p.Comm)
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	_ = os.Remove(filepath.Join(r.dir, InfoFile))
	_ = os.Remove(filepath.Join(r.dir, PidsFile))
	r.progress("stopped")
}
