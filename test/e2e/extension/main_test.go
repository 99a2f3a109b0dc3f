// Package extension_test runs tabwarden end to end in a real headless Chromium
// with the MV3 extension loaded unpacked (--load-extension): the agent drives the
// browser only through the extension host; the test uses its own DevTools
// connection as the user's (and the agent's) hand: to open the extension popup and
// pair, to click links with real input events, to list what Chrome really shows,
// and to stop the extension's service worker.
//
// Run: KUBEBUILDER_ASSETS="$(hack/envtest.sh)" go test ./test/e2e/extension/ -count=1 -v
package extension_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// profile is the BrowserProfile the extension's agent serves: the user's Chrome.
const profile = "my-chrome"

var (
	cfg      *rest.Config
	k8s      client.Client
	fx       *fixture.Server
	proc     *chromium.Process
	devtools *cdpClient
	extID    string // the unpacked extension's id
	// otherBuild: TABWARDEN_E2E_EXTENSION loaded another build than extension/.
	otherBuild bool
	host       *extension.Host
	stateDir   string
	logger     logr.Logger
)

// TestMain shares one control plane, fixture site, Chromium with the extension
// loaded, and extension host across the tests. Never skipped: this suite is the
// only proof that the extension path works in a real browser.
func TestMain(m *testing.M) {
	// TABWARDEN_E2E_EXTENSION loads another unpacked build (e.g. an older one, to
	// reproduce a bug); default: the repository's extension/.
	extDir := filepath.Join(testenv.Root(), "extension")
	if d := os.Getenv("TABWARDEN_E2E_EXTENSION"); d != "" {
		extDir = d
		otherBuild = true
	}
	opts := chromium.Options{Extensions: []string{extDir}, StartTimeout: 60 * time.Second}
	if os.Getenv(testenv.DebugEnv) != "" {
		opts.Stderr = os.Stderr
	}
	testenv.Main(m, testenv.Options{Logs: testenv.QuietLogs, Site: true, Chromium: &opts, Dir: "twext-", Setup: setup})
}

// setup connects the test's DevTools hand, finds the extension and starts the
// agent's extension host, as `tabwarden agent --driver extension` runs it (on a
// free port instead of 47321, so parallel suites do not collide; the user types
// the port into the popup).
func setup(e *testenv.Env) error {
	cfg, k8s, fx, proc, stateDir, logger = e.Admin, e.Client, e.Site, e.Chrome, e.Dir, e.Logger
	fail := func(format string, args ...any) error { return fmt.Errorf("e2e/extension: "+format, args...) }
	ctx := context.Background()
	var err error
	if devtools, err = dialCDP(ctx, proc.WebSocketURL); err != nil {
		return fail("DevTools: %v", err)
	}
	e.Defer(devtools.close)
	sw, err := waitWorker(ctx, 30*time.Second)
	if err != nil {
		return fail("the extension's service worker never showed up (is --load-extension honoured?): %v", err)
	}
	extID = strings.Split(strings.TrimPrefix(sw.URL, "chrome-extension://"), "/")[0]

	// The host pins the extension's id: by default the one extension/'s manifest key
	// gives it (TestExtensionHasThePinnedID checks Chrome agrees); another build is
	// pinned by its own id, as a developer would with TABWARDEN_EXTENSION_ID.
	hostOpts := extension.Options{Addr: "127.0.0.1:0", StateDir: stateDir, Logger: logger}
	if otherBuild {
		hostOpts.ExtensionID = extID
	}
	if host, err = extension.New(hostOpts); err != nil {
		return fail("extension host: %v", err)
	}
	hostCtx, stopHost := context.WithCancel(ctx)
	e.Defer(stopHost)
	if err := host.Start(hostCtx); err != nil {
		return fail("extension host: %v", err)
	}
	e.Defer(printTimings) // first thing after the tests
	return nil
}

// --- the extension's service worker -----------------------------------------------

// worker returns the extension's running service worker target, if any.
func worker(ctx context.Context) (wire.TargetInfo, bool, error) {
	ts, err := devtools.targets(ctx)
	if err != nil {
		return wire.TargetInfo{}, false, err
	}
	for _, t := range ts {
		if t.Type == "service_worker" && strings.HasPrefix(t.URL, "chrome-extension://") && strings.HasSuffix(t.URL, "/background.js") {
			return t, true, nil
		}
	}
	return wire.TargetInfo{}, false, nil
}

func waitWorker(ctx context.Context, timeout time.Duration) (wire.TargetInfo, error) {
	deadline := time.Now().Add(timeout)
	for {
		t, ok, err := worker(ctx)
		if ok {
			return t, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("no chrome-extension:// service_worker target")
			}
			return wire.TargetInfo{}, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// withServiceWorkerDomain runs f on a DevTools session with the ServiceWorker
// domain enabled. That domain lives on page targets: the session is attached to an
// existing web page (attaching changes nothing the page or the extension can see;
// creating or closing a tab instead would wake the extension's worker).
//
// versions returns every ServiceWorker.workerVersionUpdated entry seen so far, in
// order: a worker may stop and start again between two polls, so callers look for
// a transition in the history, not at the latest state only.
func withServiceWorkerDomain(ctx context.Context, f func(session string, versions func() []swVersion) error) error {
	ps, err := devtools.pages(ctx)
	if err != nil {
		return err
	}
	var target string
	for _, p := range ps {
		if !strings.HasPrefix(p.URL, "chrome-extension://") && !strings.HasPrefix(p.URL, "devtools://") {
			target = p.TargetID
			break
		}
	}
	if target == "" {
		return errors.New("no page target to attach the ServiceWorker domain to")
	}
	sess, err := devtools.attach(ctx, target)
	if err != nil {
		return err
	}
	defer devtools.detach(ctx, sess)
	var mu sync.Mutex
	var history []swVersion
	devtools.listen(func(e wire.Event) {
		if e.Session != sess {
			return
		}
		if u, ok := wire.ParseEvent(e).(*wire.WorkerVersionUpdated); ok {
			mu.Lock()
			history = append(history, u.Versions...)
			mu.Unlock()
		}
	})
	if err := devtools.do(ctx, sess, wire.ServiceWorkerEnable{}); err != nil {
		return err
	}
	defer func() { _ = devtools.do(ctx, sess, wire.ServiceWorkerDisable{}) }() // the session detaches next
	return f(sess, func() []swVersion {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(history)
	})
}

type swVersion = wire.ServiceWorkerVersion

// --- timings -----------------------------------------------------------------------

var (
	timingsMu sync.Mutex
	timings   []string
)

func record(t *testing.T, what string, d time.Duration) {
	t.Helper()
	t.Logf("TIMING %s: %v", what, d.Round(time.Millisecond))
	timingsMu.Lock()
	timings = append(timings, fmt.Sprintf("%-40s %v", what, d.Round(time.Millisecond)))
	timingsMu.Unlock()
}

func printTimings() {
	timingsMu.Lock()
	defer timingsMu.Unlock()
	if len(timings) == 0 {
		return
	}
	fmt.Println("--- timings (real Chromium, extension driver)")
	for _, l := range timings {
		fmt.Println("   ", l)
	}
}

// --- roles -------------------------------------------------------------------------

func startRoles(t *testing.T) {
	t.Helper()
	testenv.StartController(t, cfg)
	testenv.StartAgent(t, cfg, agent.Options{Profile: profile, Driver: twv1.DriverExtension, Browser: host.Driver(), LeaseNamespace: "default"})
}

// --- objects -----------------------------------------------------------------------

func newNamespace(t *testing.T) string { return testenv.NewNamespace(t, k8s, "tw-ext-") }

func session(ns, name string) *twv1.BrowserSession {
	return &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: twv1.BrowserSessionSpec{
			Thread: "thread-42", Purpose: "file the 2026 tax return form", ProfileName: profile,
			Placement: twv1.PlacementWindow,
		},
	}
}

func openWindow(ns, name, sess, url string) *twv1.BrowserWindow {
	return testenv.OpenWindow(ns, name, sess, url)
}

func get[T client.Object](t *testing.T, obj T) T { t.Helper(); return testenv.Get(t, k8s, obj) }

func ack(t *testing.T, w *twv1.BrowserWindow, d twv1.Disposition) {
	t.Helper()
	testenv.Ack(t, k8s, w, d)
}

// spawnedOf returns the session's Spawned windows whose opener is the given tab.
func spawnedOf(ns, sess, opener string) []twv1.BrowserWindow {
	var list twv1.BrowserWindowList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{twv1.SessionLabel: sess, twv1.SourceLabel: "spawned"}); err != nil {
		return nil
	}
	var out []twv1.BrowserWindow
	for _, w := range list.Items {
		if w.Spec.Spawn != nil && w.Spec.Spawn.OpenerTabID == opener {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b twv1.BrowserWindow) int { return strings.Compare(a.Spec.Spawn.TabID, b.Spec.Spawn.TabID) })
	return out
}

func windowsOf(ns, sess string) []twv1.BrowserWindow {
	var list twv1.BrowserWindowList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{twv1.SessionLabel: sess}); err != nil {
		return nil
	}
	return list.Items
}
