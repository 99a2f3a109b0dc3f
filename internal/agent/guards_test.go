package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

func TestFocusShortcut(t *testing.T) {
	for key, want := range map[string]bool{
		"Enter": false, "Tab": false, "Escape": false, "a": false, "Shift+Tab": false, "Control+a": false, "Control+c": false,
		"ArrowDown": false, "Backspace": false,
		"Control+t": true, "Control+T": true, "Control+Shift+T": true, "Ctrl+Tab": true, "Control+Shift+Tab": true,
		"Control+w": true, "Control+n": true, "Control+1": true, "Control+PageDown": true, "Meta+t": true, "Cmd+`": true,
		"Alt+Tab": true, "Alt+F4": true, "Alt+ArrowLeft": true, "F6": true, "F11": true,
		// However the shortcut is spelled (issue 19: Mod+t passed the guard).
		"Mod+t": true, "mod+T": true, "Mod+Shift+Tab": true, "Mod+w": true, "CTRL+t": true, "control+w": true,
		"Option+Tab": true, "Command+t": true, "Mod+c": false, "Mod+a": false,
	} {
		if got := focusShortcut(key); got != want {
			t.Errorf("focusShortcut(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestObservationsBindRefs(t *testing.T) {
	tab := newObservations()
	id := tab.add(observation{session: "s1", sessionGeneration: 3, page: "p1", document: "d1", epoch: 7})
	other := tab.add(observation{session: "s1", sessionGeneration: 3, page: "p1", document: "d2", epoch: 0})
	if id == other {
		t.Fatalf("two observations share id %s", id)
	}
	for _, tc := range []struct {
		name       string
		ref, obs   string
		point      bool
		session    types.UID
		generation int64
		page       string
		reason     string
	}{
		{name: "ref of this session, page and generation", ref: id + ".e4", session: "s1", generation: 3, page: "p1"},
		{name: "point", obs: id, point: true, session: "s1", generation: 3, page: "p1"},
		{name: "another session", ref: id + ".e4", session: "s2", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "another page", ref: id + ".e4", session: "s1", generation: 3, page: "p2", reason: "stale_ref"},
		{name: "the session changed (waited for the user)", ref: id + ".e4", session: "s1", generation: 4, page: "p1", reason: "stale_ref"},
		{name: "unknown observation (before a restart)", ref: "o1.e4", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "point of another session", obs: id, point: true, session: "s2", generation: 3, page: "p1", reason: "stale_coordinates"},
		{name: "malformed ref", ref: "e4", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "ref of an element in frame f2", ref: id + ".f2.e4", session: "s1", generation: 3, page: "p1"},
		{name: "malformed frame ref", ref: id + ".f2", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "malformed frame path", ref: id + ".f2.f3.e4", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "ref of an element in cross-origin frame x1", ref: id + ".x1.e4", session: "s1", generation: 3, page: "p1"},
		{name: "ref of a same-origin frame inside cross-origin frame x1", ref: id + ".x1.f2.e4", session: "s1", generation: 3, page: "p1"},
		{name: "frames out of order", ref: id + ".f2.x1.e4", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "two cross-origin frames", ref: id + ".x1.x2.e4", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
	} {
		tg, reason, msg := tab.resolve(tc.ref, tc.obs, tc.point, 10, 20, tc.session, tc.generation, tc.page)
		if reason != tc.reason {
			t.Errorf("%s: reason %q (%s), want %q", tc.name, reason, msg, tc.reason)
			continue
		}
		if reason == "" && tc.point && (tg.Document != "d1" || tg.Epoch != 7 || !tg.Point || tg.X != 10) {
			t.Errorf("%s: target %+v carries the observation's document and epoch", tc.name, tg)
		}
		if want := strings.TrimPrefix(tc.ref, id+"."); reason == "" && !tc.point && (tg.Document != "d1" || tg.Ref != want) {
			t.Errorf("%s: target %+v names the element in the observation's document", tc.name, tg)
		}
	}
	// A restarted agent never reuses an id.
	if again := newObservations().add(observation{}); again <= id && len(again) == len(id) {
		t.Errorf("a new table issued %s after %s", again, id)
	}
	tab.forgetSession("s1")
	if _, ok := tab.get(id); ok {
		t.Error("forgetSession kept an observation of the session")
	}
}

// The guards' own tests: each check of guards.go, as a function of what the
// agent read. The controllers/ tests run the same guards against the real
// system (TestGuardCoverage and the action tests); these pin each decision,
// its order and its words.

// guardSession is a live session of thread t1 placed on profile p1.
func guardSession() *twv1.BrowserSession {
	s := &twv1.BrowserSession{}
	s.Namespace, s.Name, s.UID = "ns", "s1", "uid-s1"
	s.Spec.Thread, s.Spec.Purpose = "t1", "test"
	s.Status.ProfileName = "p1"
	return s
}

// guardAction is an action of thread t1 in session s1, on window w1.
func guardAction(steps ...twv1.ActionStep) *twv1.BrowserAction {
	act := &twv1.BrowserAction{}
	act.Namespace, act.Name = "ns", "a1"
	act.Spec.Thread = "t1"
	act.Spec.SessionRef.Name = "s1"
	act.Spec.WindowRef.Name = "w1"
	act.Spec.Steps = steps
	return act
}

// TestGuardCoverageClassifiesEveryPair: every guard of the contract's table,
// and nothing else, is classified against every step type, with why.
func TestGuardCoverageClassifiesEveryPair(t *testing.T) {
	if len(GuardCoverage) != len(twv1.Guards) {
		t.Errorf("GuardCoverage classifies %d guards, the contract lists %d", len(GuardCoverage), len(twv1.Guards))
	}
	for _, guard := range twv1.Guards {
		byType, ok := GuardCoverage[guard]
		if !ok {
			t.Errorf("guard %s is not classified", guard)
			continue
		}
		for _, st := range twv1.StepTypes {
			c, ok := byType[st]
			if !ok {
				t.Errorf("step %s is not classified against guard %s", st, guard)
			} else if c.Why == "" {
				t.Errorf("%s/%s does not say why", guard, st)
			}
		}
	}
}

func TestAdmitSession(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		act    func(*twv1.BrowserAction)
		s      func(*twv1.BrowserSession)
		reason string
		msg    string
	}{
		{name: "admitted"},
		{name: "the action names the session's profile", act: func(a *twv1.BrowserAction) { a.Spec.ProfileName = "p1" }},
		{name: "finished", s: func(s *twv1.BrowserSession) { s.Spec.State = twv1.SessionFinished }, reason: twv1.ReasonSessionFinished,
			msg: `session "s1" has ended; nothing more runs in it. Start a new session to continue`},
		{name: "deleted", s: func(s *twv1.BrowserSession) { s.DeletionTimestamp = &now }, reason: twv1.ReasonSessionFinished},
		{name: "ended by its controller", s: func(s *twv1.BrowserSession) { s.Status.EndReason = twv1.ReasonAbandoned }, reason: twv1.ReasonSessionFinished},
		{name: "another thread", act: func(a *twv1.BrowserAction) { a.Spec.Thread = "t2" }, reason: twv1.ReasonSessionOwnedByAnotherThread,
			msg: `session "s1" is driven by thread "t1", not "t2": a thread drives only its own sessions. Start a session of your own`},
		{name: "another profile", act: func(a *twv1.BrowserAction) { a.Spec.ProfileName = "p2" }, reason: twv1.ReasonProfileMismatch,
			msg: `the action names profile "p2" but session "s1" is placed on "p1"`},
		{name: "profile no longer admits the namespace", s: revoke, reason: twv1.ReasonProfileNotAllowed,
			msg: revokedMessage(guardSession(), "p1")},
		// The order: an ended session is refused as such whatever else is wrong.
		{name: "finished, another thread", act: func(a *twv1.BrowserAction) { a.Spec.Thread = "t2" },
			s: func(s *twv1.BrowserSession) { s.Spec.State = twv1.SessionFinished }, reason: twv1.ReasonSessionFinished},
		{name: "another thread and profile", act: func(a *twv1.BrowserAction) { a.Spec.Thread, a.Spec.ProfileName = "t2", "p2" },
			reason: twv1.ReasonSessionOwnedByAnotherThread},
		{name: "another profile, revoked", act: func(a *twv1.BrowserAction) { a.Spec.ProfileName = "p2" }, s: revoke, reason: twv1.ReasonProfileMismatch},
	} {
		act, s := guardAction(twv1.ActionStep{Type: twv1.StepObserve}), guardSession()
		if tc.act != nil {
			tc.act(act)
		}
		if tc.s != nil {
			tc.s(s)
		}
		rf := admitSession(act, s, "p1")
		checkRefusal(t, tc.name, rf, tc.reason, tc.msg)
		if rf != nil && rf.hint == "" {
			t.Errorf("%s: no hint", tc.name)
		}
	}
	// The corrected calls.
	act := guardAction(twv1.ActionStep{Type: twv1.StepObserve})
	act.Spec.Thread = "t2"
	if rf := admitSession(act, guardSession(), "p1"); !strings.Contains(rf.hint, "t2") || !strings.Contains(rf.hint, `"generateName":"session-"`) || !strings.Contains(rf.hint, `"thread":"t2"`) {
		t.Errorf("session_owned_by_another_thread hint %q does not create a session of thread t2", rf.hint)
	}
	act = guardAction(twv1.ActionStep{Type: twv1.StepObserve})
	act.Spec.ProfileName = "p2"
	fixed := act.DeepCopy()
	fixed.Spec.ProfileName = "p1"
	if rf := admitSession(act, guardSession(), "p1"); rf.hint != hint.Action(fixed, act.Spec.Steps...) {
		t.Errorf("profile_mismatch hint %q does not name the session's profile", rf.hint)
	}
}

func revoke(s *twv1.BrowserSession) {
	s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: twv1.AdmittedCondition, Status: metav1.ConditionFalse, Reason: twv1.ReasonProfileNotAllowed})
}

// checkRefusal checks rf's reason and, when msg is given, its message.
func checkRefusal(t *testing.T, name string, rf *refusal, reason, msg string) {
	t.Helper()
	switch {
	case reason == "" && rf != nil:
		t.Errorf("%s: refused %s (%s), want admitted", name, rf.reason, rf.message)
	case reason != "" && rf == nil:
		t.Errorf("%s: admitted, want %s", name, reason)
	case rf != nil && rf.reason != reason:
		t.Errorf("%s: refused %s (%s), want %s", name, rf.reason, rf.message, reason)
	case rf != nil && msg != "" && rf.message != msg:
		t.Errorf("%s: message %q, want %q", name, rf.message, msg)
	}
}

func TestAdmitWindow(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "tabwarden.dev", Resource: "browserwindows"}, "w1")
	mine := &twv1.BrowserWindow{}
	mine.Name, mine.Spec.SessionRef.Name = "w1", "s1"
	other := mine.DeepCopy()
	other.Spec.SessionRef.Name = "s2"
	want := `window "w1" is not a window of session "s1" in this profile; name one of the session's windows`
	for _, tc := range []struct {
		name   string
		w      *twv1.BrowserWindow
		err    error
		reason string
	}{
		{name: "the session's window", w: mine},
		{name: "no such window", w: &twv1.BrowserWindow{}, err: notFound, reason: twv1.ReasonWindowNotInSession},
		{name: "another session's window", w: other, reason: twv1.ReasonWindowNotInSession},
	} {
		rf := admitWindow(guardAction(), guardSession(), tc.w, tc.err)
		checkRefusal(t, tc.name, rf, tc.reason, want)
		if rf != nil && rf.hint != "kubectl get browserwindows -n ns -l tabwarden.dev/session=s1" {
			t.Errorf("%s: hint %q", tc.name, rf.hint)
		}
	}
}

func TestAdmitPage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		phase    twv1.WindowPhase
		recorded bool
		err      error
		reason   string
		msg      string
		hint     string
	}{
		{name: "recorded", phase: twv1.WindowOpen, recorded: true},
		// A recorded page is the agent's whatever the status says.
		{name: "recorded, status says Gone", phase: twv1.WindowGone, recorded: true},
		{name: "browser away", phase: twv1.WindowOpen, err: browser.ErrNotConnected, reason: twv1.ReasonBrowserUnreachable,
			msg: fmt.Sprintf("the browser is unreachable (%v); nothing ran. Try again when the profile is Connected", browser.ErrNotConnected)},
		{name: "gone", phase: twv1.WindowGone, reason: twv1.ReasonPageGone, msg: `window "w1"'s page is gone`,
			hint: "kubectl get browserwindows -n ns -l tabwarden.dev/session=s1"},
		{name: "closed", phase: twv1.WindowClosed, reason: twv1.ReasonPageGone, msg: `window "w1"'s page is closed`},
		{name: "not open yet", phase: twv1.WindowPending, reason: twv1.ReasonWindowNotInSession,
			msg:  `window "w1" has no page this agent opened, adopted or bound (yet): wait until it is Open`,
			hint: "kubectl wait browserwindow/w1 -n ns --for=jsonpath='{.status.phase}'=Open"},
	} {
		w := &twv1.BrowserWindow{}
		w.Namespace, w.Name, w.Spec.SessionRef.Name, w.Status.Phase = "ns", "w1", "s1", tc.phase
		rf := admitPage(guardAction(), guardSession(), w, tc.recorded, tc.err)
		checkRefusal(t, tc.name, rf, tc.reason, tc.msg)
		if rf != nil && tc.hint != "" && rf.hint != tc.hint {
			t.Errorf("%s: hint %q, want %q", tc.name, rf.hint, tc.hint)
		}
	}
}

// stepOf is a valid step of each type.
func stepOf(st twv1.StepType) twv1.ActionStep {
	step := twv1.ActionStep{Type: st}
	switch st {
	case twv1.StepNavigate:
		step.URL = "https://example.com/"
	case twv1.StepClick, twv1.StepTypeText:
		step.Target = &twv1.ActionTarget{Text: "Send"}
		step.Text = "hello"
	case twv1.StepHover:
		step.Target = &twv1.ActionTarget{Text: "Send"}
	case twv1.StepSelect:
		step.Target = &twv1.ActionTarget{Text: "Send"}
		step.Text = "Canada"
	case twv1.StepFill:
		step.Fields = []twv1.FillField{{Target: &twv1.ActionTarget{Text: "Name"}, Text: "Ada"}, {Target: &twv1.ActionTarget{Text: "Email"}, Text: "ada@example.com"}}
	case twv1.StepPress:
		step.Key = "Enter"
	case twv1.StepWait:
		step.Text = "Send"
	case twv1.StepDialog:
		step.Answer = twv1.DialogDismiss
	}
	return step
}

// TestCheckStepFollowsTheGuardTable puts each per-step guard's situation in
// place and runs every step type: the guard refuses exactly the step types the
// table (GuardCoverage) says it applies to.
func TestCheckStepFollowsTheGuardTable(t *testing.T) {
	for _, tc := range []struct {
		guard   string
		s       func(*twv1.BrowserSession)
		step    func(*twv1.ActionStep)
		unacked []string
	}{
		{guard: twv1.ReasonWaitingForUser, s: func(s *twv1.BrowserSession) { s.Spec.State = twv1.SessionWaitingForUser }},
		{guard: twv1.ReasonUnacknowledgedSpawns, unacked: []string{"s1-spawn-1"}},
		{guard: twv1.ReasonFocusViolation, step: func(st *twv1.ActionStep) { st.Key = "Control+t" }},
	} {
		for _, st := range twv1.StepTypes {
			s, step := guardSession(), stepOf(st)
			if tc.s != nil {
				tc.s(s)
			}
			if tc.step != nil {
				tc.step(&step)
			}
			rf, err := checkStep(guardAction(step), s, step, stepLookups{
				unacknowledged: func() ([]string, error) { return tc.unacked, nil },
				checkURL:       func(string) *refusal { return nil },
			})
			if err != nil {
				t.Fatalf("%s/%s: %v", tc.guard, st, err)
			}
			want := ""
			if GuardCoverage[tc.guard][st].Applies {
				want = tc.guard
			}
			checkRefusal(t, tc.guard+"/"+string(st), rf, want, "")
		}
	}
}

func TestCheckStep(t *testing.T) {
	lookupErr := errors.New("the cache is gone")
	urlRefusal := refuse(twv1.ReasonURLNotAllowed, "kubectl patch ...", "navigate url refused")
	for _, tc := range []struct {
		name    string
		s       func(*twv1.BrowserSession)
		step    twv1.ActionStep
		unacked []string
		lookErr error
		url     *refusal
		reason  string
		msg     string
		hint    string
		err     error
		// asked says which lookups the guards may call.
		askUnacked, askURL bool
	}{
		{name: "observe", step: stepOf(twv1.StepObserve)},
		{name: "click", step: stepOf(twv1.StepClick), askUnacked: true},
		{name: "navigate", step: stepOf(twv1.StepNavigate), askUnacked: true, askURL: true},
		{name: "waiting for the user", s: func(s *twv1.BrowserSession) { s.Spec.State = twv1.SessionWaitingForUser }, step: stepOf(twv1.StepClick),
			reason: twv1.ReasonWaitingForUser,
			msg:    `session "s1" waits for the user: automated Click steps are refused until the user resumes it, and refs observed before need a fresh observation then. The user resumes with`,
			hint:   hint.Resume("ns", "s1")},
		{name: "waiting for the user, then finished", s: func(s *twv1.BrowserSession) {
			s.Spec.State = twv1.SessionWaitingForUser
			s.Status.EndReason = twv1.ReasonAbandoned
		}, step: stepOf(twv1.StepScroll), reason: twv1.ReasonWaitingForUser},
		{name: "ended while the action ran", s: func(s *twv1.BrowserSession) { s.Spec.State = twv1.SessionFinished }, step: stepOf(twv1.StepObserve),
			reason: twv1.ReasonSessionFinished, msg: `session "s1" ended while the action ran`, hint: "kubectl get browsersession s1 -n ns"},
		{name: "ended, with unacknowledged spawns", s: func(s *twv1.BrowserSession) { s.Spec.State = twv1.SessionFinished }, step: stepOf(twv1.StepClick),
			unacked: []string{"x"}, reason: twv1.ReasonSessionFinished},
		{name: "unacknowledged spawns", step: stepOf(twv1.StepTypeText), unacked: []string{"s1-a", "s1-b"}, askUnacked: true,
			reason: twv1.ReasonUnacknowledgedSpawns,
			msg:    `session "s1" has 2 spawned window(s) with no disposition (s1-a, s1-b): say keep (Keep), close (Close) or temporary (Temporary) for each before the next Type step`,
			hint:   hint.AckAll("ns", []string{"s1-a", "s1-b"}, twv1.DispositionClose)},
		{name: "unacknowledged spawns before a focus shortcut", step: twv1.ActionStep{Type: twv1.StepPress, Key: "Mod+t"}, unacked: []string{"s1-a"}, askUnacked: true,
			reason: twv1.ReasonUnacknowledgedSpawns},
		{name: "the spawns cannot be listed", step: stepOf(twv1.StepClick), lookErr: lookupErr, askUnacked: true, err: lookupErr},
		{name: "focus shortcut", step: twv1.ActionStep{Type: twv1.StepPress, Key: "Mod+t"}, askUnacked: true,
			reason: twv1.ReasonFocusViolation,
			msg:    `key "Mod+t" is a browser shortcut that opens, switches or focuses tabs or windows; tabwarden never focuses. Press keys the page handles (Enter, Tab, Escape, letters...)`},
		{name: "url not allowed", step: stepOf(twv1.StepNavigate), url: urlRefusal, askUnacked: true, askURL: true, reason: twv1.ReasonURLNotAllowed, msg: "navigate url refused"},
		{name: "url not allowed, unacknowledged first", step: stepOf(twv1.StepNavigate), url: urlRefusal, unacked: []string{"s1-a"}, askUnacked: true,
			reason: twv1.ReasonUnacknowledgedSpawns},
	} {
		s := guardSession()
		if tc.s != nil {
			tc.s(s)
		}
		act := guardAction(tc.step)
		askedUnacked, askedURL := false, ""
		rf, err := checkStep(act, s, tc.step, stepLookups{
			unacknowledged: func() ([]string, error) { askedUnacked = true; return tc.unacked, tc.lookErr },
			checkURL:       func(raw string) *refusal { askedURL = raw; return tc.url },
		})
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
		}
		checkRefusal(t, tc.name, rf, tc.reason, tc.msg)
		if rf != nil && tc.hint != "" && rf.hint != tc.hint {
			t.Errorf("%s: hint %q, want %q", tc.name, rf.hint, tc.hint)
		}
		if askedUnacked && !tc.askUnacked {
			t.Errorf("%s: listed the spawns for nothing", tc.name)
		}
		if askedURL != "" && (!tc.askURL || askedURL != tc.step.URL) {
			t.Errorf("%s: checked url %q", tc.name, askedURL)
		}
	}
	// The corrected call of a focus shortcut presses Enter instead.
	press := twv1.ActionStep{Type: twv1.StepPress, Key: "Control+Tab"}
	act := guardAction(press)
	rf, _ := checkStep(act, guardSession(), press, stepLookups{unacknowledged: func() ([]string, error) { return nil, nil }})
	if rf == nil || rf.hint != hint.Action(act, twv1.ActionStep{Type: twv1.StepPress, Key: "Enter"}) {
		t.Errorf("focus_violation hint: %+v", rf)
	}
}

func TestStaleTarget(t *testing.T) {
	act := guardAction()
	rf := staleTarget(act, "stale_ref", "observation o7 is unknown")
	checkRefusal(t, "stale ref", rf, "stale_ref", "observation o7 is unknown; never retargeted: observe again and use a ref of the new observation")
	if rf.hint != hint.Observe(act) {
		t.Errorf("hint %q, want an observation", rf.hint)
	}
}

func TestDriverRefusal(t *testing.T) {
	click := twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Send"}}
	act := guardAction(click)
	cands := []twv1.ObservedElement{{Ref: "o3.e1", Name: "Send"}, {Ref: "o3.e2", Name: "Send later"}}
	ambiguous := &browser.ActError{Reason: twv1.ReasonAmbiguousTarget, Message: `text "Send" matches 2 visible elements`,
		Candidates: []browser.Element{{ID: "e1"}, {ID: "e2"}}, Document: "d1"}

	rf := driverRefusal(act, click, ambiguous, cands)
	checkRefusal(t, "ambiguous", rf, twv1.ReasonAmbiguousTarget, `text "Send" matches 2 visible elements. Candidates: o3.e1 "Send", o3.e2 "Send later"`)
	fixed := click.DeepCopy()
	fixed.Target = &twv1.ActionTarget{Ref: "o3.e1"}
	if rf.hint != hint.Action(act, *fixed) {
		t.Errorf("ambiguous: hint %q does not retry with the first candidate's ref", rf.hint)
	}
	if len(rf.candidates) != 2 {
		t.Errorf("ambiguous: candidates %+v", rf.candidates)
	}

	// Candidates with no ref (no document to observe them in): named, not retried.
	noRefs := []twv1.ObservedElement{{Name: "Send"}, {Name: "Send later"}}
	rf = driverRefusal(act, click, ambiguous, noRefs)
	if rf.hint != hint.Observe(act) || !strings.Contains(rf.message, "Candidates:") {
		t.Errorf("ambiguous without refs: %+v", rf)
	}

	// Another refusal of the driver's is passed on as it is.
	missing := &browser.ActError{Reason: "target_not_found", Message: "no element"}
	rf = driverRefusal(act, click, missing, nil)
	checkRefusal(t, "not found", rf, "target_not_found", "no element")
	if rf.hint != hint.Observe(act) || rf.candidates != nil {
		t.Errorf("not found: %+v", rf)
	}

	rf = notOwned(act, "w1", browser.ErrNotOwned)
	checkRefusal(t, "not owned", rf, twv1.ReasonWindowNotInSession, fmt.Sprintf(`the driver refused: window "w1" does not own its page (%v)`, browser.ErrNotOwned))
}

func TestFailure(t *testing.T) {
	act := guardAction(twv1.ActionStep{Type: twv1.StepObserve})
	for _, tc := range []struct {
		err    error
		reason string
		hint   string
	}{
		{err: fmt.Errorf("act: %w", browser.ErrNotFound), reason: twv1.ReasonPageGone, hint: "kubectl get browserwindows -n ns -l tabwarden.dev/session=s1"},
		{err: fmt.Errorf("act: %w", browser.ErrNotConnected), reason: twv1.ReasonBrowserUnreachable, hint: hint.Action(act, act.Spec.Steps...)},
		{err: errors.New("the page crashed"), reason: twv1.ReasonStepFailed, hint: hint.Observe(act)},
	} {
		rf := failure(act, tc.err)
		checkRefusal(t, tc.err.Error(), rf, tc.reason, "")
		if rf.hint != tc.hint || !strings.Contains(rf.message, tc.err.Error()) {
			t.Errorf("%v: %+v", tc.err, rf)
		}
	}
}

func TestEndingRefusals(t *testing.T) {
	rf := sessionEndedDuring(guardSession(), 2)
	checkRefusal(t, "ended", rf, twv1.ReasonSessionFinished,
		`session "s1" ended while the action ran: step 2 and after did not run, and the session's pages close. Start a new session to continue`)
	act := guardAction()
	rf = agentRestarted(act)
	checkRefusal(t, "restarted", rf, ReasonAgentRestarted,
		"the agent restarted while the action ran; some of its steps may have run. Observe the page and act again")
	if rf.hint != hint.Observe(act) {
		t.Errorf("restarted: hint %q", rf.hint)
	}
}

func TestNoKeepalive(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := created.Add(90 * time.Minute)
	idle := func(d time.Duration) func() *metav1.Duration {
		return func() *metav1.Duration { return &metav1.Duration{Duration: d} }
	}
	for _, tc := range []struct {
		name      string
		keepalive bool
		warnAfter time.Duration
		hostIdle  func() *metav1.Duration
		want      string
	}{
		{name: "driven long, host ends idle connections", warnAfter: time.Hour, hostIdle: idle(10 * time.Minute),
			want: `no_keepalive: session "s1" has been driven for 1h30m0s on profile "p1", whose host ends connections idle for 10m0s, and has no keepalive. Add one: ` + hint.Keepalive("ns", "s1", "5m0s")},
		{name: "a short idle timeout: a keepalive every 5s at least", warnAfter: time.Hour, hostIdle: idle(4 * time.Second),
			want: `no_keepalive: session "s1" has been driven for 1h30m0s on profile "p1", whose host ends connections idle for 4s, and has no keepalive. Add one: ` + hint.Keepalive("ns", "s1", "5s")},
		{name: "has a keepalive", keepalive: true, warnAfter: time.Hour},
		{name: "not driven long yet", warnAfter: 2 * time.Hour},
		{name: "the host keeps idle connections", warnAfter: time.Hour, hostIdle: func() *metav1.Duration { return nil }},
	} {
		s := guardSession()
		s.CreationTimestamp = metav1.NewTime(created)
		if tc.keepalive {
			s.Spec.Keepalive = &twv1.KeepalivePolicy{}
		}
		read := tc.hostIdle
		if read == nil {
			read = func() *metav1.Duration { t.Errorf("%s: read the profile for nothing", tc.name); return nil }
		}
		if got := noKeepalive(s, "p1", tc.warnAfter, now, read); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestDialogRefusalsTeach: dialog_open's hint is the Dialog step that answers
// the page's dialog; no_dialog's is a fresh observation; a step that left a
// dialog open says so and names the Dialog step.
func TestDialogRefusalsTeach(t *testing.T) {
	act := guardAction(twv1.ActionStep{Type: twv1.StepObserve})
	open := driverRefusal(act, act.Spec.Steps[0], browser.DialogOpen(browser.Dialog{Type: "confirm", Message: "Delete everything?"}), nil)
	if open.reason != twv1.ReasonDialogOpen || open.hint != hint.Action(act, twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogDismiss}) {
		t.Errorf("dialog_open: %s, hint %q, want the Dialog step", open.reason, open.hint)
	}
	if !strings.Contains(open.message, `confirm "Delete everything?"`) || !strings.Contains(open.message, "Dialog step") {
		t.Errorf("dialog_open message %q does not name the dialog and the Dialog step", open.message)
	}
	none := driverRefusal(act, twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogAccept}, browser.NoDialog(), nil)
	if none.reason != twv1.ReasonNoDialog || none.hint != hint.Observe(act) {
		t.Errorf("no_dialog: %s, hint %q, want an observation", none.reason, none.hint)
	}
	msg := dialogLeftOpen(&twv1.OpenDialog{Type: "prompt", Message: "New name?", DefaultPrompt: "draft"})
	for _, want := range []string{`prompt dialog: "New name?"`, `default answer "draft"`, "dialog_open", "{type: Dialog, answer: Accept}", "dismissed after 5m0s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
}
