package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/clients/mcpserver"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

type config struct {
	dir     string
	nodeDir string
	pool    bool
	// stdio runs tabwarden's MCP server as an agent does, `tabwarden mcp` over
	// stdio (built for the run); false serves it in process.
	stdio     bool
	tools     []string
	tasks     []task
	loadStart string
	// admin is the control plane's administrator (tabwarden only); nil: run starts one.
	admin *rest.Config
}

const (
	benchNS   = "bench-agents"
	benchUser = "bench-agent"
	profile   = "bench-agents"
)

// row is one task run by one tool.
type row struct {
	tool, task string
	done       bool
	detail     string // the fixture's record
	reason     string // why not completed (the script's error)
	finishErr  string
	stats      stats
	pagesLeft  int
	leftURLs   []string
	userTab    string // "untouched", or what happened to it
}

// runAll runs every tool on every task.
func runAll(ctx context.Context, cfg config) ([]row, error) {
	site, err := fixture.ServeAgents()
	if err != nil {
		return nil, err
	}
	defer site.Close()
	var rows []row
	for _, tool := range cfg.tools {
		r, err := runTool(ctx, cfg, site, tool)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", tool, err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// runTool runs the tasks through one tool on a fresh Chromium whose first tab
// is the user's.
func runTool(ctx context.Context, cfg config, site *fixture.AgentSite, tool string) ([]row, error) {
	userURL := site.URL("/agents/user")
	logf("%s: launching headless Chromium", tool)
	chrome, err := chromiumtest.LaunchContext(ctx, chromium.Options{StartURL: userURL})
	if err != nil {
		return nil, err
	}
	defer func() { _ = chrome.Close() }()
	var user target
	if err := poll(30*time.Second, func() (bool, error) {
		ts, err := pageTargets(ctx, chrome.HTTPURL)
		for _, t := range ts {
			if t.URL == userURL {
				user = t
				return true, nil
			}
		}
		return false, err
	}); err != nil {
		return nil, fmt.Errorf("the user's tab never loaded: %w", err)
	}
	d, stop, err := startDriver(ctx, cfg, tool, chrome)
	if err != nil {
		return nil, err
	}
	defer stop()
	m := meterOf(d)
	var rows []row
	for _, t := range cfg.tasks {
		logf("%s: task %s (%s)", tool, t.id, t.name)
		site.Reset()
		m.mu.Lock()
		m.sample, m.samples = tool+"-"+t.id, 0
		m.mu.Unlock()
		before, err := pageTargets(ctx, chrome.HTTPURL)
		if err != nil {
			return rows, err
		}
		if _, err := evaluate(ctx, user, "window.__userEvents = []; true"); err != nil {
			return rows, fmt.Errorf("the user's tab: %w", err)
		}
		tctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		r := row{tool: d.Name(), task: t.id}
		err = d.Begin(tctx, t.id, site.URL(t.path))
		if err == nil {
			err = t.run(tctx, d, site)
		}
		if err != nil {
			r.reason = err.Error()
		}
		time.Sleep(500 * time.Millisecond) // let the last request the page made land
		if ferr := d.Finish(tctx); ferr != nil {
			r.finishErr = ferr.Error()
		}
		cancel()
		r.done, r.detail = t.done(site)
		r.stats = summarize(m.take())
		time.Sleep(time.Second) // closes in flight land
		after, err := pageTargets(ctx, chrome.HTTPURL)
		if err != nil {
			return rows, err
		}
		for id, p := range after {
			if _, ok := before[id]; !ok {
				r.pagesLeft++
				r.leftURLs = append(r.leftURLs, p.URL)
			}
		}
		sort.Strings(r.leftURLs)
		r.userTab = userTabState(ctx, user, after)
		logf("%s: task %s: completed=%v (%s) %s calls=%d pages left=%d user tab: %s", tool, t.id, r.done, r.detail, r.reason, r.stats.calls, r.pagesLeft, r.userTab)
		rows = append(rows, r)
	}
	return rows, nil
}

// userTabState says what happened to the user's tab: gone, navigated, or the
// focus and visibility events its page recorded.
func userTabState(ctx context.Context, user target, after map[string]target) string {
	now, ok := after[user.ID]
	if !ok {
		return "closed"
	}
	if now.URL != user.URL {
		return "navigated to " + now.URL
	}
	v, err := evaluate(ctx, now, "window.__userEvents")
	if err != nil {
		return "unreadable: " + err.Error()
	}
	var evs []string
	_ = json.Unmarshal(v, &evs)
	if len(evs) == 0 {
		return "untouched"
	}
	return strings.Join(evs, ", ")
}

func meterOf(d Driver) *meter {
	switch d := d.(type) {
	case *tabwarden:
		return d.m
	case *devtools:
		return d.m
	case *playwright:
		return d.m
	}
	panic("unknown driver")
}

func poll(timeout time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := f()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("timed out")
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startDriver starts tool's MCP server attached to chrome and connects the
// scripted agent's client to it.
func startDriver(ctx context.Context, cfg config, tool string, chrome *chromium.Process) (Driver, func(), error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "tabwarden-bench-agent", Version: "1"}, nil)
	switch tool {
	case "tabwarden":
		return startTabwarden(ctx, cfg, chrome, client)
	case "chrome-devtools-mcp":
		cmd := exec.Command(filepath.Join(cfg.nodeDir, "node_modules", ".bin", "chrome-devtools-mcp"),
			"--browserUrl", chrome.HTTPURL, "--no-performance-crux", "--no-usage-statistics")
		cs, err := startPeer(ctx, cfg, cmd, client)
		if err != nil {
			return nil, nil, err
		}
		d := &devtools{m: &meter{cs: cs, observe: map[string]bool{"take_snapshot": true}}}
		return d, d.Close, nil
	case "playwright-mcp":
		cmd := exec.Command(filepath.Join(cfg.nodeDir, "node_modules", ".bin", "playwright-mcp"), "--cdp-endpoint", chrome.HTTPURL)
		cs, err := startPeer(ctx, cfg, cmd, client)
		if err != nil {
			return nil, nil, err
		}
		d := &playwright{m: &meter{cs: cs, observe: map[string]bool{"browser_snapshot": true}}}
		return d, d.Close, nil
	}
	return nil, nil, fmt.Errorf("unknown tool %q (tabwarden, chrome-devtools-mcp, playwright-mcp)", tool)
}

// startPeer runs a peer's MCP server over stdio, in a directory of its own
// (Playwright MCP writes snapshots of navigations there), with its stderr in
// the run's directory.
func startPeer(ctx context.Context, cfg config, cmd *exec.Cmd, client *mcp.Client) (*mcp.ClientSession, error) {
	if _, err := os.Stat(cmd.Path); err != nil {
		return nil, fmt.Errorf("%w: run `make bench-agents` (npm ci in test/benchagents/node) first", err)
	}
	wd, err := os.MkdirTemp(cfg.dir, filepath.Base(cmd.Path)+"-")
	if err != nil {
		return nil, err
	}
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS=1", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	if cmd.Stderr, err = os.Create(filepath.Join(cfg.dir, filepath.Base(cmd.Path)+".stderr")); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
}

// startTabwarden starts what tabwarden's MCP server needs (the control plane
// unless cfg has one, the controller, a CDP agent attached to chrome's DevTools
// port) and runs the MCP server (cfg.stdio: `tabwarden mcp`; else in process)
// as a user allowed in benchNS.
func startTabwarden(ctx context.Context, cfg config, chrome *chromium.Process, mc *mcp.Client) (Driver, func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (Driver, func(), error) { stopAll(); return nil, nil, err }
	admin := cfg.admin
	if admin == nil {
		logf("tabwarden: starting kube-apiserver and etcd")
		env, a, err := testenv.Start()
		if err != nil {
			return fail(err)
		}
		stops = append(stops, func() { _ = env.Stop() })
		admin = a
	}
	k8s, err := client.New(admin, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return fail(err)
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}); client.IgnoreAlreadyExists(err) != nil {
		return fail(err)
	}
	prof := &twv1.BrowserProfile{
		ObjectMeta: metav1.ObjectMeta{Name: profile},
		Spec: twv1.BrowserProfileSpec{Driver: twv1.DriverCDP, Pool: cfg.pool, NamespaceSelector: &metav1.LabelSelector{},
			URLPolicy: &twv1.URLPolicy{AllowPrivateNetworks: true}}, // the fixture site is on loopback
	}
	if err := k8s.Create(ctx, prof); client.IgnoreAlreadyExists(err) != nil {
		return fail(err)
	}
	ctlCfg, err := testenv.ControllerConfig(admin)
	if err != nil {
		return fail(err)
	}
	agtCfg, err := testenv.AgentConfig(admin, profile)
	if err != nil {
		return fail(err)
	}
	drv, err := cdp.New(ctx, chrome.WebSocketURL, cdp.Options{Pool: cfg.pool, LedgerPath: cdp.LedgerFile(cfg.dir, profile)})
	if err != nil {
		return fail(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := run.Controller(rctx, ctlCfg, run.ControllerOptions{Common: run.Common{SkipNameValidation: true}}); err != nil && rctx.Err() == nil {
			logf("controller stopped: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := run.Agent(rctx, agtCfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
			Profile: profile, Driver: twv1.DriverCDP, Browser: drv, Heartbeat: time.Second,
		}}); err != nil && rctx.Err() == nil {
			logf("agent stopped: %v", err)
		}
	}()
	stops = append(stops, func() { cancel(); wg.Wait(); drv.Shutdown() })
	if err := poll(60*time.Second, func() (bool, error) {
		p := &twv1.BrowserProfile{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: profile}, p); err != nil {
			return false, err
		}
		return apimeta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition), nil
	}); err != nil {
		return fail(fmt.Errorf("the agent never connected its profile: %w", err))
	}
	// The agent's user: the shipped tabwarden-edit role in benchNS, and the profiles readable.
	if err := access.AllowUser(ctx, k8s, benchNS, benchUser); err != nil {
		return fail(err)
	}
	if err := access.Apply(ctx, k8s, &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "profile-viewer-" + benchUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: access.ProfileViewerRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: benchUser}},
	}); err != nil {
		return fail(err)
	}
	userCfg, err := testenv.UserConfig(admin, benchUser)
	if err != nil {
		return fail(err)
	}
	uc, err := client.New(userCfg, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return fail(err)
	}
	if err := poll(30*time.Second, func() (bool, error) {
		return uc.List(ctx, &twv1.BrowserSessionList{}, client.InNamespace(benchNS)) == nil, nil
	}); err != nil {
		return fail(fmt.Errorf("RBAC never let %s in: %w", benchUser, err))
	}
	if cfg.stdio {
		// As an agent runs it: the built binary over stdio, with the user's kubeconfig.
		bin := filepath.Join(cfg.dir, "tabwarden")
		logf("tabwarden: building %s", bin)
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tabwarden")
		build.Dir, build.Stderr = testenv.Root(), os.Stderr
		if err := build.Run(); err != nil {
			return fail(fmt.Errorf("go build ./cmd/tabwarden: %w", err))
		}
		kc := clientcmdapi.NewConfig()
		kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: userCfg.Host, CertificateAuthorityData: userCfg.CAData}
		kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: userCfg.CertData, ClientKeyData: userCfg.KeyData, Token: userCfg.BearerToken}
		kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "user", Namespace: benchNS}
		kc.CurrentContext = "envtest"
		path := filepath.Join(cfg.dir, "user.kubeconfig")
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			return fail(err)
		}
		cs, err := startPeer(ctx, cfg, exec.Command(bin, "mcp", "--kubeconfig", path, "--timeout", "90s"), mc)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, func() { _ = cs.Close() })
		d := &tabwarden{m: &meter{cs: cs, observe: map[string]bool{"observe": true}}, profile: profile}
		return d, stopAll, nil
	}
	sctx, scancel := context.WithCancel(ctx)
	srv := mcpserver.New(&ops.Ops{Client: uc, Namespace: benchNS}, mcpserver.Options{Version: "bench", Timeout: 90 * time.Second, Hold: sctx})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(sctx, st, nil)
	if err != nil {
		scancel()
		return fail(err)
	}
	cs, err := mc.Connect(sctx, ct, nil)
	if err != nil {
		scancel()
		return fail(err)
	}
	stops = append(stops, func() { _ = cs.Close(); _ = ss.Wait(); scancel() })
	d := &tabwarden{m: &meter{cs: cs, observe: map[string]bool{"observe": true}}, profile: profile}
	return d, stopAll, nil
}
