package main

import (
	"io"
	"os"
	"strings"

	"github.com/tabwarden/tabwarden/internal/browser/extension"
	"github.com/tabwarden/tabwarden/internal/local/up"
)

func runUp(name string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(name, "Run all of tabwarden on this machine: an embedded kube-apiserver and etcd (built from source\n"+
		"by hack/envtest.sh), the controller, a headless Chromium driven by an agent for profile `local`, and\n"+
		"the extension host (profile `my-chrome`) your own Chrome can pair with. Writes an admin kubeconfig\n"+
		"to <dir>/kubeconfig and prints what to run next. Ctrl-C stops everything it started.\n"+
		"The cluster's state (sessions, windows, profiles; etcd's data in <dir>/etcd-data) is kept across\n"+
		"runs, as kind and minikube keep theirs; --fresh starts with an empty cluster. The browser is new each\n"+
		"run: an Open window of a live session opens again at its last url, spawned and bound ones end Gone.", stderr)
	var (
		o  up.Options
		lf logFlags
	)
	fs.StringVar(&o.Dir, "dir", up.DefaultDir, "directory for the kubeconfig, the extension pairing (state/) and the run's pids and up.json")
	fs.StringVar(&o.Repo, "repo", "", "the tabwarden checkout with hack/, crds/, extension/ (default: found above the working directory)")
	fs.StringVar(&o.Assets, "assets", "", "directory with kube-apiserver and etcd (default $KUBEBUILDER_ASSETS, else hack/envtest.sh)")
	fs.StringVar(&o.CDPEndpoint, "cdp-endpoint", "", "drive this Chrome as profile local instead of launching Chromium (http://host:port or ws://…)")
	fs.BoolVar(&o.Headful, "headful", false, "launch Chromium with a window (needs a display)")
	fs.StringVar(&o.ExtensionAddr, "extension-addr", extension.DefaultAddr, `loopback address of the extension host; "off" disables the extension agent`)
	fs.StringVar(&o.LocalProfile, "profile", up.DefaultLocalProfile, "name of the profile of the Chromium agent")
	fs.StringVar(&o.ExtensionProfile, "extension-profile", up.DefaultExtensionProfile, "name of the profile of the extension agent")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", 0, "how long to wait for the agents once the control plane runs (default 3m)")
	fs.StringVar(&o.FixtureAddr, "fixture-addr", up.DefaultFixtureAddr, `loopback address of the fixture site config/samples and the demo use; "off" disables it`)
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "127.0.0.1:0", `loopback address of the roles' Prometheus metrics (docs/metrics.md); "off" disables it`)
	fs.BoolVar(&o.Fresh, "fresh", false, "start with an empty cluster: remove the state kept from the last run (etcd's data, the cdp ledger) first; the pairing stays")
	lf.bind(fs, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	// The roles log warnings and errors only: the ready banner and what to
	// run next are what a user reads (--log-level info shows the rest).
	lf.quietByDefault(fs)
	log, err := lf.setup(stderr)
	if err != nil {
		return err
	}
	o.Stdout, o.Stderr, o.Logger = stdout, stderr, log
	o.Self = "tabwarden"
	if strings.Contains(os.Args[0], "/") {
		o.Self = os.Args[0]
	}
	ctx, stop := signalContext()
	defer stop()
	return up.Run(ctx, o)
}
