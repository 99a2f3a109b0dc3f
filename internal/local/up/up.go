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
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/controllers"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/private"
	"github.com/tabwarden/tabwarden/internal/run"
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

// Info is written to Dir/up.json while up runs (and removed when it stops).
type Info struct {
	PID        int    `json:"pid"`
	Kubeconfig string `json:"kubeconfig"`
	// RoleKubeconfigs are the kubeconfigs the roles run under, by user name
	// (tabwarden:controller, tabwarden:agent:<profile>).
	RoleKubeconfigs map[string]string `json:"roleKubeconfigs"`
	APIServer       string            `json:"apiServer"`
	Namespace       string            `json:"namespace"`
	LocalProfile    string            `json:"localProfile"`
	// DevToolsHTTP is the endpoint of the Chrome given with --cdp-endpoint;
	// empty when up launched Chromium, which it drives over a pipe and which
	// has no DevTools port at all.
	DevToolsHTTP string `json:"devToolsHTTP,omitempty"`
	// ChromiumPID is the Chromium up launched (the leader of its process group).
	ChromiumPID         int    `json:"chromiumPID,omitempty"`
	ChromiumUserDataDir string `json:"chromiumUserDataDir,omitempty"`
	// StartPage is the page Chromium opened at launch: the user's own tab,
	// which tabwarden never adopts, reads or closes.
	StartPage        string `json:"startPage,omitempty"`
	ExtensionProfile string `json:"extensionProfile,omitempty"`
	ExtensionAddr    string `json:"extensionAddr,omitempty"`
	StateDir         string `json:"stateDir"`
	// DataDir is etcd's data, the cluster's state kept across runs (EtcdDataDir).
	DataDir string `json:"dataDir,omitempty"`
	// FixtureURL is the fixture site's base URL (the incident: FixtureURL+"/contacts").
	FixtureURL string `json:"fixtureURL,omitempty"`
	// MetricsURL serves the roles' Prometheus metrics (docs/metrics.md).
	MetricsURL string `json:"metricsURL,omitempty"`
	// Processes are the processes up started (its descendants when it became ready).
	Processes []Proc `json:"processes"`
	// StartSeconds is how long up took to become ready.
	StartSeconds float64 `json:"startSeconds"`

	// UserKubeconfig is UserName's kubeconfig (UserKubeconfigFile).
	UserKubeconfig string `json:"userKubeconfig,omitempty"`
}

// FindRepo walks up from dir to the directory whose go.mod declares Module.
func FindRepo(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if isRepo(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no tabwarden checkout at or above %s: run `tabwarden up` inside the repository "+
				"(it needs hack/envtest.sh, crds/ and extension/) or pass --repo", dir)
		}
	}
}

func isRepo(d string) bool {
	f, err := os.Open(filepath.Join(d, "go.mod"))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose on close
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return fields[1] == Module
		}
	}
	return false
}

// Assets runs hack/envtest.sh in repo (its progress on stderr) and returns the
// directory it prints on its last line.
func Assets(ctx context.Context, repo string, stderr io.Writer) (string, error) {
	script := filepath.Join(repo, "hack", "envtest.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = repo
	cmd.Stderr = stderr
	// The script runs `go build`: end the whole group when ctx ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("building kube-apiserver and etcd with %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" {
		return "", fmt.Errorf("%s printed no directory", script)
	}
	return dir, nil
}

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
func Run(ctx context.Context, o Options) (retErr error) {
	began := time.Now()
	// Processes that ran before are not up's to account for or stop (when Run is
	// embedded in a bigger program).
	before := Descendants(os.Getpid())
	if err := o.defaults(); err != nil {
		return err
	}
	log := o.Logger
	progress := func(format string, args ...any) {
		fmt.Fprintf(o.Stderr, "tabwarden up: "+format+"\n", args...)
	}

	var err error
	repo := o.Repo
	if repo == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if repo, err = FindRepo(wd); err != nil {
			return err
		}
	} else if repo, err = filepath.Abs(repo); err != nil {
		return err
	}
	crds := filepath.Join(repo, "crds")
	if _, err := os.Stat(crds); err != nil {
		return fmt.Errorf("the CRDs are missing (%w): is %s a tabwarden checkout? pass --repo", err, repo)
	}
	manifests, err := access.Load(repo)
	if err != nil {
		return fmt.Errorf("the roles and admission policies of config/rbac and config/admission: %w", err)
	}

	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	// Private to this OS user: it holds the admin's kubeconfig, the roles' keys,
	// etcd's certificates and the pairing; one left open (0755) is closed.
	tightened, err := private.Dir(dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	for _, t := range tightened {
		progress("made private: %s", t)
	}
	unlock, err := lock(filepath.Join(dir, lockFile))
	if err != nil {
		return err
	}
	defer unlock()
	if o.Fresh {
		removed, err := wipeState(dir)
		if err != nil {
			return fmt.Errorf("--fresh: %w", err)
		}
		if len(removed) > 0 {
			progress("--fresh: removed the cluster's state kept from the last run (%s)", strings.Join(removed, ", "))
		}
	}

	// Chromium first: its absence is the likeliest problem.
	if o.CDPEndpoint == "" {
		if _, err := chromium.Find(); err != nil {
			return fmt.Errorf("%w\n(or pass --cdp-endpoint http://127.0.0.1:9222 to drive a Chrome started with --remote-debugging-port=9222)", err)
		}
	}

	assets := o.Assets
	if assets == "" {
		assets = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if assets == "" {
		progress("finding kube-apiserver and etcd (hack/envtest.sh; the first run builds them from source)")
		if assets, err = Assets(ctx, repo, o.Stderr); err != nil {
			return err
		}
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return fmt.Errorf("%s is missing from %s: run hack/envtest.sh (make envtest) or fix --assets / KUBEBUILDER_ASSETS", bin, assets)
		}
	}
	if ctx.Err() != nil {
		return nil
	}

	// From here on, everything started is stopped on the way out, users before
	// what they use: roles, extension host, cdp driver, Chromium, control plane.
	var (
		cp         *controlPlane
		chrome     *launch
		cdpBrowser *cdp.Browser
		host       *extension.Host
		stopRoles  func()
	)
	defer func() {
		if stopRoles != nil {
			stopRoles()
		}
		if host != nil {
			_ = host.Close()
		}
		if cdpBrowser != nil {
			cdpBrowser.Shutdown()
		}
		if chrome != nil {
			if p, _ := chrome.wait(); p != nil {
				_ = p.Close()
			}
		}
		if cp != nil {
			if err := cp.Stop(); err != nil {
				log.Error(err, "Stopping kube-apiserver and etcd")
			}
		}
		if left := started(before); len(left) > 0 {
			// Nothing should be left; make sure of it rather than leak.
			for _, p := range left {
				log.Info("Killing a process left behind", "pid", p.PID, "comm", p.Comm)
				_ = syscall.Kill(p.PID, syscall.SIGKILL)
			}
		}
		_ = os.Remove(filepath.Join(dir, InfoFile))
		_ = os.Remove(filepath.Join(dir, PidsFile))
		progress("stopped")
	}()

	// The extension host first: a taken port fails in a second, not after the control plane started.
	if o.ExtensionAddr != ExtensionOff {
		h, err := extension.New(extension.Options{
			Addr: o.ExtensionAddr, StateDir: filepath.Join(dir, StateDir), Logger: log.WithName("extension"),
		})
		if err != nil {
			return err
		}
		// Ended by the cleanup above.
		if err := h.Start(context.Background()); err != nil {
			return fmt.Errorf("%w\n(another tabwarden agent may be serving the extension: pass --extension-addr 127.0.0.1:<port>, or --extension-addr off)", err)
		}
		host = h
	}

	// The fixture site and the metrics endpoint: loopback listeners, closed on the way out.
	var fixtureURL, metricsURL string
	for _, srv := range []struct {
		what, addr string
		handler    http.Handler
		url        *string
	}{
		{"the fixture site", o.FixtureAddr, fixture.Tracked(fixture.Handler()), &fixtureURL},
		{"the metrics endpoint", o.MetricsAddr, metricsHandler(), &metricsURL},
	} {
		if srv.addr == Off {
			continue
		}
		u, closeSrv, err := serveLoopback(srv.addr, srv.handler)
		if err != nil && srv.addr == DefaultFixtureAddr {
			return fmt.Errorf("serving %s on %s: %w\n(another tabwarden up may be running: stop it, or pass --fixture-addr 127.0.0.1:0 and use the printed address instead of the samples' %s)", srv.what, srv.addr, err, srv.addr)
		}
		if err != nil {
			return fmt.Errorf("serving %s on %s: %w", srv.what, srv.addr, err)
		}
		defer closeSrv()
		*srv.url = u
	}
	if metricsURL != "" {
		metricsURL += "/metrics"
	}

	var startPage string
	// Chromium starts while the control plane does, over a pipe: no DevTools
	// port for a page or another local user to reach (invariant 8). It opens
	// the fixture site's home page as the user's own tab.
	if o.CDPEndpoint == "" {
		progress("launching headless Chromium")
		if fixtureURL != "" {
			startPage = fixtureURL + "/"
		}
		chrome = &launch{ch: make(chan chromeResult, 1)}
		go func() {
			// Not ctx: the process is ended by the cleanup above, not by the signal.
			p, err := chromium.Launch(context.Background(), chromium.Options{Headful: o.Headful, StartTimeout: 90 * time.Second, Pipe: true, StartURL: startPage})
			chrome.ch <- chromeResult{p, err}
		}()
	}

	progress("starting kube-apiserver and etcd from %s", assets)
	cp, err = startControlPlane(ctx, dir, assets, crds, 2*time.Minute, 30*time.Second)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	cfg := cp.Config
	progress("control plane up at %s after %.1fs", strings.TrimSuffix(cfg.Host, "/"), time.Since(began).Seconds())

	user, err := cp.AddUser(envtest.User{Name: "tabwarden-admin", Groups: []string{"system:masters"}})
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err == nil {
		kc, err = localKubeconfig(kc, SessionNamespace)
	}
	if err != nil {
		return fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	kubeconfig := filepath.Join(dir, KubeconfigFile)
	if err := writeFile(kubeconfig, kc); err != nil {
		return err
	}
	k8s, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	// Who may write what, as in a cluster: the roles of config/rbac bound to the
	// roles' certificate groups, and the admission policies (the admin too).
	if err := manifests.Install(ctx, k8s); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("installing config/rbac and config/admission: %w", err)
	}
	if err := access.WaitEnforced(ctx, cfg, run.Scheme()); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	for _, p := range []struct {
		name   string
		driver twv1.DriverType
	}{{o.LocalProfile, twv1.DriverCDP}, {o.ExtensionProfile, twv1.DriverExtension}} {
		if p.driver == twv1.DriverExtension && host == nil {
			continue
		}
		if err := ensureDesktopProfile(ctx, k8s, p.name, p.driver); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}

	info := Info{
		PID: os.Getpid(), Kubeconfig: kubeconfig, APIServer: strings.TrimSuffix(cfg.Host, "/"), Namespace: Namespace,
		LocalProfile: o.LocalProfile, StateDir: filepath.Join(dir, StateDir), RoleKubeconfigs: map[string]string{},
		DataDir:    filepath.Join(dir, EtcdDataDir),
		FixtureURL: fixtureURL, MetricsURL: metricsURL,
	}
	// Each role's own identity, written as a kubeconfig and run from it.
	roleConfig := func(file, user, group string) (*rest.Config, error) {
		var groups []string
		if group != "" {
			groups = []string{group}
		}
		u, err := cp.AddUser(envtest.User{Name: user, Groups: groups})
		if err != nil {
			return nil, fmt.Errorf("creating the identity %s: %w", user, err)
		}
		kc, err := u.KubeConfig()
		if err == nil {
			kc, err = localKubeconfig(kc, SessionNamespace)
		}
		if err != nil {
			return nil, fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
		}
		path := filepath.Join(dir, file)
		if err := writeFile(path, kc); err != nil {
			return nil, err
		}
		info.RoleKubeconfigs[user] = path
		return clientcmd.RESTConfigFromKubeConfig(kc)
	}
	// The person's own non-admin identity, to hand to an agent or MCP client.
	if err := grantUser(ctx, k8s, SessionNamespace); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if _, err := roleConfig(UserKubeconfigFile, UserName, ""); err != nil {
		return err
	}
	info.UserKubeconfig = info.RoleKubeconfigs[UserName]
	delete(info.RoleKubeconfigs, UserName)
	controllerCfg, err := roleConfig(ControllerKubeconfigFile, access.ControllerUser, access.ControllerGroup)
	if err != nil {
		return err
	}
	localCfg, err := roleConfig(AgentKubeconfigFile(o.LocalProfile), access.AgentUser(o.LocalProfile), access.AgentGroup)
	if err != nil {
		return err
	}
	var extensionCfg *rest.Config
	if host != nil {
		if extensionCfg, err = roleConfig(AgentKubeconfigFile(o.ExtensionProfile), access.AgentUser(o.ExtensionProfile), access.AgentGroup); err != nil {
			return err
		}
	}
	endpoint := o.CDPEndpoint
	var dial func(context.Context, func(wire.Event)) (*wire.Conn, error)
	// The pipe is the browser's one connection: once Chromium exits there is
	// nothing to reconnect to, and up says so rather than run blind.
	var chromeExited <-chan struct{}
	chromeErr := func() error { return nil }
	if chrome != nil {
		p, err := chrome.wait()
		if err != nil {
			return fmt.Errorf("launching Chromium: %w", err)
		}
		endpoint, dial = "pipe", p.Dial
		chromeExited, chromeErr = p.Done(), p.Err
		info.ChromiumPID, info.ChromiumUserDataDir, info.StartPage = p.Pid(), p.UserDataDir, startPage
		progress("Chromium up (pid %d), driven over a pipe: no DevTools port", p.Pid())
	} else {
		info.DevToolsHTTP = strings.TrimSuffix(o.CDPEndpoint, "/")
	}
	if ctx.Err() != nil {
		return nil
	}

	dialCtx, cancelDial := context.WithTimeout(ctx, time.Minute)
	// tabwarden's own endpoints are out of the pages' reach too (invariant 8),
	// besides the DevTools port itself.
	var blockPorts []int
	for _, a := range []string{cfg.Host, metricsURL} {
		if u, err := url.Parse(a); err == nil {
			if n, err := strconv.Atoi(u.Port()); err == nil {
				blockPorts = append(blockPorts, n)
			}
		}
	}
	if host != nil {
		if _, p, err := net.SplitHostPort(host.Addr()); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				blockPorts = append(blockPorts, n)
			}
		}
	}
	// The Chromium up launched is a new browser: the ledger's records of the
	// last run's (the pages of its windows) are void, and the agent tells those
	// windows that their pages went with a restart (Open ones open again).
	var instance string
	if chrome != nil {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce) // crypto/rand.Read never fails
		instance = "tabwarden-up/" + hex.EncodeToString(nonce)
	}
	cdpBrowser, err = cdp.New(dialCtx, endpoint, cdp.Options{Pool: true, Logger: log.WithName("cdp"), LedgerPath: cdp.LedgerFile(filepath.Join(dir, StateDir), o.LocalProfile), BlockPorts: blockPorts, Dial: dial, Instance: instance})
	cancelDial()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("connecting to Chrome DevTools at %s: %w", endpoint, err)
	}

	// The roles run on their own context so that they stop before what they use.
	rolesCtx, cancelRoles := context.WithCancel(context.Background())
	defer cancelRoles()
	type roleExit struct {
		name string
		err  error
	}
	exits := make(chan roleExit, 4)
	var roles sync.WaitGroup
	startRole := func(name string, f func(context.Context) error) {
		roles.Add(1)
		go func() {
			defer roles.Done()
			exits <- roleExit{name, f(rolesCtx)}
		}()
	}
	stopRoles = func() {
		cancelRoles()
		done := make(chan struct{})
		go func() { roles.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(o.StopTimeout):
			log.Info("Roles did not stop in time; stopping the rest anyway", "timeout", o.StopTimeout)
		}
	}
	common := run.Common{SkipNameValidation: true}

	startRole("controller", func(ctx context.Context) error {
		return run.Controller(ctx, controllerCfg, run.ControllerOptions{Common: common})
	})
	startRole("agent "+o.LocalProfile, func(ctx context.Context) error {
		return run.Agent(ctx, localCfg, run.AgentOptions{Common: common, Options: agent.Options{
			Profile: o.LocalProfile, Driver: twv1.DriverCDP, Browser: cdpBrowser,
			Identity: "tabwarden-up/" + o.LocalProfile, LeaseNamespace: Namespace,
		}})
	})

	if host != nil {
		h := host
		info.ExtensionProfile, info.ExtensionAddr = o.ExtensionProfile, h.Addr()
		startRole("agent "+o.ExtensionProfile, func(ctx context.Context) error {
			return run.Agent(ctx, extensionCfg, run.AgentOptions{Common: common, Options: agent.Options{
				Profile: o.ExtensionProfile, Driver: twv1.DriverExtension, Browser: h.Driver(),
				Identity: "tabwarden-up/" + o.ExtensionProfile, LeaseNamespace: Namespace,
			}})
		})
	}

	// Ready: the local profile is connected and the extension profile registered.
	readyCtx, cancelReady := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancelReady()
	waitErr := make(chan error, 1)
	go func() { waitErr <- waitReady(readyCtx, k8s, o.LocalProfile, info.ExtensionProfile, began) }()
	select {
	case err := <-waitErr:
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("waiting for profile %s to connect: %w", o.LocalProfile, err)
		}
	case e := <-exits:
		return roleFailed(e.name, e.err)
	}

	info.StartSeconds = time.Since(began).Seconds()
	info.Processes = started(before)
	if err := writeInfo(dir, info); err != nil {
		return err
	}
	fmt.Fprint(o.Stdout, readyText(o, repo, info))

	select {
	case <-ctx.Done():
		progress("stopping (this takes a few seconds)")
		return nil
	case e := <-exits:
		return roleFailed(e.name, e.err)
	case <-chromeExited:
		return fmt.Errorf("chromium exited (%v): its pages are gone and the pipe cannot be redialled; start tabwarden up again (the cluster is kept, and Open windows get their pages back)", chromeErr())
	}
}

type chromeResult struct {
	p   *chromium.Process
	err error
}

// launch is a Chromium being launched; wait returns the result, once known.
type launch struct {
	ch   chan chromeResult
	once sync.Once
	r    chromeResult
}

func (l *launch) wait() (*chromium.Process, error) {
	l.once.Do(func() { l.r = <-l.ch })
	return l.r.p, l.r.err
}

// started lists the descendants of this process that are not in before.
func started(before []Proc) []Proc {
	var out []Proc
	for _, p := range Descendants(os.Getpid()) {
		if !slices.Contains(before, p) {
			out = append(out, p)
		}
	}
	return out
}

func roleFailed(name string, err error) error {
	if err == nil {
		err = errors.New("stopped unexpectedly")
	}
	return fmt.Errorf("%s: %w", name, err)
}

// DesktopProfile is a profile of `tabwarden up`: it admits only SessionNamespace,
// so a session in any other namespace is refused (profile_not_allowed), and its
// url policy allows the loopback address the demo's site is served on.
func DesktopProfile(name string, driver twv1.DriverType) *twv1.BrowserProfile {
	return &twv1.BrowserProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: twv1.BrowserProfileSpec{Driver: driver, Namespaces: []string{SessionNamespace},
			// The demo's site is served on 127.0.0.1; every other private
			// destination stays refused (url_not_allowed).
			URLPolicy: &twv1.URLPolicy{AllowedHosts: []string{"127.0.0.1"}}},
	}
}

// ensureDesktopProfile creates a desktop profile before its agent starts (an
// agent registers a missing profile admitting no namespace); one that exists
// (kept from an earlier run) is left as the admin set it: up needs the profile
// to exist, and an admin's spec.namespaces or spec.urlPolicy are theirs to keep
// (`--fresh` starts again from up's defaults).
func ensureDesktopProfile(ctx context.Context, k8s client.Client, name string, driver twv1.DriverType) error {
	if err := k8s.Create(ctx, DesktopProfile(name, driver)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating BrowserProfile %s: %w", name, err)
	}
	return nil
}

// waitReady waits for profile local to be Connected by an agent of this run
// (its heartbeat Lease renewed since began: on a cluster kept from an earlier
// run, the profile's status says what the last run's agent wrote) and for
// profile ext to exist.
func waitReady(ctx context.Context, k8s client.Client, local, ext string, began time.Time) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	last := "the profile is not registered yet"
	for {
		p := &twv1.BrowserProfile{}
		err := k8s.Get(ctx, client.ObjectKey{Name: local}, p)
		if err == nil && !renewedSince(ctx, k8s, local, began) {
			err, last = errNotYet, "the agent of this run has not renewed the profile's heartbeat yet"
		}
		switch {
		case errors.Is(err, errNotYet):
		case err == nil:
			c := meta.FindStatusCondition(p.Status.Conditions, twv1.ConnectedCondition)
			if c != nil && c.Status == metav1.ConditionTrue {
				if ext == "" {
					return nil
				}
				if err := k8s.Get(ctx, client.ObjectKey{Name: ext}, &twv1.BrowserProfile{}); err == nil {
					return nil
				}
				last = "profile " + ext + " is not registered yet"
			} else if c != nil {
				last = c.Reason + ": " + c.Message
			}
		case !apierrors.IsNotFound(err):
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%s)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

var errNotYet = errors.New("not yet")

// renewedSince reports whether the heartbeat Lease of profile was renewed at or
// after since (the agent publishes the profile's status before it renews it).
func renewedSince(ctx context.Context, k8s client.Client, profile string, since time.Time) bool {
	l := &coordv1.Lease{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: controllers.LeasePrefix + profile}, l); err != nil {
		return false
	}
	return l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(since.Truncate(time.Second))
}

// wipeState removes the state a run keeps for the next (--fresh): etcd's data
// and the cdp driver's ledgers, which name pages of the last run's browser.
// The extension pairing in StateDir stays. It returns what it removed.
func wipeState(dir string) ([]string, error) {
	paths := []string{filepath.Join(dir, EtcdDataDir)}
	ledgers, err := filepath.Glob(cdp.LedgerFile(filepath.Join(dir, StateDir), "*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, p := range append(paths, ledgers...) {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return removed, err
		}
		removed = append(removed, rel(p))
	}
	return removed, nil
}

func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeInfo(dir string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, InfoFile), append(b, '\n')); err != nil {
		return err
	}
	var sb strings.Builder
	for _, p := range info.Processes {
		sb.WriteString(p.String() + "\n")
	}
	return writeFile(filepath.Join(dir, PidsFile), []byte(sb.String()))
}

// lock takes an exclusive lock on path so that two `up` never share a directory.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // best-effort cleanup
		return nil, fmt.Errorf("another `tabwarden up` is running with %s (stop it, or pass --dir for a separate one)", filepath.Dir(path))
	}
	return func() { _ = f.Close() }, nil
}

// rel shows path relative to the working directory when it lies below it.
func rel(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	r, err := filepath.Rel(wd, path)
	if err != nil || strings.HasPrefix(r, "..") {
		return path
	}
	return r
}

func readyText(o Options, repo string, info Info) string {
	var b strings.Builder
	kc := rel(info.Kubeconfig)
	samples := rel(filepath.Join(repo, "config", "samples"))
	fmt.Fprintf(&b, "%s in %.1fs\n\n", ReadyPrefix, info.StartSeconds)
	fmt.Fprintf(&b, "  API server     %s   kubeconfig %s (admin)\n", info.APIServer, kc)
	if info.UserKubeconfig != "" {
		fmt.Fprintf(&b, "  you, not admin %s   kubeconfig %s (tabwarden-edit in %s: give this one to an agent or MCP client)\n", UserName, rel(info.UserKubeconfig), SessionNamespace)
	}
	if info.DataDir != "" {
		fmt.Fprintf(&b, "  cluster state  %s, kept across runs (%s up --fresh starts empty)\n", rel(info.DataDir), o.Self)
	}
	fmt.Fprintf(&b, "  controller     running as %s (kubeconfig %s)\n", access.ControllerUser, rel(info.RoleKubeconfigs[access.ControllerUser]))
	browserDesc := "headless Chromium"
	if o.CDPEndpoint != "" {
		browserDesc = "Chrome at " + o.CDPEndpoint
	} else if o.Headful {
		browserDesc = "Chromium"
	}
	if info.DevToolsHTTP != "" {
		fmt.Fprintf(&b, "  agent          profile %-10s cdp driver, %s (DevTools %s)\n", info.LocalProfile, browserDesc, info.DevToolsHTTP)
	} else {
		fmt.Fprintf(&b, "  agent          profile %-10s cdp driver, %s over a pipe (no DevTools port); your own tab: %s\n", info.LocalProfile, browserDesc, orBlank(info.StartPage))
	}
	if info.ExtensionAddr != "" {
		fmt.Fprintf(&b, "  agent          profile %-10s extension driver, host on %s (pair your Chrome, below)\n", info.ExtensionProfile, info.ExtensionAddr)
	}
	if info.FixtureURL != "" {
		fmt.Fprintf(&b, "  fixture site   %s   (the incident: %s/contacts, whose addresses open compose popups)\n", info.FixtureURL, info.FixtureURL)
	}
	if info.MetricsURL != "" {
		fmt.Fprintf(&b, "  metrics        %s   (docs/metrics.md)\n", info.MetricsURL)
	}
	fmt.Fprintf(&b, "  identities     each agent runs as tabwarden:agent:<profile> (kubeconfigs %s/agent-*.kubeconfig);\n", rel(filepath.Dir(info.Kubeconfig)))
	fmt.Fprintf(&b, "                 the admission policies of config/admission bind admin too\n")
	fmt.Fprintf(&b, "\nSessions in namespace %s may use these profiles (spec.namespaces); others are refused.\n", SessionNamespace)
	if info.FixtureURL != "" {
		fmt.Fprintf(&b, "\nWatch the incident, step by step, in another terminal:\n\n  %s demo --dir %s\n", o.Self, rel(filepath.Dir(info.Kubeconfig)))
	}
	fmt.Fprintf(&b, "\nNext, in another terminal:\n\n")
	fmt.Fprintf(&b, "  export KUBECONFIG=%s\n", info.Kubeconfig)
	fmt.Fprintf(&b, "  kubectl apply -f %s/session.yaml -f %s/window-open.yaml\n", samples, samples)
	fmt.Fprintf(&b, "  kubectl get browsersessions,browserwindows          # the window turns Open with a tab id\n")
	fmt.Fprintf(&b, "  kubectl apply -f %s/action.yaml                     # observe the form, type a name, save\n", samples)
	fmt.Fprintf(&b, "  kubectl get browserprofiles                         # profiles, their drivers and connections\n")
	fmt.Fprintf(&b, "  kubectl delete browsersession tax-form              # ends the session: its pages close\n")
	if info.ExtensionAddr != "" {
		_, port, _ := strings.Cut(info.ExtensionAddr, ":")
		fmt.Fprintf(&b, "\nUse your own Chrome as profile %s:\n\n", info.ExtensionProfile)
		fmt.Fprintf(&b, "  1. open chrome://extensions, turn on Developer mode, Load unpacked: %s\n", filepath.Join(repo, "extension"))
		fmt.Fprintf(&b, "  2. run: %s pair --state-dir %s   (prints a code, valid 5 minutes)\n", o.Self, rel(info.StateDir))
		fmt.Fprintf(&b, "  3. click the tabwarden toolbar icon, enter the code and port %s, press Pair\n", port)
		fmt.Fprintf(&b, "  4. kubectl get browserprofile %s   (Connected: True)\n", info.ExtensionProfile)
	}
	fmt.Fprintf(&b, "\nCtrl-C stops everything tabwarden up started.\n")
	return b.String()
}

// serveLoopback serves h on addr, which must be a loopback address, and returns
// its base URL and a function that stops it.
func serveLoopback(addr string, h http.Handler) (string, func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", nil, fmt.Errorf("%s is not a loopback address: up serves only this machine (e.g. 127.0.0.1:0)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// metricsHandler serves controller-runtime's registry, where every role of this
// process registers its metrics.
func metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	return mux
}

// ReadInfo reads Dir/up.json of a running tabwarden up. It fails with a
// message that says how to start one when none runs there.
func ReadInfo(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if errors.Is(err, os.ErrNotExist) {
		return info, fmt.Errorf("no tabwarden up runs with --dir %s (no %s): start one with `tabwarden up --dir %s`", dir, InfoFile, dir)
	}
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Join(dir, InfoFile), err)
	}
	if info.PID <= 0 || syscall.Kill(info.PID, 0) != nil {
		return info, fmt.Errorf("the tabwarden up of %s (pid %d) is not running any more: start it again with `tabwarden up --dir %s`", filepath.Join(dir, InfoFile), info.PID, dir)
	}
	return info, nil
}

func orBlank(page string) string {
	if page == "" {
		return "about:blank"
	}
	return page
}
