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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
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
	info, err := up.ReadInfo(o.Dir)
	started := false
	if err != nil && o.Start {
		stop, upInfo, serr := startUp(ctx, o)
		if serr != nil {
			return serr
		}
		defer stop()
		info, err, started = upInfo, nil, true
	}
	if err != nil {
		return fmt.Errorf("%w\n(or run `tabwarden demo --start`, which starts one for the demo and stops it after)", err)
	}
	if info.FixtureURL == "" {
		return fmt.Errorf("the tabwarden up of %s serves no fixture site (started with --fixture-addr off, or by an older tabwarden): restart it without --fixture-addr off", o.Dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		return fmt.Errorf("the admin kubeconfig of tabwarden up: %w", err)
	}
	k8s, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return err
	}
	d := &demo{o: o, out: o.Out, info: info, k8s: k8s, cfg: cfg, ns: up.SessionNamespace, started: started}
	return d.play(ctx)
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

func (d *demo) play(ctx context.Context) error {
	fmt.Fprintf(d.out, "tabwarden demo: the incident, step by step.\n\n")
	fmt.Fprintf(d.out, "An AI agent fills in a form in a real Chrome. On a contacts page, each click on an e-mail address\n")
	fmt.Fprintf(d.out, "opens a standalone compose popup, as Gmail does. Without tabwarden those windows belong to no one\n")
	fmt.Fprintf(d.out, "and stay open. Watch tabwarden adopt, hold, acknowledge and clean up.\n\n")
	fmt.Fprintf(d.out, "  API server    %s (run the commands below with: export KUBECONFIG=%s)\n", d.info.APIServer, rel(d.info.Kubeconfig))
	if d.info.DevToolsHTTP != "" {
		fmt.Fprintf(d.out, "  browser       profile %s: the Chrome at %s, driven by tabwarden's agent\n", d.info.LocalProfile, d.info.DevToolsHTTP)
	} else {
		fmt.Fprintf(d.out, "  browser       profile %s: Chromium (pid %d) driven by tabwarden's agent over a pipe: no DevTools port\n", d.info.LocalProfile, d.info.ChromiumPID)
	}
	fmt.Fprintf(d.out, "  fixture site  %s/contacts\n", d.info.FixtureURL)
	if err := d.reset(ctx); err != nil {
		return err
	}
	if err := d.userTab(ctx); err != nil {
		return err
	}
	for _, f := range []func(context.Context) error{
		d.startSession, d.openContacts, d.clickContact, d.seeAdoption, d.seeRefusal, d.acknowledge, d.finish, d.metrics,
	} {
		if err := f(ctx); err != nil {
			return err
		}
		if d.o.Pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d.o.Pause):
			}
		}
	}
	fmt.Fprintf(d.out, "\nDone. Nothing the session owned is left open; the user's own page (%s) was never touched.\n", UserPage)
	if !d.started {
		fmt.Fprintf(d.out, "Remove the finished session with: kubectl delete browsersession %s\n", SessionName)
	} else {
		fmt.Fprintf(d.out, "The tabwarden up started for the demo stops now; run `tabwarden up` and `tabwarden demo` to keep it running and look around.\n")
	}
	return nil
}

// userTab points at the user's own page: the tab Chromium opened at launch.
// The demo has no hand of its own on the browser (tabwarden drives it over a
// pipe, with no DevTools port), so it shows that tab rather than opening one.
func (d *demo) userTab(ctx context.Context) error {
	if d.info.StartPage == "" {
		fmt.Fprintf(d.out, "\n# The browser's own tabs (this up drives a Chrome you started) are the user's: tabwarden never closes or touches them.\n")
		return nil
	}
	if err := d.waitFor(ctx, "the user's own tab ("+d.info.StartPage+") to show", func() (bool, error) {
		pages, err := d.pageList(ctx)
		for _, p := range pages {
			if p.Path == UserPage {
				return true, nil
			}
		}
		return false, err
	}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n# The user has a page of their own open: %s (Chromium opened it at launch). tabwarden will never close or touch it.\n", d.info.StartPage)
	return nil
}

// ---- the steps ----------------------------------------------------------------------

func (d *demo) startSession(ctx context.Context) error {
	d.header("An agent starts a session: who drives, and why",
		"Every page an agent opens belongs to a BrowserSession that names its thread and purpose.")
	s := &twv1.BrowserSession{
		TypeMeta:   metav1.TypeMeta{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserSession"},
		ObjectMeta: metav1.ObjectMeta{Name: SessionName, Namespace: d.ns},
		Spec: twv1.BrowserSessionSpec{
			Thread: Thread, Purpose: Purpose, ProfileName: d.info.LocalProfile, Placement: twv1.PlacementWindow,
		},
	}
	d.apply(s)
	if err := d.k8s.Create(ctx, s); err != nil {
		return fmt.Errorf("creating the session: %w", err)
	}
	d.run(fmt.Sprintf("kubectl wait --for=condition=Ready browsersession/%s", SessionName))
	if err := d.waitFor(ctx, "the session to be Ready", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && apimeta.IsStatusConditionTrue(s.Status.Conditions, twv1.ReadyCondition), err
	}); err != nil {
		return err
	}
	d.say("browsersession.tabwarden.dev/%s condition met", SessionName)
	return d.getSessions(ctx)
}

func (d *demo) openContacts(ctx context.Context) error {
	d.header("The agent opens the contacts page",
		"An Open BrowserWindow: the agent asked for it, so the session owns it. It opens unfocused, in a window of the session's own.")
	w := d.openWindow(ContactsWindow, d.info.FixtureURL+"/contacts")
	d.apply(w)
	if err := d.k8s.Create(ctx, w); err != nil {
		return fmt.Errorf("creating the contacts window: %w", err)
	}
	d.run(fmt.Sprintf("kubectl wait --for=condition=Ready browserwindow/%s", ContactsWindow))
	if err := d.waitFor(ctx, "the contacts page to open", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(w), w)
		return err == nil && w.Status.Phase == twv1.WindowOpen && w.Status.Title == fixture.TitleContacts, err
	}); err != nil {
		return err
	}
	d.say("browserwindow.tabwarden.dev/%s condition met", ContactsWindow)
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	return d.browserPages(ctx)
}

func (d *demo) clickContact(ctx context.Context) error {
	d.header("The agent clicks an e-mail address",
		"Agents drive pages through BrowserActions. This click makes the page call window.open: Chrome opens a standalone compose popup nobody asked tabwarden for.")
	act, err := d.act(ctx, ClickAction, fixture.Contacts[0])
	if err != nil {
		return err
	}
	if act.Status.Phase != twv1.ActionSucceeded {
		return fmt.Errorf("the click on %s did not succeed: %s %s: %s", fixture.Contacts[0], act.Status.Phase, act.Status.Reason, act.Status.Message)
	}
	d.run(fmt.Sprintf(`kubectl get browseraction %s -o jsonpath='{.status.phase}: {.status.spawned[*].name}'`, ClickAction))
	names := make([]string, 0, len(act.Status.Spawned))
	for _, sw := range act.Status.Spawned {
		names = append(names, sw.Name)
	}
	d.say("%s: %s", act.Status.Phase, strings.Join(names, " "))
	return nil
}

// act creates a BrowserAction of the session clicking text on the contacts
// page, prints it, and waits for its result.
func (d *demo) act(ctx context.Context, name, text string) (*twv1.BrowserAction, error) {
	act := &twv1.BrowserAction{
		TypeMeta:   metav1.TypeMeta{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserAction"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns},
		Spec: twv1.BrowserActionSpec{
			SessionRef: twv1.SessionReference{Name: SessionName}, Thread: Thread,
			WindowRef: twv1.ActionWindowReference{Name: ContactsWindow},
			Steps:     []twv1.ActionStep{{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: text}}},
		},
	}
	d.apply(act)
	if err := d.k8s.Create(ctx, act); err != nil {
		return nil, fmt.Errorf("creating the action %s: %w", name, err)
	}
	if err := d.waitFor(ctx, "the action "+name+" to finish", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(act), act)
		return err == nil && act.Status.CompletionTime != nil, err
	}); err != nil {
		return nil, err
	}
	return act, nil
}

func (d *demo) seeAdoption(ctx context.Context) error {
	d.header("tabwarden adopts the compose window into the session",
		"Chrome reports the popup with the contacts page as its opener; the agent makes it a Spawned BrowserWindow of the session, with no disposition yet: unacknowledged.")
	var compose *twv1.BrowserWindow
	if err := d.waitFor(ctx, "the compose popup to be adopted", func() (bool, error) {
		var err error
		compose, err = d.spawned(ctx)
		return compose != nil && compose.Status.Phase == twv1.WindowOpen, err
	}); err != nil {
		return err
	}
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	if err := d.browserPages(ctx); err != nil {
		return err
	}
	s := &twv1.BrowserSession{}
	if err := d.waitFor(ctx, "the session to count the spawn", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: SessionName}, s)
		// Both pages live and the spawn counted: the session's status is
		// coalesced, so its counts can arrive in two writes.
		return err == nil && s.Status.Windows.Unacknowledged == 1 && s.Status.Windows.Live == 2, err
	}); err != nil {
		return err
	}
	return d.getSessions(ctx)
}

func (d *demo) seeRefusal(ctx context.Context) error {
	d.header("The session is refused new work until the spawn is acknowledged",
		"The agent tries to click another address and to open the form: both wait. A guard never says a bare no: the reason and the corrected call come with it.")
	compose, err := d.spawned(ctx)
	if err != nil || compose == nil {
		return fmt.Errorf("the compose window: %v", err)
	}
	act, err := d.act(ctx, ActionName, fixture.Contacts[1])
	if err != nil {
		return err
	}
	if err := d.get(ctx, "browseractions", ActionName, ""); err != nil {
		return err
	}
	d.run(fmt.Sprintf("kubectl get browseraction %s -o jsonpath='{.status.hint}'", ActionName))
	d.say("%s", act.Status.Hint)

	form := d.openWindow(FormWindow, d.info.FixtureURL+"/quiet?form=taxes")
	d.apply(form)
	if err := d.k8s.Create(ctx, form); err != nil {
		return fmt.Errorf("creating the form window: %w", err)
	}
	var held *metav1.Condition
	if err := d.waitFor(ctx, "the form window to be held", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(form), form)
		held = apimeta.FindStatusCondition(form.Status.Conditions, twv1.OpenedCondition)
		return err == nil && held != nil && held.Reason == twv1.ReasonUnacknowledgedSpawns, err
	}); err != nil {
		return err
	}
	d.run(fmt.Sprintf(`kubectl get browserwindow %s -o jsonpath='{.status.conditions[?(@.type=="Opened")].reason}: {.status.conditions[?(@.type=="Opened")].message}'`, FormWindow))
	d.say("%s: %s", held.Reason, held.Message)
	return d.getWindows(ctx)
}

func (d *demo) acknowledge(ctx context.Context) error {
	d.header("Acknowledge: keep it, or close it",
		"The user (or the agent, following the hint) says what the compose window is: Close closes it now, Keep makes it a deliverable that outlives the session.")
	compose, err := d.spawned(ctx)
	if err != nil || compose == nil {
		return fmt.Errorf("the compose window: %v", err)
	}
	d.run(hint.Ack(d.ns, compose.Name, twv1.DispositionClose))
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"Close"}}`))
	if err := d.k8s.Patch(ctx, compose, patch); err != nil {
		return fmt.Errorf("acknowledging %s: %w", compose.Name, err)
	}
	d.say("browserwindow.tabwarden.dev/%s patched", compose.Name)
	form := &twv1.BrowserWindow{}
	if err := d.waitFor(ctx, "the compose window to close and the form to open", func() (bool, error) {
		if err := d.k8s.Get(ctx, client.ObjectKeyFromObject(compose), compose); err != nil {
			return false, err
		}
		err := d.k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: FormWindow}, form)
		return err == nil && compose.Status.Phase == twv1.WindowClosed && form.Status.Phase == twv1.WindowOpen, err
	}); err != nil {
		return err
	}
	d.note("the compose popup is closed, and the held form opened")
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	if err := d.browserPages(ctx); err != nil {
		return err
	}
	return d.getSessions(ctx)
}

func (d *demo) finish(ctx context.Context) error {
	d.header("The agent finishes its session",
		"Every page the session owns closes (Keep pages would be released, bound user tabs detached). The user's own pages are never touched.")
	owned, err := d.ownedPaths(ctx)
	if err != nil {
		return err
	}
	s := &twv1.BrowserSession{}
	s.Namespace, s.Name = d.ns, SessionName
	d.run(fmt.Sprintf(`kubectl patch browsersession %s --type=merge -p '{"spec":{"state":"Finished"}}'`, SessionName))
	if err := d.k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`))); err != nil {
		return fmt.Errorf("finishing the session: %w", err)
	}
	d.say("browsersession.tabwarden.dev/%s patched", SessionName)
	d.run(fmt.Sprintf(`kubectl wait --for=jsonpath='{.status.phase}'=Finished browsersession/%s`, SessionName))
	if err := d.waitFor(ctx, "the session to finish and clean up", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && s.Status.Phase == twv1.SessionPhaseFinished, err
	}); err != nil {
		return err
	}
	d.say("browsersession.tabwarden.dev/%s condition met", SessionName)
	if err := d.getSessions(ctx); err != nil {
		return err
	}
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	// The site hears a page go when the browser drops its stream, a moment
	// after the page closed.
	if err := d.waitFor(ctx, "the session's pages to leave the browser", func() (bool, error) {
		pages, err := d.pageList(ctx)
		for _, p := range pages {
			if owned[p.Path] && p.Path != UserPage {
				return false, err
			}
		}
		return err == nil, err
	}); err != nil {
		return err
	}
	return d.browserPages(ctx)
}

func (d *demo) metrics(ctx context.Context) error {
	if d.info.MetricsURL == "" {
		return nil
	}
	d.header("What an operator sees", "tabwarden's Prometheus metrics (docs/metrics.md) counted all of it.")
	d.run(fmt.Sprintf("curl -s %s | grep -E '^tabwarden_(spawns_adopted_total|unacknowledged_spawns|action_results_total|session_cleanup_duration_seconds_count)'", d.info.MetricsURL))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.info.MetricsURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scraping %s: %w", d.info.MetricsURL, err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(body), "\n") {
		for _, p := range []string{"tabwarden_spawns_adopted_total", "tabwarden_unacknowledged_spawns", "tabwarden_action_results_total", "tabwarden_session_cleanup_duration_seconds_count"} {
			if strings.HasPrefix(l, p) {
				d.say("%s", l)
			}
		}
	}
	return nil
}

// ---- helpers ------------------------------------------------------------------------

// reset removes what an earlier demo left (its session, windows and action).
func (d *demo) reset(ctx context.Context) error {
	for _, name := range []string{ClickAction, ActionName} {
		act := &twv1.BrowserAction{}
		act.Namespace, act.Name = d.ns, name
		if err := d.k8s.Delete(ctx, act); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	s := &twv1.BrowserSession{}
	s.Namespace, s.Name = d.ns, SessionName
	err := d.k8s.Delete(ctx, s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n(removing the session %s an earlier demo left)\n", SessionName)
	return d.waitFor(ctx, "the earlier demo's session to go", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
		if apierrors.IsNotFound(err) {
			var ws twv1.BrowserWindowList
			err = d.k8s.List(ctx, &ws, client.InNamespace(d.ns), client.MatchingLabels{twv1.SessionLabel: SessionName})
			return err == nil && len(ws.Items) == 0, err
		}
		return false, err
	})
}

func (d *demo) openWindow(name, u string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{
		TypeMeta:   metav1.TypeMeta{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserWindow"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: SessionName}, Source: twv1.SourceOpen, URL: u,
		},
	}
}

// spawned is the session's Spawned window, if adopted yet.
func (d *demo) spawned(ctx context.Context) (*twv1.BrowserWindow, error) {
	var ws twv1.BrowserWindowList
	if err := d.k8s.List(ctx, &ws, client.InNamespace(d.ns), client.MatchingLabels{twv1.SessionLabel: SessionName, twv1.SourceLabel: "spawned"}); err != nil {
		return nil, err
	}
	if len(ws.Items) == 0 {
		return nil, nil
	}
	return &ws.Items[0], nil
}

func (d *demo) waitFor(ctx context.Context, what string, done func() (bool, error)) error {
	deadline := time.Now().Add(d.o.StepTimeout)
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("tabwarden demo: waited %s for %s", d.o.StepTimeout, what)
			if last != nil {
				msg += " (last error: " + last.Error() + ")"
			}
			return errors.New(msg + "; is tabwarden up still running? `kubectl get browserprofiles` shows whether its agent is connected")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (d *demo) header(title, why string) {
	d.step++
	fmt.Fprintf(d.out, "\n── %d. %s\n", d.step, title)
	fmt.Fprintf(d.out, "   %s\n\n", why)
}

// run prints a command the user would run.
func (d *demo) run(cmd string) { fmt.Fprintf(d.out, "$ %s\n", cmd) }

// say prints what the user would see.
func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// note prints a comment.
func (d *demo) note(format string, args ...any) { fmt.Fprintf(d.out, "# "+format+"\n", args...) }

// apply prints the kubectl apply of obj.
func (d *demo) apply(obj client.Object) {
	c := obj.DeepCopyObject().(client.Object)
	c.SetNamespace("")
	b, _ := yaml.Marshal(c)
	// Only what the user writes: no status, no empty metadata.
	var m map[string]any
	_ = yaml.Unmarshal(b, &m)
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	b, _ = yaml.Marshal(m)
	d.run("kubectl apply -f - <<EOF")
	fmt.Fprintf(d.out, "%sEOF\n", b)
	kind := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind)
	d.say("%s.tabwarden.dev/%s created", kind, obj.GetName())
}

// getSessions prints `kubectl get browsersessions` (the CRD's printer columns).
func (d *demo) getSessions(ctx context.Context) error {
	s := &twv1.BrowserSession{}
	if err := d.k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: SessionName}, s); err != nil {
		return err
	}
	if err := d.get(ctx, "browsersessions", SessionName, ""); err != nil {
		return err
	}
	if c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.ReadyCondition); c != nil {
		d.run(fmt.Sprintf(`kubectl get browsersession %s -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}'`, SessionName))
		d.say("%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return nil
}

// getWindows prints `kubectl get browserwindows -l tabwarden.dev/session=…`.
func (d *demo) getWindows(ctx context.Context) error {
	return d.get(ctx, "browserwindows", "", twv1.SessionLabel+"="+SessionName)
}

// get prints what `kubectl get <resource> [name] [-l selector]` prints: the
// API server's own table (the CRD's printer columns, server-side printing),
// rendered by kubectl's table printer, so the demo shows exactly what a user
// running the command sees.
func (d *demo) get(ctx context.Context, resource, name, selector string) error {
	cmd := "kubectl get " + resource
	if name != "" {
		cmd += " " + name
	}
	if selector != "" {
		cmd += " -l " + selector
	}
	d.run(cmd)
	hc, err := rest.HTTPClientFor(d.cfg)
	if err != nil {
		return err
	}
	u := fmt.Sprintf("%s/apis/%s/namespaces/%s/%s", strings.TrimSuffix(d.cfg.Host, "/"), twv1.GroupVersion.String(), d.ns, resource)
	if name != "" {
		u += "/" + name
	}
	if selector != "" {
		u += "?labelSelector=" + url.QueryEscape(selector)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	defer func() { _ = resp.Body.Close() }() // read below; a close error changes nothing
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", cmd, resp.Status, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if len(table.Rows) == 0 {
		d.say("No resources found in %s namespace.", d.ns)
		return nil
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(&table, d.out)
}

// pageList lists the fixture site's pages the browser shows, as the site
// itself sees them (fixture.Presence: each page holds a stream open while it
// lives), by path.
func (d *demo) pageList(ctx context.Context) ([]fixture.OpenPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.info.FixtureURL+fixture.PresencePath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing the browser's pages of the fixture site: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	var pages []fixture.OpenPage
	if err := json.NewDecoder(resp.Body).Decode(&pages); err != nil {
		return nil, fmt.Errorf("listing the browser's pages of the fixture site: %w", err)
	}
	for i := range pages {
		if p, err := url.PathUnescape(pages[i].Path); err == nil {
			pages[i].Path = p
		}
	}
	return pages, nil
}

// browserPages prints the pages of the fixture site the browser shows, and
// whose each one is: the user's own tab, a page of the session's live windows,
// or a page no session owns any more (released by Keep, here or in an earlier
// demo: the user's now).
func (d *demo) browserPages(ctx context.Context) error {
	list, err := d.pageList(ctx)
	if err != nil {
		return err
	}
	owned, err := d.ownedPaths(ctx)
	if err != nil {
		return err
	}
	// A page the window reports Open tells the site it is there once it loaded.
	if err := d.waitFor(ctx, "the session's open pages to show", func() (bool, error) {
		shown := map[string]bool{}
		if list, err = d.pageList(ctx); err != nil {
			return false, err
		}
		for _, p := range list {
			shown[p.Path] = true
		}
		for p := range owned {
			if !shown[p] {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	d.note("what the browser shows now (pages of the fixture site):")
	for _, p := range list {
		owner := "released"
		switch {
		case p.Path == UserPage:
			owner = "the user's"
		case owned[p.Path]:
			owner = "the session's"
		}
		d.say("#   %-14s %-10s %s", owner, p.Title, p.Path)
	}
	return nil
}

// ownedPaths are the paths (and queries) of the session's Open windows' pages.
func (d *demo) ownedPaths(ctx context.Context) (map[string]bool, error) {
	var ws twv1.BrowserWindowList
	if err := d.k8s.List(ctx, &ws, client.InNamespace(d.ns), client.MatchingLabels{twv1.SessionLabel: SessionName}); err != nil {
		return nil, err
	}
	owned := map[string]bool{}
	for _, w := range ws.Items {
		if w.Status.Phase == twv1.WindowOpen && w.Status.URL != "" {
			if u, err := url.Parse(w.Status.URL); err == nil {
				if p, err := url.PathUnescape(u.RequestURI()); err == nil {
					owned[p] = true
				}
			}
		}
	}
	return owned, nil
}

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
