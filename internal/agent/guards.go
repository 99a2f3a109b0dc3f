package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/keys"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

// The guards of a BrowserAction, in one place: the contract's guard table
// (GuardCoverage), the refusal every guard answers with, and the checks
// themselves, as functions of what the agent read (the action, its session,
// its window, the driver's answer). action_controller.go and action_steps.go
// gather those inputs and call in here; they decide nothing themselves.
//
//   - admission, once before any step: admitSession, admitWindow, admitPage;
//   - each step, before the driver: checkStep, then staleTarget for a ref or
//     point that does not resolve;
//   - the driver's answer: driverRefusal, notOwned, failure;
//   - the action's end: sessionEndedDuring, agentRestarted;
//   - warnings: noKeepalive.
//
// url_not_allowed is the url policy's (urlpolicy.go), reached through
// stepLookups.checkURL for the url a Navigate step names. Back and Forward name
// no url: they return to documents the page itself already loaded (as a Click
// on a link lands where the page says), so the policy has nothing to check
// before them. The policy also covers the page's frames: every step hands the
// driver browser.ActRequest.FrameAllowed (action_steps.go), which the cdp
// driver asks for each cross-origin frame it reaches itself; an Observe leaves
// a refused frame out (its outline node says why), and a step on an element of
// one is refused url_not_allowed with the policy's own message and patch.

// Coverage says whether a guard applies to a step type and, when it does not,
// why not.
type Coverage struct {
	Applies bool
	Why     string
}

func applies(why string) Coverage { return Coverage{Applies: true, Why: why} }
func na(why string) Coverage      { return Coverage{Why: why} }

// all classifies every step type alike.
func all(c Coverage) map[twv1.StepType]Coverage {
	m := map[twv1.StepType]Coverage{}
	for _, t := range twv1.StepTypes {
		m[t] = c
	}
	return m
}

// GuardCoverage classifies every step type against every guard of the contract's (docs/contract.md)
// guard table (twv1.Guards). The guard coverage test fails when a step type or a
// guard is missing here, and runs every pair against the real system: a step a
// guard applies to is refused (or warned) in the guard's situation, any other
// step is not.
var GuardCoverage = map[string]map[twv1.StepType]Coverage{
	twv1.ReasonSessionUnregistered: all(applies("an action whose session does not exist is refused by the controller before any step runs")),
	twv1.ReasonUnacknowledgedSpawns: {
		twv1.StepObserve:  na("reads the page; it cannot spawn and changes nothing"),
		twv1.StepNavigate: applies("changes the page"),
		twv1.StepClick:    applies("changes the page and may spawn more"),
		twv1.StepTypeText: applies("changes the page (and Enter may submit a form that spawns)"),
		twv1.StepPress:    applies("changes the page"),
		twv1.StepScroll:   na("moves the viewport only; it cannot spawn"),
		twv1.StepWait:     na("reads the page only"),
		twv1.StepBack:     applies("loads another document, whose scripts may spawn"),
		twv1.StepForward:  applies("loads another document, whose scripts may spawn"),
		twv1.StepReload:   applies("loads the document again, whose scripts may spawn"),
		twv1.StepHover:    na("moves the pointer only; it clicks nothing and cannot spawn"),
		twv1.StepSelect:   applies("changes the page (the page's change handler may submit or spawn)"),
		twv1.StepFill:     applies("changes the page (typing may trigger the page's handlers, which may spawn)"),
		twv1.StepDialog:   applies("answering lets the page's script go on, which may change the page and spawn"),

		twv1.StepScreenshot: na("takes a picture of the page; it cannot spawn and changes nothing"),
		twv1.StepUpload:     applies("changes the page (the file input's change handler may submit the form or spawn)"),
	},
	twv1.ReasonDirtySession: all(na("not a refusal: a reprimand condition on a session that ended with pages open; actions on an ended session are refused as session_finished")),
	twv1.ReasonStaleCoordinates: {
		twv1.StepObserve:  na("takes no target"),
		twv1.StepNavigate: na("takes no target"),
		twv1.StepClick:    applies("a point target is checked against its observation's document and render epoch"),
		twv1.StepTypeText: applies("a point target is checked against its observation's document and render epoch"),
		twv1.StepPress:    na("takes no target; it goes to the focused element"),
		twv1.StepScroll:   na("takes no target"),
		twv1.StepWait:     na("takes no target"),
		twv1.StepBack:     na("takes no target"),
		twv1.StepForward:  na("takes no target"),
		twv1.StepReload:   na("takes no target"),
		twv1.StepHover:    applies("a point target is checked against its observation's document and render epoch"),
		twv1.StepSelect:   applies("a point target is checked against its observation's document and render epoch"),
		twv1.StepFill:     applies("each field's point target is checked against its observation's document and render epoch, before any field is typed into"),
		twv1.StepDialog:   na("takes no target; it answers the dialog the page shows"),

		twv1.StepScreenshot: applies("a point target is checked against its observation's document and render epoch"),
		twv1.StepUpload:     applies("a point target is checked against its observation's document and render epoch"),
	},
	twv1.ReasonAmbiguousTarget: {
		twv1.StepObserve:  na("takes no target"),
		twv1.StepNavigate: na("takes no target"),
		twv1.StepClick:    applies("a text target must match one visible element"),
		twv1.StepTypeText: applies("a text target must match one visible element"),
		twv1.StepPress:    na("takes no target"),
		twv1.StepScroll:   na("takes no target"),
		twv1.StepWait:     na("waits for text anywhere on the page; any match will do"),
		twv1.StepBack:     na("takes no target"),
		twv1.StepForward:  na("takes no target"),
		twv1.StepReload:   na("takes no target"),
		twv1.StepHover:    applies("a text target must match one visible element"),
		twv1.StepSelect:   applies("a text target must match one visible element"),
		twv1.StepFill:     applies("each field's text target must match one visible element, before any field is typed into"),
		twv1.StepDialog:   na("takes no target"),

		twv1.StepScreenshot: applies("a text target must match one visible element"),
		twv1.StepUpload:     applies("a text target must match one visible element"),
	},
	twv1.ReasonProfileMismatch:             all(applies("an action naming another profile than the session's is refused before any step runs")),
	twv1.ReasonNoKeepalive:                 all(applies("a warning on any step of a session driven long on a host that ends idle connections, without keepalive")),
	twv1.ReasonSessionOwnedByAnotherThread: all(applies("an action from another thread than the session's is refused before any step runs")),
	twv1.ReasonWaitingForUser: {
		twv1.StepObserve:  na("reads the page; the user's work is not disturbed"),
		twv1.StepNavigate: applies("would change the page under the user"),
		twv1.StepClick:    applies("would change the page under the user"),
		twv1.StepTypeText: applies("would change the page under the user"),
		twv1.StepPress:    applies("would change the page under the user"),
		twv1.StepScroll:   applies("would move the page under the user"),
		twv1.StepWait:     na("reads the page only"),
		twv1.StepBack:     applies("would change the page under the user"),
		twv1.StepForward:  applies("would change the page under the user"),
		twv1.StepReload:   applies("would reload the page under the user (and lose what they typed)"),
		twv1.StepHover:    applies("would move the pointer (and open menus) under the user"),
		twv1.StepSelect:   applies("would change the page under the user"),
		twv1.StepFill:     applies("would type into the page under the user"),
		twv1.StepDialog:   applies("would answer the page's dialog under the user"),

		twv1.StepScreenshot: na("takes a picture of the page; it never scrolls, moves the pointer or focuses, so the user's work is not disturbed"),
		twv1.StepUpload:     applies("would change the page's form under the user"),
	},
	twv1.ReasonFocusViolation: {
		twv1.StepObserve:  na("the driver reads the page without focusing it"),
		twv1.StepNavigate: na("the driver navigates the tab without activating it"),
		twv1.StepClick:    na("the driver sends input to the background tab without activating it"),
		twv1.StepTypeText: na("the driver inserts text without activating the tab"),
		twv1.StepPress:    applies("browser shortcuts (Control+T, Control+Tab, Alt+F4, F6...) would open, switch or focus tabs and windows"),
		twv1.StepScroll:   na("the driver scrolls without focusing"),
		twv1.StepWait:     na("reads the page only"),
		twv1.StepBack:     na("the driver walks the tab's history without activating it"),
		twv1.StepForward:  na("the driver walks the tab's history without activating it"),
		twv1.StepReload:   na("the driver reloads the tab without activating it"),
		twv1.StepHover:    na("the driver moves the pointer over the background tab without activating it"),
		twv1.StepSelect:   na("the driver sets the drop-down's value in the page without activating the tab"),
		twv1.StepFill:     na("the driver inserts text without activating the tab, as Type does"),
		twv1.StepDialog:   na("the driver answers the dialog over the protocol without activating the tab"),

		twv1.StepScreenshot: na("the driver captures the page without activating the tab or its window"),
		twv1.StepUpload:     na("the driver sets the input's files in the page without activating the tab or opening a file chooser"),
	},
}

// focusShortcut reports whether key (e.g. "Control+Shift+T", "Mod+t", "F6") is
// a browser shortcut that opens, closes, switches or focuses a tab or window:
// read by internal/browser/keys, as every driver reads it.
func focusShortcut(key string) bool { return keys.FocusShortcut(key) }

// refusal is a guard's answer: a stable reason, what happened, and the
// corrected call.
type refusal struct {
	reason, message, hint string
	candidates            []twv1.ObservedElement
}

func (r *refusal) Error() string { return r.reason + ": " + r.message }

func refuse(reason, hint, format string, args ...any) *refusal {
	return &refusal{reason: reason, message: fmt.Sprintf(format, args...), hint: hint}
}

// ReasonAgentRestarted: an action the agent had claimed when it stopped; it is
// failed rather than run twice.
const ReasonAgentRestarted = "agent_restarted"

// admitSession runs the guards of the action's session, before any step:
// session_finished, session_owned_by_another_thread, profile_mismatch and
// profile_not_allowed, in that order. profile is this agent's.
func admitSession(act *twv1.BrowserAction, s *twv1.BrowserSession, profile string) *refusal {
	switch {
	case s.Ended() || !s.DeletionTimestamp.IsZero():
		return refuse(twv1.ReasonSessionFinished, fmt.Sprintf("kubectl get browsersession %s -n %s", s.Name, s.Namespace),
			"session %q has ended; nothing more runs in it. Start a new session to continue", s.Name)
	case act.Spec.Thread != s.Spec.Thread:
		n := &twv1.BrowserSession{}
		n.APIVersion, n.Kind = twv1.GroupVersion.String(), "BrowserSession"
		n.Namespace, n.GenerateName = s.Namespace, "session-"
		n.Spec = twv1.BrowserSessionSpec{Thread: act.Spec.Thread, Purpose: "say what this session is for", ProfileName: s.Status.ProfileName}
		return refuse(twv1.ReasonSessionOwnedByAnotherThread, hint.Create(n),
			"session %q is driven by thread %q, not %q: a thread drives only its own sessions. Start a session of your own", s.Name, s.Spec.Thread, act.Spec.Thread)
	case act.Spec.ProfileName != "" && act.Spec.ProfileName != s.Status.ProfileName:
		fixed := act.DeepCopy()
		fixed.Spec.ProfileName = s.Status.ProfileName
		return refuse(twv1.ReasonProfileMismatch, hint.Action(fixed, act.Spec.Steps...),
			"the action names profile %q but session %q is placed on %q", act.Spec.ProfileName, s.Name, s.Status.ProfileName)
	case revoked(s):
		return refuse(twv1.ReasonProfileNotAllowed, fmt.Sprintf("kubectl get browsersession %s -n %s -o yaml", s.Name, s.Namespace), "%s", revokedMessage(s, profile))
	}
	return nil
}

// revokedMessage says why nothing new opens or binds in a session whose
// profile stopped admitting its namespace, and what to do.
func revokedMessage(s *twv1.BrowserSession, profile string) string {
	return fmt.Sprintf("Held: profile %q no longer admits namespace %q; the session keeps what it has until it ends, and nothing new opens or binds. End it: kubectl delete browsersession %s -n %s",
		profile, s.Namespace, s.Name, s.Namespace)
}

// sessionWindowsHint lists the session's windows.
func sessionWindowsHint(act *twv1.BrowserAction, s *twv1.BrowserSession) string {
	return fmt.Sprintf("kubectl get browserwindows -n %s -l %s=%s", act.Namespace, twv1.SessionLabel, s.Name)
}

// admitWindow is window_not_in_session for an action whose window is not one
// of its session's: w as read, readErr the error of reading it.
func admitWindow(act *twv1.BrowserAction, s *twv1.BrowserSession, w *twv1.BrowserWindow, readErr error) *refusal {
	if readErr != nil || w.Spec.SessionRef.Name != s.Name {
		return refuse(twv1.ReasonWindowNotInSession, sessionWindowsHint(act, s), "window %q is not a window of session %q in this profile; name one of the session's windows", act.Spec.WindowRef.Name, s.Name)
	}
	return nil
}

// admitPage runs the guards of the window's page, from the driver's records
// (recorded, err: Agent.confirmRecord): browser_unreachable, page_gone, and
// window_not_in_session for a window with no page of this agent's yet.
func admitPage(act *twv1.BrowserAction, s *twv1.BrowserSession, w *twv1.BrowserWindow, recorded bool, err error) *refusal {
	switch {
	case err != nil:
		return refuse(twv1.ReasonBrowserUnreachable, hint.Action(act, act.Spec.Steps...), "the browser is unreachable (%v); nothing ran. Try again when the profile is Connected", err)
	case !recorded && (w.Status.Phase == twv1.WindowGone || w.Status.Phase == twv1.WindowClosed):
		return refuse(twv1.ReasonPageGone, sessionWindowsHint(act, s), "window %q's page is %s", w.Name, strings.ToLower(string(w.Status.Phase)))
	case !recorded:
		return refuse(twv1.ReasonWindowNotInSession, fmt.Sprintf("kubectl wait browserwindow/%s -n %s --for=jsonpath='{.status.phase}'=Open", w.Name, w.Namespace),
			"window %q has no page this agent opened, adopted or bound (yet): wait until it is Open", w.Name)
	}
	return nil
}

// stepLookups are what the per-step guards read from the world, asked only
// when a guard needs them.
type stepLookups struct {
	// unacknowledged names the session's spawned windows with no disposition.
	unacknowledged func() ([]string, error)
	// checkURL is the url policy's answer for a url (nil: allowed).
	checkURL func(raw string) *refusal
}

// checkStep runs the guards of one step, in order, before the driver:
// waiting_for_user, session_finished, unacknowledged_spawns (steps that change
// the page), focus_violation (press) and url_not_allowed (navigate). s is the
// session as it is now (it may have changed since the action began). The
// caller forgets the session's observations on waiting_for_user.
func checkStep(act *twv1.BrowserAction, s *twv1.BrowserSession, step twv1.ActionStep, look stepLookups) (*refusal, error) {
	if s.Spec.State == twv1.SessionWaitingForUser && (step.Type.Mutating() || step.Type == twv1.StepScroll || step.Type == twv1.StepHover) {
		return refuse(twv1.ReasonWaitingForUser, hint.Resume(s.Namespace, s.Name),
			"session %q waits for the user: automated %s steps are refused until the user resumes it, and refs observed before need a fresh observation then. The user resumes with", s.Name, step.Type), nil
	}
	if s.Ended() {
		return refuse(twv1.ReasonSessionFinished, fmt.Sprintf("kubectl get browsersession %s -n %s", s.Name, s.Namespace), "session %q ended while the action ran", s.Name), nil
	}
	if step.Type.Mutating() {
		unacked, err := look.unacknowledged()
		if err != nil {
			return nil, err
		}
		if len(unacked) > 0 {
			return refuse(twv1.ReasonUnacknowledgedSpawns, hint.AckAll(s.Namespace, unacked, twv1.DispositionClose),
				"session %q has %d spawned window(s) with no disposition (%s): say keep (Keep), close (Close) or temporary (Temporary) for each before the next %s step",
				s.Name, len(unacked), strings.Join(unacked, ", "), step.Type), nil
		}
	}
	if step.Type == twv1.StepPress && focusShortcut(step.Key) {
		return refuse(twv1.ReasonFocusViolation, hint.Action(act, twv1.ActionStep{Type: twv1.StepPress, Key: "Enter"}),
			"key %q is a browser shortcut that opens, switches or focuses tabs or windows; tabwarden never focuses. Press keys the page handles (Enter, Tab, Escape, letters...)", step.Key), nil
	}
	if step.Type == twv1.StepNavigate {
		if rf := look.checkURL(step.URL); rf != nil {
			return rf, nil
		}
	}
	return nil, nil
}

// staleTarget refuses a ref or point that does not resolve against the
// observation it came from (reason stale_ref or stale_coordinates, msg from
// observations.resolve): never retargeted.
func staleTarget(act *twv1.BrowserAction, reason, msg string) *refusal {
	return refuse(reason, hint.Observe(act), "%s; never retargeted: observe again and use a ref of the new observation", msg)
}

// fieldWithoutTarget refuses a Fill whose field i names no target (the API
// server's validation refuses it first).
func fieldWithoutTarget(act *twv1.BrowserAction, i int) *refusal {
	return refuse(twv1.ReasonTargetNotFound, hint.Observe(act), "field %d of the Fill names no target: observe and name each field by ref or text", i)
}

// driverRefusal is the refusal of a step the driver refused from the page's
// state (ambiguous_target, a missing or stale target...), with its candidates
// as the API shows them. An ambiguous text target names them, and its hint
// retries with the first one's ref.
func driverRefusal(act *twv1.BrowserAction, step twv1.ActionStep, ae *browser.ActError, candidates []twv1.ObservedElement) *refusal {
	rf := &refusal{reason: ae.Reason, message: ae.Message, hint: hint.Observe(act), candidates: candidates}
	if ae.Reason == twv1.ReasonDialogOpen {
		// The page is blocked: the corrected call answers its dialog.
		rf.hint = hint.Action(act, twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogDismiss})
	}
	if ae.Reason == twv1.ReasonAmbiguousTarget && len(ae.Candidates) > 0 && step.Target != nil {
		names := make([]string, 0, len(ae.Candidates))
		for _, c := range rf.candidates {
			names = append(names, fmt.Sprintf("%s %q", c.Ref, c.Name))
		}
		rf.message += ". Candidates: " + strings.Join(names, ", ")
		if rf.candidates[0].Ref != "" {
			fixed := step.DeepCopy()
			fixed.Target = &twv1.ActionTarget{Ref: rf.candidates[0].Ref}
			rf.hint = hint.Action(act, *fixed)
		}
	}
	return rf
}

// dialogLeftOpen is the message of a step whose input made the page open a
// JavaScript dialog, left open for the agent to answer.
func dialogLeftOpen(d *twv1.OpenDialog) string {
	msg := fmt.Sprintf("the page opened a %s dialog: %q", d.Type, d.Message)
	if d.Type == "prompt" {
		msg += fmt.Sprintf(" (default answer %q)", d.DefaultPrompt)
	}
	return msg + fmt.Sprintf(". It blocks the page: every other step is refused (%s) until a Dialog step answers it, for example {type: Dialog, answer: Accept} or {type: Dialog, answer: Dismiss}; unanswered, it is dismissed after %s",
		twv1.ReasonDialogOpen, browser.DialogTimeout)
}

// notOwned is window_not_in_session for a step the driver refused because the
// window does not own its page (browser.ErrNotOwned).
func notOwned(act *twv1.BrowserAction, window string, err error) *refusal {
	return refuse(twv1.ReasonWindowNotInSession, hint.Observe(act), "the driver refused: window %q does not own its page (%v)", window, err)
}

// failure is the refusal-shaped account of a step that failed in the browser.
func failure(act *twv1.BrowserAction, err error) *refusal {
	switch {
	case errors.Is(err, browser.ErrNotFound):
		return refuse(twv1.ReasonPageGone, "kubectl get browserwindows -n "+act.Namespace+" -l "+twv1.SessionLabel+"="+act.Spec.SessionRef.Name,
			"the window's page is gone (closed by the user or the page): %v", err)
	case errors.Is(err, browser.ErrNotConnected):
		return refuse(twv1.ReasonBrowserUnreachable, hint.Action(act, act.Spec.Steps...),
			"the browser is unreachable; nothing more ran: %v. Try again when the profile is Connected", err)
	}
	return refuse(twv1.ReasonStepFailed, hint.Observe(act), "%v", err)
}

// sessionEndedDuring is session_finished for an action whose session ended
// before step next: no step from next on ran.
func sessionEndedDuring(s *twv1.BrowserSession, next int) *refusal {
	return refuse(twv1.ReasonSessionFinished, fmt.Sprintf("kubectl get browsersession %s -n %s", s.Name, s.Namespace),
		"session %q ended while the action ran: step %d and after did not run, and the session's pages close. Start a new session to continue", s.Name, next)
}

// agentRestarted fails an action found claimed (Running) when the agent
// (re)started: some of its steps may have run, so it is not run again.
func agentRestarted(act *twv1.BrowserAction) *refusal {
	return &refusal{reason: ReasonAgentRestarted,
		message: "the agent restarted while the action ran; some of its steps may have run. Observe the page and act again",
		hint:    hint.Observe(act)}
}

// noKeepalive is the no_keepalive warning, or "": a session with no keepalive,
// driven for warnAfter or longer, on a profile whose host ends idle
// connections (hostIdle, read only then; nil: it does not).
func noKeepalive(s *twv1.BrowserSession, profile string, warnAfter time.Duration, now time.Time, hostIdle func() *metav1.Duration) string {
	driven := now.Sub(s.CreationTimestamp.Time)
	if s.Spec.Keepalive != nil || driven < warnAfter {
		return ""
	}
	idle := hostIdle()
	if idle == nil {
		return ""
	}
	interval := idle.Duration / 2
	if interval < 5*time.Second {
		interval = 5 * time.Second
	}
	return fmt.Sprintf("%s: session %q has been driven for %s on profile %q, whose host ends connections idle for %s, and has no keepalive. Add one: %s",
		twv1.ReasonNoKeepalive, s.Name, driven.Round(time.Second), profile, idle.Duration,
		hint.Keepalive(s.Namespace, s.Name, interval.String()))
}
