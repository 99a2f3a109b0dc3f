package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

func newOwned(env *Env) *cobra.Command {
	var out *output
	c := &cobra.Command{
		Use:   "owned SESSION",
		Short: "List what a session owns: the windows it opened, the ones its pages spawned, the tabs it binds",
		Long: `List what a session owns, grouped: the windows it opened, the windows its pages spawned (with the
window that spawned each, the opener tab and why) and the user tabs it binds. Spawned windows with
no disposition are marked with * and followed by the command that acknowledges them.

-o yaml prints the session's BrowserWindows as a List that kubectl apply accepts.`,
		Example: `  kubectl tabwarden owned tax-form
  kubectl tabwarden owned tax-form -n team-a -o wide
  kubectl tabwarden owned tax-form -o yaml`,
		Args: args(1, 1, "SESSION"),
		RunE: func(c *cobra.Command, a []string) error {
			o, err := env.Ops()
			if err != nil {
				return err
			}
			s, ws, err := o.Owned(c.Context(), a[0])
			if err != nil {
				return err
			}
			if l := o.HolderLease(c.Context(), s); l != nil {
				// The Lease has the latest renewal; status has the one the controller last judged.
				s.Status.Holder = ptr.Deref(l.Spec.HolderIdentity, s.Status.Holder)
				if l.Spec.RenewTime != nil {
					s.Status.LastRenewal = &metav1.Time{Time: l.Spec.RenewTime.Time}
				}
			}
			if out.table() {
				return env.table(out.wide(), o.Namespace).WriteOwned(c.OutOrStdout(), s, ws)
			}
			list := &twv1.BrowserWindowList{Items: ws}
			ptrs := make([]*twv1.BrowserWindow, len(ws))
			for i := range list.Items {
				ptrs[i] = &list.Items[i]
			}
			typed(ptrs)
			if out.format() == "name" {
				for _, w := range ptrs {
					if err := out.print(w, c.OutOrStdout()); err != nil {
						return err
					}
				}
				return nil
			}
			return out.print(list, c.OutOrStdout())
		},
	}
	out = addOutput(c)
	return c
}

func newAck(env *Env) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "ack (WINDOW... | --all-unacked SESSION) keep|close|temporary",
		Short: "Give windows a disposition: keep, close or temporary",
		Long: `Acknowledge windows by giving each a disposition. A session whose pages spawned windows (a compose
popup, a target=_blank tab) holds its new windows and refuses its actions (unacknowledged_spawns)
until each spawned window has one:

  keep       keep it open, also after the session ends (a deliverable)
  close      close it now
  temporary  keep it while the session runs, close it when the session ends

The same works for any window of a session: close on an opened window closes its page now.`,
		Example: `  kubectl tabwarden ack tax-form-local-tab-7 close
  kubectl tabwarden ack --all-unacked tax-form close -n team-a`,
		Args: args(2, -1, "(WINDOW... | --all-unacked SESSION) keep|close|temporary"),
		RunE: func(c *cobra.Command, a []string) error {
			d, err := ops.ParseDisposition(a[len(a)-1])
			if err != nil {
				return usageError{fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())}
			}
			names := a[:len(a)-1]
			if all && len(names) != 1 {
				return usageError{fmt.Errorf("--all-unacked takes one SESSION, for example: %s ack --all-unacked tax-form close", env.Name)}
			}
			o, err := env.Ops()
			if err != nil {
				return err
			}
			var ws []twv1.BrowserWindow
			if all {
				ws, err = o.AckUnacked(c.Context(), names[0], d)
				if err == nil && len(ws) == 0 {
					fmt.Fprintf(c.OutOrStdout(), "session %s has no unacknowledged spawned window\n", names[0])
					return nil
				}
			} else {
				ws, err = o.Ack(c.Context(), names, d)
			}
			for _, w := range ws {
				fmt.Fprintf(c.OutOrStdout(), "browserwindow/%s acknowledged: %s\n", w.Name, d)
			}
			return err
		},
	}
	c.Flags().BoolVar(&all, "all-unacked", false, "acknowledge every spawned window of SESSION that has no disposition")
	return c
}

func newFinish(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "finish SESSION",
		Short: "Finish a session: its temporary pages close, Keep ones are released, bound tabs detached",
		Example: `  kubectl tabwarden finish tax-form
  kubectl wait --for=jsonpath='{.status.phase}'=Finished browsersession/tax-form`,
		Args: args(1, 1, "SESSION"),
		RunE: func(c *cobra.Command, a []string) error {
			o, err := env.Ops()
			if err != nil {
				return err
			}
			_, r, err := o.FinishWithReprimand(c.Context(), a[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "browsersession/%s finished: its temporary pages close, Keep pages are released, bound tabs detached\n", a[0])
			if r.Dirty() {
				fmt.Fprintln(c.ErrOrStderr(), r.String())
			}
			return nil
		},
	}
}

func newHold(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "hold SESSION",
		Short: "Hold a session while this command runs: renew its Lease so that spec.abandonAfter does not end it",
		Long: `Hold a session for a script: renew the session's holder Lease (named after the session, in its
namespace) until interrupted, or until the session ends or is deleted. A session with
spec.abandonAfter whose holder stops renewing for that long is abandoned: it ends with
status.endReason Abandoned, its temporary pages close. Run it in the background of a script
that drives the session; kill it (or let the script exit) when done.`,
		Example: `  kubectl tabwarden hold tax-form &
  HOLD=$!; ...drive the session...; kubectl tabwarden finish tax-form; kill $HOLD`,
		Args: args(1, 1, "SESSION"),
		RunE: func(c *cobra.Command, a []string) error {
			o, err := env.Ops()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			id := ops.HolderIdentity("kubectl tabwarden hold")
			first := true
			err = o.Hold(ctx, a[0], id, func(l *coordv1.Lease) {
				if first {
					fmt.Fprintf(c.OutOrStdout(), "browsersession/%s held by %q; renewing until interrupted\n", a[0], id)
					first = false
				}
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "browsersession/%s no longer held by this command\n", a[0])
			return nil
		},
	}
}

func newCleanup(env *Env) *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "cleanup SESSION --yes",
		Short: "Close every page a session owns now, Keep deliverables included (asks for --yes)",
		Long: `Close every page a session owns now (disposition close on each opened and spawned window), Keep
deliverables included. Bound user tabs are never closed. Without --yes it lists what it would
close and changes nothing.`,
		Example: `  kubectl tabwarden cleanup tax-form --yes`,
		Args:    args(1, 1, "SESSION --yes"),
		RunE: func(c *cobra.Command, a []string) error {
			o, err := env.Ops()
			if err != nil {
				return err
			}
			ws, err := o.Cleanup(c.Context(), a[0], yes)
			if err != nil {
				return err
			}
			if len(ws) == 0 {
				fmt.Fprintf(c.OutOrStdout(), "session %s owns no open page; nothing to close\n", a[0])
			}
			for _, w := range ws {
				fmt.Fprintf(c.OutOrStdout(), "browserwindow/%s closing\n", w.Name)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&yes, "yes", false, "really close every owned page, Keep ones included")
	return c
}

func newProfiles(env *Env) *cobra.Command {
	var out *output
	c := &cobra.Command{
		Use:   "profiles [NAME...]",
		Short: "List browser profiles: connected, driver, sessions/capacity, tabs, admitted namespaces",
		Example: `  kubectl tabwarden profiles
  kubectl tabwarden profiles local -o wide`,
		RunE: func(c *cobra.Command, a []string) error {
			o, err := env.Ops()
			if err != nil {
				return err
			}
			ps, err := o.Profiles(c.Context(), a...)
			if err != nil {
				return err
			}
			if out.table() {
				return env.table(out.wide(), o.Namespace).WriteProfiles(c.OutOrStdout(), ps)
			}
			list := &twv1.BrowserProfileList{Items: ps}
			ptrs := make([]*twv1.BrowserProfile, len(ps))
			for i := range list.Items {
				ptrs[i] = &list.Items[i]
			}
			typed(ptrs)
			if out.format() == "name" {
				for _, p := range ptrs {
					if err := out.print(p, c.OutOrStdout()); err != nil {
						return err
					}
				}
				return nil
			}
			return out.print(list, c.OutOrStdout())
		},
	}
	out = addOutput(c)
	return c
}

// actFlags are the step flags of act.
type actFlags struct {
	window, thread, profile, file        string
	observe                              bool
	outlineOffset                        int32
	clickRef, clickText, clickPoint, obs string
	navigate, typeText, press, waitText  string
	scroll                               int32
	timeout                              time.Duration
}

func newAct(env *Env) *cobra.Command {
	var (
		f   actFlags
		out *output
	)
	c := &cobra.Command{
		Use:   "act SESSION --window WINDOW [--thread THREAD] [steps] | -f steps.yaml",
		Short: "Drive a window of a session (observe, navigate, click, type, press, scroll, wait) and print the result",
		Long: `Run one BrowserAction against a window of a session, wait for it, and print the result: each step,
the last observation's elements with the refs later clicks can target, and the windows the page
spawned. A refused step prints the guard's reason, message and hint (exit code 3); a failed one
exit code 1.

--thread names the calling thread; without it the action runs as the session's own thread
(its spec.thread), as the person at the terminal driving their session would. An agent acting
from a thread of its own passes it, and is refused (session_owned_by_another_thread) when it
is not the session's.

Step flags run in this order: --navigate, --click-*, --type, --press, --scroll, --wait-text,
--observe. For another order, or several of a kind, list the steps in a file (-f):

  - {type: Observe}
  - {type: Click, target: {ref: o1.e3}}
  - {type: Type, target: {text: "Name"}, text: Ada Lovelace}
  - {type: Press, key: Enter}
  - {type: Wait, text: Saved}`,
		Example: `  kubectl tabwarden act tax-form --window form --observe
  kubectl tabwarden act tax-form --window form --thread thread-42 --click-ref o1.e3 --observe
  kubectl tabwarden act tax-form --window form --thread thread-42 --click-point 120,340 --observation o1
  kubectl tabwarden act tax-form --window form --thread thread-42 -f steps.yaml -o yaml`,
		Args: args(1, 1, "SESSION --window WINDOW [--thread THREAD] [steps]"),
		RunE: func(c *cobra.Command, a []string) error {
			steps, err := f.steps(c.InOrStdin())
			if err != nil {
				return usageError{fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())}
			}
			if f.window == "" {
				return usageError{fmt.Errorf("--window is required: the window whose page the steps drive, for example\n  %s act %s --window WINDOW --observe\n(%s owned %s lists the windows)", env.Name, a[0], env.Name, a[0])}
			}
			o, err := env.Ops()
			if err != nil {
				return err
			}
			if f.thread == "" {
				// The session's own thread: the person driving their session
				// from the terminal need not repeat it.
				s, err := o.GetSession(c.Context(), a[0])
				if err != nil {
					return err
				}
				f.thread = s.Spec.Thread
			}
			act, err := o.Act(c.Context(), ops.ActRequest{Session: a[0], Window: f.window, Thread: f.thread, Profile: f.profile, Steps: steps}, f.timeout)
			if act == nil || (err != nil && !act.Status.Phase.Finished()) {
				return err
			}
			if out.table() {
				if perr := env.table(out.wide(), o.Namespace).WriteAction(c.OutOrStdout(), act); perr != nil {
					return perr
				}
			} else if perr := out.print(typed([]runtime.Object{act})[0], c.OutOrStdout()); perr != nil {
				return perr
			}
			switch act.Status.Phase {
			case twv1.ActionRefused:
				return exitCode(ExitRefused)
			case twv1.ActionFailed:
				return exitCode(ExitError)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.window, "window", "", "the BrowserWindow whose page the steps drive (required)")
	fl.StringVar(&f.thread, "thread", "", "the calling thread, which must be the session's (default: the session's spec.thread)")
	fl.StringVar(&f.profile, "profile", "", "when set, must be the session's profile (profile_mismatch otherwise)")
	fl.StringVarP(&f.file, "filename", "f", "", `a YAML or JSON file of steps ("-" reads standard input)`)
	fl.BoolVar(&f.observe, "observe", false, "observe the page: url, title, the visible elements with their refs and the page's outline (its text)")
	fl.Int32Var(&f.outlineOffset, "outline-offset", 0, "with --observe: the first line of the page's outline to show (a truncated outline's nextOffset)")
	fl.StringVar(&f.clickRef, "click-ref", "", "click the element with this ref from an earlier observation, e.g. o3.e12")
	fl.StringVar(&f.clickText, "click-text", "", "click the one visible element with this text")
	fl.StringVar(&f.clickPoint, "click-point", "", "click at X,Y (viewport CSS pixels) read from --observation")
	fl.StringVar(&f.obs, "observation", "", "the observation (e.g. o3) --click-point's coordinates come from")
	fl.StringVar(&f.navigate, "navigate", "", "load this http(s) url in the window's page")
	fl.StringVar(&f.typeText, "type", "", "type this text into the focused element (after a click, the clicked one)")
	fl.StringVar(&f.press, "press", "", "press a key: Enter, Tab, Escape, ArrowDown, a letter...")
	fl.Int32Var(&f.scroll, "scroll", 0, "scroll down by this many CSS pixels (negative: up)")
	fl.StringVar(&f.waitText, "wait-text", "", "wait for this text to appear on the page")
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "how long to wait for the action to finish")
	out = addOutput(c)
	return c
}

func (f *actFlags) steps(stdin io.Reader) ([]twv1.ActionStep, error) {
	var steps []twv1.ActionStep
	if f.navigate != "" {
		steps = append(steps, twv1.ActionStep{Type: twv1.StepNavigate, URL: f.navigate})
	}
	clicks := 0
	for _, s := range []string{f.clickRef, f.clickText, f.clickPoint} {
		if s != "" {
			clicks++
		}
	}
	if clicks > 1 {
		return nil, fmt.Errorf("give one of --click-ref, --click-text and --click-point")
	}
	switch {
	case f.clickRef != "":
		steps = append(steps, twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: f.clickRef}})
	case f.clickText != "":
		steps = append(steps, twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: f.clickText}})
	case f.clickPoint != "":
		xs, ys, ok := strings.Cut(f.clickPoint, ",")
		x, errX := strconv.ParseInt(strings.TrimSpace(xs), 10, 32)
		y, errY := strconv.ParseInt(strings.TrimSpace(ys), 10, 32)
		if !ok || errX != nil || errY != nil {
			return nil, fmt.Errorf("--click-point %q: want X,Y in CSS pixels, for example --click-point 120,340 --observation o3", f.clickPoint)
		}
		if f.obs == "" {
			return nil, fmt.Errorf("--click-point needs --observation: the observation its coordinates were read from, for example --click-point %s --observation o3", f.clickPoint)
		}
		x32, y32 := int32(x), int32(y)
		steps = append(steps, twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{X: &x32, Y: &y32, Observation: f.obs}})
	}
	if f.typeText != "" {
		steps = append(steps, twv1.ActionStep{Type: twv1.StepTypeText, Text: f.typeText})
	}
	if f.press != "" {
		steps = append(steps, twv1.ActionStep{Type: twv1.StepPress, Key: f.press})
	}
	if f.scroll != 0 {
		dy := f.scroll
		steps = append(steps, twv1.ActionStep{Type: twv1.StepScroll, DeltaY: &dy})
	}
	if f.waitText != "" {
		steps = append(steps, twv1.ActionStep{Type: twv1.StepWait, Text: f.waitText})
	}
	if f.observe {
		st := twv1.ActionStep{Type: twv1.StepObserve}
		if f.outlineOffset != 0 {
			off := f.outlineOffset
			st.OutlineOffset = &off
		}
		steps = append(steps, st)
	} else if f.outlineOffset != 0 {
		return nil, fmt.Errorf("--outline-offset pages through an observation's outline: give it with --observe")
	}
	if f.file != "" {
		if len(steps) > 0 {
			return nil, fmt.Errorf("give steps either as flags or in -f %s, not both", f.file)
		}
		var (
			data []byte
			err  error
		)
		if f.file == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(f.file)
		}
		if err != nil {
			return nil, err
		}
		return ops.ParseSteps(data)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no steps: give at least one step flag (--observe, --click-ref, --navigate, ...) or -f steps.yaml")
	}
	return steps, nil
}
