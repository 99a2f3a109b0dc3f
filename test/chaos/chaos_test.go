// Package chaos runs session lifecycles on real Chromium while killing things:
// the controller and the agent run as separate `tabwarden controller` and
// `tabwarden agent` processes (built from cmd/tabwarden, each with the
// kubeconfig of its own identity, against an envtest control plane), and at
// random points the test kills one of them with SIGKILL, or crashes Chromium
// (SIGKILL of its process group), then starts it again. At the end: no page of
// tabwarden's left in Chromium, no user tab closed (other than by a crash),
// every session gone.
//
//	go test ./test/chaos                                     # short: 10 lifecycles, 3 faults
//	go test ./test/chaos -timeout 0 -args -lifecycles 200    # make chaos
package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

var (
	flagLifecycles = flag.Int("lifecycles", 10, "session lifecycles (make chaos: 200)")
	flagFaultRate  = flag.Float64("fault-rate", 0, "probability of a fault per lifecycle (0: exactly one of each kind in the run)")
	flagSeed       = flag.Int64("seed", 1, "seed of the fault schedule")
)

const profile = "chaos"

var (
	admin *rest.Config
	k8s   client.Client
	site  *fixture.Server
	bin   string // the tabwarden binary
	dir   string
)

func TestMain(m *testing.M) {
	// The run launches its own Chromium (and crashes it); it fails, never skips,
	// without one: it is only meaningful on a real browser.
	if err := chromiumtest.Require(); err != nil {
		os.Exit(chromiumtest.Fail(err))
	}
	testenv.Main(m, testenv.Options{Logs: &testenv.Logs{Quiet: zapcore.DPanicLevel, Debug: zapcore.InfoLevel}, Dir: "tabwarden-chaos-", Binary: true, Site: true,
		Setup: func(e *testenv.Env) error {
			admin, k8s, site, dir, bin = e.Admin, e.Client, e.Site, e.Dir, e.Bin
			return nil
		}})
}

// kubeconfig writes a kubeconfig file for a rest.Config with a client certificate.
func kubeconfig(t *testing.T, name string, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// proc is a tabwarden role running as a separate process.
type proc struct {
	name string
	args []string
	log  *os.File
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(bin, p.args...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(p.done)
}

// kill is kill -9.
func (p *proc) kill() {
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		p.cmd = nil
	}
}

// alive reports whether the process still runs (it never exits by itself).
func (p *proc) alive() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// rig is everything the run kills and restarts.
type rig struct {
	t     *testing.T
	mu    sync.Mutex
	ctl   *proc
	agt   *proc
	port  int
	udd   string
	chr   *chromium.Process
	hand  *cdp.Browser
	epoch int // Chromium starts
	// userTabs are the user's tabs of the current Chromium: a crash takes them,
	// nothing else may.
	userTabs []string
	faults   map[string]int
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }() // only to learn a free port
	return l.Addr().(*net.TCPAddr).Port
}

func (r *rig) endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", r.port) }

// startChromium launches Chromium on the rig's port and profile directory and
// has the user open a window of two tabs of their own.
func (r *rig) startChromium() {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	r.chr, err = chromium.Launch(ctx, chromium.Options{UserDataDir: r.udd, ExtraArgs: []string{fmt.Sprintf("--remote-debugging-port=%d", r.port)}})
	if err != nil {
		t.Fatalf("launch chromium: %v", err)
	}
	r.epoch++
	if r.hand, err = cdp.New(ctx, r.endpoint(), cdp.Options{}); err != nil {
		t.Fatalf("the user's hand: %v", err)
	}
	first, err := r.hand.Open(ctx, browser.OpenRequest{Key: "user", URL: site.Path(fmt.Sprintf("/quiet?user=%d-0", r.epoch)), NewWindow: true})
	if err != nil {
		t.Fatalf("the user opens a window: %v", err)
	}
	r.userTabs = []string{first.ID}
	_ = r.hand.Release(ctx, browser.ReleaseRequest{Key: "user", ID: first.ID})
}

func (r *rig) crashChromium() {
	r.hand.Shutdown()
	r.chr.Crash()
	r.userTabs = nil
}

// pages is what Chromium itself lists (its HTTP endpoint): id → url.
func (r *rig) pages() (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := r.hand.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range s.Pages {
		out[p.ID] = p.URL
	}
	return out, nil
}

type fault string

const (
	killController fault = "kill -9 controller"
	killAgent      fault = "kill -9 agent"
	crashChromium  fault = "crash Chromium"
)

// inject runs one fault now and brings the victim back after a short while.
func (r *rig) inject(f fault, back time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[string(f)]++
	r.t.Logf("fault: %s (back in %v)", f, back)
	switch f {
	case killController:
		r.ctl.kill()
		time.Sleep(back)
		r.ctl.start(r.t)
	case killAgent:
		r.agt.kill()
		time.Sleep(back)
		r.agt.start(r.t)
	case crashChromium:
		r.crashChromium()
		time.Sleep(back)
		r.startChromium()
	}
}

func (r *rig) faultCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.faults {
		out[k] = v
	}
	return out
}

func (r *rig) checkAlive() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range []*proc{r.ctl, r.agt} {
		if !p.alive() {
			r.t.Fatalf("%s exited by itself; its log: %s", p.name, p.log.Name())
		}
	}
}

func eventually(what string, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v: %w", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestChaos runs -lifecycles session lifecycles with faults at random points.
func TestChaos(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(*flagSeed), 0xc4a05))
	r := &rig{t: t, port: freePort(t), udd: t.TempDir(), faults: map[string]int{}}
	r.startChromium()
	t.Cleanup(func() { r.hand.Shutdown(); _ = r.chr.Close() })

	ctx := context.Background()
	if err := testenv.EnsureProfile(ctx, k8s, profile, twv1.DriverCDP); err != nil {
		t.Fatal(err)
	}
	logf := func(name string) *os.File {
		f, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctlKC := kubeconfig(t, "controller", testenv.MustConfig(t)(testenv.ControllerConfig(admin)))
	agtKC := kubeconfig(t, "agent", testenv.MustConfig(t)(testenv.AgentConfig(admin, profile)))
	r.ctl = &proc{name: "controller", log: logf("controller"), args: []string{"controller", "--kubeconfig", ctlKC,
		"--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}}
	r.agt = &proc{name: "agent", log: logf("agent"), args: []string{"agent", "--kubeconfig", agtKC, "--profile", profile,
		"--driver", "cdp", "--cdp-endpoint", r.endpoint(), "--state-dir", filepath.Join(dir, "agent-state"),
		"--lease-namespace", access.SystemNamespace, "--heartbeat", "1s", "--health-probe-bind-address", "0"}}
	r.ctl.start(t)
	r.agt.start(t)
	t.Cleanup(func() { r.ctl.kill(); r.agt.kill() })

	ns := testenv.NewNamespace(t, k8s, "chaos-")
	user := k8s // the user is an administrator of the namespace; the roles run under their own identities

	// The fault schedule: with no rate, one fault of each kind at a random
	// lifecycle; else each lifecycle draws one with the rate.
	n := *flagLifecycles
	schedule := map[int]fault{}
	if *flagFaultRate == 0 {
		for _, f := range []fault{killController, killAgent, crashChromium} {
			for {
				i := rng.IntN(n)
				if _, ok := schedule[i]; !ok || len(schedule) >= n {
					schedule[i] = f
					break
				}
			}
		}
	} else {
		kinds := []fault{killController, killAgent, crashChromium}
		for i := range n {
			if rng.Float64() < *flagFaultRate {
				schedule[i] = kinds[rng.IntN(len(kinds))]
			}
		}
	}

	var problems []string
	start := time.Now()
	for i := range n {
		var faultDone chan struct{}
		if f, ok := schedule[i]; ok {
			// At a random point of the lifecycle: the fault runs concurrently with it.
			delay := time.Duration(rng.IntN(3000)) * time.Millisecond
			back := time.Duration(200+rng.IntN(1500)) * time.Millisecond
			faultDone = make(chan struct{})
			go func() {
				defer close(faultDone)
				time.Sleep(delay)
				r.inject(f, back)
			}()
		}
		if err := r.lifecycle(ctx, user, ns, i, rng); err != nil {
			problems = append(problems, fmt.Sprintf("lifecycle %d: %v", i, err))
			t.Errorf("lifecycle %d: %v", i, err)
		}
		if faultDone != nil {
			<-faultDone
		}
		r.checkAlive()
		if err := r.check(ns, i); err != nil {
			problems = append(problems, fmt.Sprintf("after lifecycle %d: %v", i, err))
			t.Errorf("after lifecycle %d: %v", i, err)
		}
		if i%10 == 9 {
			t.Logf("%d lifecycles, %v, faults %v, %d problems", i+1, time.Since(start).Round(time.Second), r.faultCounts(), len(problems))
		}
	}
	total := 0
	for _, c := range r.faultCounts() {
		total += c
	}
	t.Logf("%d lifecycles in %v, %d faults injected %v, %d problems; logs: %s, %s",
		n, time.Since(start).Round(time.Second), total, r.faults, len(problems), r.ctl.log.Name(), r.agt.log.Name())
}

// lifecycle is one session: two pages opened, a popup spawned from one of them
// (adopted, acknowledged), and the session deleted; it waits until the session
// is gone. Pages may vanish with a Chromium crash meanwhile; nothing else.
func (r *rig) lifecycle(ctx context.Context, user client.Client, ns string, i int, rng *rand.Rand) error {
	name := fmt.Sprintf("s-%d", i)
	s := &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       twv1.BrowserSessionSpec{Thread: "chaos", Purpose: "survive faults", ProfileName: profile},
	}
	if err := user.Create(ctx, s); err != nil {
		return err
	}
	var ws []*twv1.BrowserWindow
	for j := range 2 {
		w := testenv.OpenWindow(ns, fmt.Sprintf("%s-w%d", name, j), name, site.Path(fmt.Sprintf("/spawner?work=%d-%d", i, j)))
		if err := user.Create(ctx, w); err != nil {
			return err
		}
		ws = append(ws, w)
	}
	// The pages open (or are gone: Chromium crashed under them).
	var tab string
	err := eventually("pages open", 90*time.Second, func() error {
		for _, w := range ws {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			switch w.Status.Phase {
			case twv1.WindowOpen:
				tab = w.Status.TabID
			case twv1.WindowGone:
			default:
				return fmt.Errorf("%s is %q", w.Name, w.Status.Phase)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if tab != "" && rng.IntN(2) == 0 {
		r.spawn(ctx, ns, name, tab)
	}
	if err := user.Delete(ctx, s); err != nil {
		return err
	}
	return eventually("session gone", 120*time.Second, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); !apierrors.IsNotFound(err) {
			return fmt.Errorf("session %s still there (phase %s): %v", name, s.Status.Phase, err)
		}
		return nil
	})
}

// spawn has the user's hand click the page's popup button, waits until the
// popup is adopted and acknowledges it Temporary. A crash in between may take
// the page; that is not a failure.
func (r *rig) spawn(ctx context.Context, ns, session, tab string) {
	r.mu.Lock()
	hand := r.hand
	r.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	key := "hand-" + tab
	if err := hand.Bind(cctx, browser.BindRequest{Key: key, ID: tab}); err != nil {
		return
	}
	defer func() { _ = hand.Release(context.Background(), browser.ReleaseRequest{Key: key, ID: tab}) }()
	if _, err := hand.Act(cctx, browser.ActRequest{Key: key, Owner: key, Page: tab, ClickSelector: "#open-popup"}); err != nil {
		return
	}
	_ = eventually("popup adopted", 60*time.Second, func() error {
		var l twv1.BrowserWindowList
		if err := k8s.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{twv1.SessionLabel: session, twv1.SourceLabel: "spawned"}); err != nil {
			return err
		}
		for _, w := range l.Items {
			if w.Spec.Disposition == "" {
				_ = k8s.Patch(ctx, &w, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"Temporary"}}`)))
				return nil
			}
		}
		return fmt.Errorf("no spawned window")
	})
}

// check: no page of tabwarden's left in Chromium (every lifecycle ended with its
// session gone), the user's tabs of this Chromium all there, no window left.
func (r *rig) check(ns string, i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps map[string]string
	err := eventually("Chromium's page list", 30*time.Second, func() error {
		var err error
		ps, err = r.pages()
		if err != nil {
			return err
		}
		for id, u := range ps {
			if strings.Contains(u, "/spawner") {
				return fmt.Errorf("page %s (%s) leaked", id, u)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range r.userTabs {
		if _, ok := ps[id]; !ok {
			return fmt.Errorf("the user's tab %s was closed", id)
		}
	}
	var l twv1.BrowserWindowList
	if err := k8s.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		return err
	}
	if len(l.Items) > 0 {
		return fmt.Errorf("%d windows left, first %s (%s)", len(l.Items), l.Items[0].Name, l.Items[0].Status.Phase)
	}
	return nil
}
