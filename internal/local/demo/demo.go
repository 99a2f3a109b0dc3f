// Package demo plays the incident tabwarden exists for against a running
// `tabwarden up`, step by step, printing at each step what a user would run
// (kubectl commands) and what they would see (kubectl get output, what Chromium
// shows): a session opens the contacts page of the fixture site, a click on an
// address spawns a compose popup, tabwarden adopts it into the session, refuses
// the session's next step until it is acknowledged, and closes everything the
// session owned when it finishes.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tabwarden/tabwarden/internal/local/up"
	"github.com/tabwarden/tabwarden/internal/run"
)

// Names the demo uses, in tabwarden up's session namespace.
const (
	SessionName = "demo-taxes"
	Thread      = "demo-agent-thread-1"
	Purpose     = "file the 2026 tax return: look up the accountant's address"
	// ContactsWindow and FormWindow are the session's Open windows.
	ContactsWindow = "contacts"
	FormWindow     = "form"
	// ClickAction is the BrowserAction that clicks an address; ActionName the
	// one the session is refused.
	ClickAction = "demo-click-alice"
	ActionName  = "demo-click-bob"
	// UserPage is the user's own page (a path of the fixture site): the tab
	// tabwarden up's Chromium opens at launch, before any agent connects.
	UserPage = "/"
)

// Options configure Run.
type Options struct {
	// Dir is tabwarden up's --dir (default .tabwarden).
	Dir string
	// Start starts a tabwarden up in this process when none runs in Dir, and
	// stops it at the end.
	Start bool
	// Up configures the tabwarden up that Start starts (Dir is set from Dir).
	Up up.Options
	// Out receives the demo; Progress (default Out) what Start prints while
	// tabwarden up starts.
	Out, Progress io.Writer
	// Pause is how long to wait after each step, for a human to read it.
	Pause time.Duration
	// StepTimeout bounds each wait (default 90 s).
	StepTimeout time.Duration
}

// demo is one run.
type demo struct {
	o    Options
	out  io.Writer
	info up.Info
	k8s  client.Client
	cfg  *rest.Config
	ns   string
	step int
	// started: the tabwarden up was started for this demo.
	started bool
}

// Run plays the incident. It fails with a message that says what to do when no
// tabwarden up runs (and Start is false) or a step does not happen in time.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	info, started, stop, err := findUp(ctx, o)
	if err != nil {
		return err
	}
	defer stop()
	d, err := newDemo(o, info, started)
	if err != nil {
		return err
	}
	return d.play(ctx)
}

// defaults fills in the zero fields of o.
func (o *Options) defaults() {
	if o.Dir == "" {
		o.Dir = up.DefaultDir
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Progress == nil {
		o.Progress = o.Out
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = 90 * time.Second
	}
}

// findUp reads the info of the tabwarden up that runs in Options.Dir or, when
// none does and Options.Start is set, starts one (started) until stop is
// called; stop does nothing when the demo started none.
func findUp(ctx context.Context, o Options) (info up.Info, started bool, stop func(), err error) {
	info, err = up.ReadInfo(o.Dir)
	if err != nil && o.Start {
		stop, info, err = startUp(ctx, o)
		if err != nil {
			return up.Info{}, false, nil, err
		}
		return info, true, stop, nil
	}
	if err != nil {
		return up.Info{}, false, nil, fmt.Errorf("%w\n(or run `tabwarden demo --start`, which starts one for the demo and stops it after)", err)
	}
	return info, false, func() {}, nil
}

// newDemo connects to the API server of the tabwarden up of info, as its
// admin, to play the demo in its session namespace.
func newDemo(o Options, info up.Info, started bool) (*demo, error) {
	if info.FixtureURL == "" {
		return nil, fmt.Errorf("the tabwarden up of %s serves no fixture site (started with --fixture-addr off, or by an older tabwarden): restart it without --fixture-addr off", o.Dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the admin kubeconfig of tabwarden up: %w", err)
	}
	k8s, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return nil, err
	}
	return &demo{o: o, out: o.Out, info: info, k8s: k8s, cfg: cfg, ns: up.SessionNamespace, started: started}, nil
}

// startUp runs a tabwarden up in this process until the returned stop is called.
func startUp(ctx context.Context, o Options) (func(), up.Info, error) {
	uo := o.Up
	uo.Dir = o.Dir
	if uo.Stdout == nil {
		uo.Stdout = io.Discard
	}
	if uo.Stderr == nil {
		uo.Stderr = o.Progress
	}
	fmt.Fprintf(o.Progress, "tabwarden demo: no tabwarden up runs with --dir %s; starting one for the demo (stopped at the end)\n", o.Dir)
	upCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- up.Run(upCtx, uo) }()
	stop := func() {
		cancel()
		<-done
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			stop()
			return nil, up.Info{}, ctx.Err()
		case err := <-done:
			cancel()
			if err == nil {
				err = errors.New("it stopped before it was ready")
			}
			return nil, up.Info{}, fmt.Errorf("starting tabwarden up: %w", err)
		case <-tick.C:
			if info, err := up.ReadInfo(o.Dir); err == nil {
				return stop, info, nil
			}
		}
	}
}

// play plays the demo: the introduction, what an earlier demo left removed,
// the user's own tab, then the incident's steps (steps.go), pausing after
// each, and the conclusion.
func (d *demo) play(ctx context.Context) error {
	d.intro()
	if err := d.reset(ctx); err != nil {
		return err
	}
	if err := d.userTab(ctx); err != nil {
		return err
	}
	for _, step := range []func(context.Context) error{
		d.startSession, d.openContacts, d.clickContact, d.seeAdoption, d.seeRefusal, d.acknowledge, d.finish, d.metrics,
	} {
		if err := step(ctx); err != nil {
			return err
		}
		if err := d.pause(ctx); err != nil {
			return err
		}
	}
	d.outro()
	return nil
}

// intro says what the demo shows, and where: the API server, the browser and
// the fixture site.
func (d *demo) intro() {
	fmt.Fprintf(d.out, "tabwarden demo: the incident, step by step.\n\n")
	fmt.Fprintf(d.out, "An AI agent fills in a form in a real Chrome. On a contacts page, each click on an e-mail address\n")
	fmt.Fprintf(d.out, "opens a standalone compose popup, as Gmail does. Without tabwarden those windows belong to no one\n")
	fmt.Fprintf(d.out, "and stay open. Watch tabwarden adopt, hold, acknowledge and clean up.\n\n")
	fmt.Fprintf(d.out, "  API server    %s (run the commands below with: export KUBECONFIG=%s)\n", d.info.APIServer, up.Rel(d.info.Kubeconfig))
	if d.info.DevToolsHTTP != "" {
		fmt.Fprintf(d.out, "  browser       profile %s: the Chrome at %s, driven by tabwarden's agent\n", d.info.LocalProfile, d.info.DevToolsHTTP)
	} else {
		fmt.Fprintf(d.out, "  browser       profile %s: Chromium (pid %d) driven by tabwarden's agent over a pipe: no DevTools port\n", d.info.LocalProfile, d.info.ChromiumPID)
	}
	fmt.Fprintf(d.out, "  fixture site  %s/contacts\n", d.info.FixtureURL)
}

// pause waits Options.Pause after a step, for a human to read it.
func (d *demo) pause(ctx context.Context) error {
	if d.o.Pause <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d.o.Pause):
		return nil
	}
}

// outro says what is left: nothing the session owned, the user's page
// untouched, and what to do next.
func (d *demo) outro() {
	fmt.Fprintf(d.out, "\nDone. Nothing the session owned is left open; the user's own page (%s) was never touched.\n", UserPage)
	if !d.started {
		fmt.Fprintf(d.out, "Remove the finished session with: kubectl delete browsersession %s\n", SessionName)
	} else {
		fmt.Fprintf(d.out, "The tabwarden up started for the demo stops now; run `tabwarden up` and `tabwarden demo` to keep it running and look around.\n")
	}
}
