package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

// DebugEnv, when set, makes the tests' logs verbose (Logs.Debug).
const DebugEnv = "TABWARDEN_TEST_DEBUG"

// Logs are the levels of controller-runtime's logger (zap's development
// logger) in a test package: Quiet normally, Debug with TABWARDEN_TEST_DEBUG set.
type Logs struct{ Quiet, Debug zapcore.Level }

// QuietLogs logs errors only, and everything from info up when debugging.
var QuietLogs = &Logs{Quiet: zapcore.ErrorLevel, Debug: zapcore.InfoLevel}

// Options say what a test package shares across its tests (Main).
type Options struct {
	// Logs sets controller-runtime's logger (Env.Logger); nil leaves it unset.
	Logs *Logs
	// Scheme is Env.Client's (default run.Scheme()).
	Scheme *runtime.Scheme
	// Dir makes a temporary directory whose name starts with Dir (Env.Dir),
	// removed when the tests are done; empty makes none.
	Dir string
	// Binary builds cmd/tabwarden into Env.Dir (Env.Bin); it needs Dir.
	Binary bool
	// Site serves the fixture site (Env.Site).
	Site bool
	// Chromium launches one real Chromium with these options (Env.Chrome); nil
	// launches none. A package that asks for it fails, never skips, without it.
	Chromium *chromium.Options
	// Setup runs after all of that and before the tests: it keeps what the
	// package's tests use and may add clean-ups with Env.Defer.
	Setup func(*Env) error
}

// Env is what Main set up for a test package: the control plane of Start (with
// the shipped CRDs, RBAC and admission policies) and what Options asked for.
type Env struct {
	// Plane is the API server and etcd.
	Plane *envtest.Environment
	// Admin is an administrator's config (system:masters) and Client a client with it.
	Admin  *rest.Config
	Client client.Client
	// Logger is controller-runtime's logger (Options.Logs), else a discarding one.
	Logger logr.Logger
	Dir    string
	Bin    string
	Site   *fixture.Server
	Chrome *chromium.Process

	cleanups []func()
}

// Defer runs f when the tests are done, before what was set up earlier is torn down.
func (e *Env) Defer(f func()) { e.cleanups = append(e.cleanups, f) }

func (e *Env) teardown() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

// Main is a test package's TestMain: it sets up what o asks for, runs the
// tests, tears everything down and exits with the tests' code (1, with the
// reason on stderr, when the set-up failed).
func Main(m *testing.M, o Options) {
	if !flag.Parsed() {
		flag.Parse()
	}
	e := &Env{Logger: logr.Discard()}
	code := e.setup(o)
	if code == 0 {
		code = m.Run()
	}
	e.teardown()
	os.Exit(code)
}

func (e *Env) setup(o Options) int {
	if o.Logs != nil {
		lvl := o.Logs.Quiet
		if os.Getenv(DebugEnv) != "" {
			lvl = o.Logs.Debug
		}
		zl, _ := zap.NewDevelopment(zap.IncreaseLevel(lvl))
		e.Logger = zapr.NewLogger(zl)
		ctrl.SetLogger(e.Logger)
	}
	if o.Chromium != nil {
		if err := chromiumtest.Require(); err != nil {
			return chromiumtest.Fail(err)
		}
	}
	if o.Dir != "" {
		dir, err := os.MkdirTemp("", o.Dir)
		if err != nil {
			return chromiumtest.Fail(err)
		}
		e.Dir = dir
		e.Defer(func() { _ = os.RemoveAll(dir) }) // best-effort cleanup
	}
	if o.Binary {
		e.Bin = filepath.Join(e.Dir, "tabwarden")
		build := exec.Command("go", "build", "-o", e.Bin, "./cmd/tabwarden")
		build.Dir = Root()
		if out, err := build.CombinedOutput(); err != nil {
			return chromiumtest.Fail(fmt.Errorf("go build ./cmd/tabwarden: %w\n%s", err, out))
		}
	}
	plane, admin, err := Start()
	if err != nil {
		return chromiumtest.Fail(err)
	}
	e.Plane, e.Admin = plane, admin
	e.Defer(func() { _ = plane.Stop() }) // best-effort cleanup
	scheme := o.Scheme
	if scheme == nil {
		scheme = run.Scheme()
	}
	if e.Client, err = client.New(admin, client.Options{Scheme: scheme}); err != nil {
		return chromiumtest.Fail(err)
	}
	if o.Site {
		e.Site = fixture.Serve()
		e.Defer(e.Site.Close)
	}
	if o.Chromium != nil {
		if e.Chrome, err = chromiumtest.Launch(*o.Chromium); err != nil {
			return chromiumtest.Fail(err)
		}
		e.Defer(func() { _ = e.Chrome.Close() }) // best-effort cleanup
	}
	if o.Setup != nil {
		if err := o.Setup(e); err != nil {
			return chromiumtest.Fail(err)
		}
	}
	return 0
}
