package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
	"github.com/tabwarden/tabwarden/internal/local/up"
	"github.com/tabwarden/tabwarden/internal/run"
)

// errFakeDriver is the refusal of --driver fake.
var errFakeDriver = errors.New("the fake driver is for tests: it is the in-memory browser tabwarden's Go tests drive in-process, " +
	"not a browser; use --driver cdp (a Chrome reached over DevTools) or --driver extension (your Chrome, through the tabwarden extension)")

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runController(name string, args []string, _, stderr io.Writer) error {
	fs := newFlagSet(name, "Run the controller role: session registration, spawn gating, status, lifecycle and\n"+
		"finalizer cleanup. Run it as a Deployment with leader election (config/manager).", stderr)
	bindKubeconfig(fs)
	var (
		o  run.ControllerOptions
		lf logFlags
	)
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", run.ControllerMetricsAddr, `address of the Prometheus metrics endpoint (loopback by default; on the pod network set :8443 with --metrics-secure; docs/metrics.md); "0" disables it`)
	bindMetricsSecure(fs, &o.Common)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" disables them`)
	fs.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader so that only one controller replica reconciles at a time")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"namespace of the leader election Lease (default: the pod's namespace in a cluster; required outside one when --leader-elect)")
	fs.StringVar(&o.LeaseNamespace, "lease-namespace", "tabwarden-system", "namespace of the agents' heartbeat Leases (the agents' --lease-namespace)")
	fs.DurationVar(&o.AgentGrace, "agent-grace-period", 40*time.Second, "how long a profile's heartbeat Lease may go unrenewed before its agent is lost (Connected=Unknown)")
	fs.IntVar(&o.Workers, "workers", 1, "objects each of the controller's reconcilers works on at once (placement stays serialized)")
	lf.bind(fs, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := lf.setup(stderr)
	if err != nil {
		return err
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes API to talk to: %w (pass --kubeconfig or set KUBECONFIG)", err)
	}
	ctx, stop := signalContext()
	defer stop()
	log.Info("Starting the controller", "version", fullVersion(), "apiServer", cfg.Host, "leaderElection", o.LeaderElection, "softMemoryLimit", run.SoftMemoryLimit())
	if err := run.Controller(ctx, cfg, o); err != nil {
		if strings.Contains(err.Error(), "unable to find leader election namespace") {
			return fmt.Errorf("%w (outside a cluster pass --leader-election-namespace tabwarden-system, or --leader-elect=false)", err)
		}
		return err
	}
	return nil
}

// defaultStateDir is $XDG_STATE_HOME/tabwarden, else ~/.local/state/tabwarden.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tabwarden")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "tabwarden")
	}
	return filepath.Join(".tabwarden", "state")
}

func runAgent(name string, args []string, _, stderr io.Writer) error {
	fs := newFlagSet(name, "Run an agent for one browser profile, like a kubelet for one browser: it opens the windows\n"+
		"sessions want, adopts every page their pages spawn, and closes pages when sessions end.\n\n"+
		"  --driver cdp        a Chrome reached over the DevTools protocol (--cdp-endpoint)\n"+
		"  --driver extension  your own Chrome, through the tabwarden extension (then run `tabwarden pair`)", stderr)
	bindKubeconfig(fs)
	var (
		o             run.AgentOptions
		lf            logFlags
		driver        string
		cdpEndpoint   string
		extensionAddr string
		stateDir      string
		extensionID   string
	)
	fs.StringVar(&o.Profile, "profile", "", "name of the BrowserProfile this agent serves (required)")
	fs.StringVar(&driver, "driver", "cdp", "how to talk to the browser: cdp or extension")
	fs.StringVar(&cdpEndpoint, "cdp-endpoint", "", "DevTools endpoint of the Chrome to drive (cdp): ws://host:port/devtools/browser/<id>, http://host:port, or unix:/path/to.sock, the socket of a `tabwarden cdp-bridge` (Chromium with no DevTools port)")
	fs.StringVar(&extensionAddr, "extension-addr", extension.DefaultAddr, "loopback address the extension connects to (extension)")
	fs.StringVar(&stateDir, "state-dir", defaultStateDir(), "directory of the agent's state: the ownership ledger of the pages it opened, adopted or bound (cdp), the extension pairing and the socket tabwarden pair asks for codes (extension)")
	fs.StringVar(&extensionID, "extension-id", "", "the only Chrome extension id that may pair and connect (extension; default $"+extension.ExtensionIDEnv+", else tabwarden's pinned id "+extension.DefaultExtensionID+")")
	fs.StringVar(&o.LeaseNamespace, "lease-namespace", up.Namespace, `namespace of the profile's heartbeat Lease; "" disables the heartbeat`)
	fs.StringVar(&o.Identity, "identity", "", "name of this agent in the profile's status (default agent-<profile>)")
	fs.DurationVar(&o.Heartbeat, "heartbeat", 10*time.Second, "how often the Lease is renewed and the profile published")
	fs.IntVar(&o.WindowWorkers, "window-workers", 16, "BrowserWindows the agent reconciles at once")
	var blockPorts []int
	fs.Func("block-port", "a `port` no page of the browser may reach, on any host, besides the DevTools endpoint's own (cdp; repeatable): the real DevTools port behind a forwarded endpoint, or tabwarden's own endpoints", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("want a port number from 1 to 65535, for example --block-port=9222")
		}
		blockPorts = append(blockPorts, n)
		return nil
	})
	fs.DurationVar(&o.OpenSettle, "open-settle", 0, "how long an opened page's first status write may wait for its title, so that open, url and title are one write (0: at once; the title follows within --observe-interval)")
	fs.DurationVar(&o.SpawnStatusSettle, "spawn-status-settle", time.Second, "the same for an adopted page, whose create already announced it (negative: at once)")
	fs.DurationVar(&o.ObserveInterval, "observe-interval", time.Second, "least time between two status writes of a window that change only its page's url, title or window (negative: every change)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", run.AgentMetricsAddr, `address of the Prometheus metrics endpoint (loopback by default; in a pod set :8443 with --metrics-secure for Prometheus to scrape; docs/metrics.md); "0" disables it`)
	bindMetricsSecure(fs, &o.Common)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" disables them`)
	lf.bind(fs, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	if o.Profile == "" {
		return errors.New("--profile is required: name the BrowserProfile this agent serves, for example --profile local")
	}
	switch twv1.DriverType(driver) {
	case twv1.DriverCDP, twv1.DriverExtension:
	case twv1.DriverFake:
		return errFakeDriver
	default:
		return fmt.Errorf("--driver %q: want cdp or extension", driver)
	}
	log, err := lf.setup(stderr)
	if err != nil {
		return err
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes API to talk to: %w (pass --kubeconfig or set KUBECONFIG)", err)
	}
	ctx, stop := signalContext()
	defer stop()

	var b browser.Browser
	switch twv1.DriverType(driver) {
	case twv1.DriverCDP:
		if cdpEndpoint == "" {
			return errors.New("--cdp-endpoint is required with --driver cdp, for example http://127.0.0.1:9222 " +
				"(a Chrome started with --remote-debugging-port=9222)")
		}
		if _, unix, err := wire.UnixPath(cdpEndpoint); unix {
			if err != nil {
				return fmt.Errorf("--cdp-endpoint: %w", err)
			}
		} else if !strings.HasPrefix(cdpEndpoint, "ws://") && !strings.HasPrefix(cdpEndpoint, "wss://") &&
			!strings.HasPrefix(cdpEndpoint, "http://") && !strings.HasPrefix(cdpEndpoint, "https://") {
			return fmt.Errorf("--cdp-endpoint %q: want ws://host:port/devtools/browser/<id>, http://host:port or unix:/path/to.sock (tabwarden cdp-bridge)", cdpEndpoint)
		}
		cb, err := dialCDP(ctx, log, cdpEndpoint, cdp.LedgerFile(stateDir, o.Profile), blockPorts)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		defer cb.Shutdown()
		b = cb
	case twv1.DriverExtension:
		host, err := extension.New(extension.Options{Addr: extensionAddr, StateDir: stateDir, ExtensionID: extensionID, Logger: log.WithName("extension")})
		if err != nil {
			return err
		}
		if err := host.Start(ctx); err != nil {
			return err
		}
		defer func() { _ = host.Close() }() // best-effort cleanup
		log.Info("Extension host ready; pair your Chrome with `tabwarden pair --state-dir "+stateDir+"`",
			"addr", host.Addr(), "paired", host.Paired())
		b = host.Driver()
	case twv1.DriverFake:
		return errFakeDriver
	default:
		return fmt.Errorf("--driver %q: want cdp or extension", driver)
	}
	o.Driver, o.Browser = twv1.DriverType(driver), b
	log.Info("Starting the agent", "version", fullVersion(), "profile", o.Profile, "driver", driver, "apiServer", cfg.Host, "softMemoryLimit", run.SoftMemoryLimit())
	return run.Agent(ctx, cfg, o)
}

// dialCDP connects to Chrome, retrying with backoff until it answers or ctx
// ends: in a pod the browser container may start after the agent.
// Every request of the browser's pages to the endpoint's port, or to one of
// blockPorts, fails (cdp.Options.BlockPorts).
func dialCDP(ctx context.Context, log logr.Logger, endpoint, ledgerPath string, blockPorts []int) (*cdp.Browser, error) {
	backoff := 500 * time.Millisecond
	for {
		b, err := cdp.New(ctx, endpoint, cdp.Options{Pool: true, Logger: log.WithName("cdp"), LedgerPath: ledgerPath, BlockPorts: blockPorts})
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Info("Chrome DevTools not reachable yet; retrying", "endpoint", endpoint, "error", err.Error(), "in", backoff)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// bindMetricsSecure binds the flags of metrics served beyond loopback.
func bindMetricsSecure(fs *pflag.FlagSet, c *run.Common) {
	fs.BoolVar(&c.MetricsSecure, "metrics-secure", false, "serve the metrics over HTTPS to callers the API server authenticates and authorizes (get /metrics: ClusterRole tabwarden-metrics-reader); set it whenever --metrics-bind-address is not loopback")
	fs.StringVar(&c.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for --metrics-secure (default: a self-signed certificate)")
}
