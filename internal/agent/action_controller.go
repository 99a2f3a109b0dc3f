package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/k8s/conditions"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
)

// ActionReconciler runs the BrowserActions of the sessions placed on this
// profile: it checks the guards, runs the steps through the driver one at a
// time (one action at a time per session), and writes the result. An action
// runs at most once: the agent claims it (status Running, its profile) before
// the first step, and an action found claimed after a restart is failed, not
// run again, since some of its steps may have run.
type ActionReconciler struct {
	agent *Agent
	// done remembers the actions this agent finished, so that a reconcile that
	// reads a cache not showing the result yet never runs one again; an entry
	// goes once the cache shows the action finished or gone.
	done sync.Map // types.NamespacedName → types.UID
	// locksMu guards sessions.
	locksMu sync.Mutex
	// sessions serializes the actions of one session; an entry lives while an
	// action of its session runs or waits to.
	sessions map[types.UID]*sessionLock
}

// sessionLock is one session's action lock and how many reconciles hold or
// wait for it.
type sessionLock struct {
	sync.Mutex
	users int
}

// SetupWithManager registers the reconciler: unfinished actions, and sessions
// mapped to their unfinished actions (an action waits for its session to be
// placed).
func (r *ActionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserAction{}, builder.WithPredicates(actionEvents())).
		Watches(&twv1.BrowserSession{}, handler.EnqueueRequestsFromMapFunc(r.sessionToActions),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return true },
				UpdateFunc:  func(e event.UpdateEvent) bool { return sessionPlacementChanged(e.ObjectOld, e.ObjectNew) },
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 8, NeedLeaderElection: ptrTo(false)}).
		Named("browseraction-agent").
		Complete(handlers.Quiet(r))
}

// actionEvents lets through the actions still to run, and the events that
// show a remembered action finished or gone (so that done forgets it).
func actionEvents() predicate.Funcs {
	unfinished := func(o client.Object) bool { return !o.(*twv1.BrowserAction).Status.Phase.Finished() }
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return unfinished(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return unfinished(e.ObjectOld) || unfinished(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(e event.GenericEvent) bool { return unfinished(e.Object) },
	}
}

func sessionPlacementChanged(o, n client.Object) bool {
	return o.(*twv1.BrowserSession).Status.ProfileName != n.(*twv1.BrowserSession).Status.ProfileName
}

func (r *ActionReconciler) sessionToActions(ctx context.Context, o client.Object) []reconcile.Request {
	if o.(*twv1.BrowserSession).Status.ProfileName != r.agent.opts.Profile {
		return nil
	}
	var list twv1.BrowserActionList
	if err := r.agent.client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{twv1.SessionRefIndex: o.GetName()}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if !list.Items[i].Status.Phase.Finished() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// lock takes session uid's action lock; the returned func releases it, and
// drops the entry when no other reconcile holds or waits for it.
func (r *ActionReconciler) lock(uid types.UID) func() {
	r.locksMu.Lock()
	if r.sessions == nil {
		r.sessions = map[types.UID]*sessionLock{}
	}
	l := r.sessions[uid]
	if l == nil {
		l = &sessionLock{}
		r.sessions[uid] = l
	}
	l.users++
	r.locksMu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		r.locksMu.Lock()
		if l.users--; l.users == 0 {
			delete(r.sessions, uid)
		}
		r.locksMu.Unlock()
	}
}

// finished remembers that this agent finished act, until the cache shows it.
func (r *ActionReconciler) finished(act *twv1.BrowserAction) {
	r.done.Store(client.ObjectKeyFromObject(act), act.UID)
}

// ranHere reports whether this agent finished act (the cache may not show it yet).
func (r *ActionReconciler) ranHere(act *twv1.BrowserAction) bool {
	uid, ok := r.done.Load(client.ObjectKeyFromObject(act))
	return ok && uid.(types.UID) == act.UID
}

// Reconcile takes an action of a session placed here and runs it.
func (r *ActionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	a := r.agent
	act := &twv1.BrowserAction{}
	if err := a.client.Get(ctx, req.NamespacedName, act); err != nil {
		if apierrors.IsNotFound(err) {
			r.done.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if act.Status.Phase.Finished() {
		// The cache shows the result: nothing to remember any more.
		r.done.Delete(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if r.ranHere(act) {
		return ctrl.Result{}, nil
	}
	s := &twv1.BrowserSession{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: act.Namespace, Name: act.Spec.SessionRef.Name}, s); err != nil {
		// The controller refuses an action whose session does not exist.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The controller stamps the action with its session's profile; only that
	// profile's agent may claim it (config/admission/action_status.yaml).
	if s.Status.ProfileName != a.opts.Profile || act.Labels[twv1.ProfileLabel] != a.opts.Profile ||
		(act.Status.ProfileName != "" && act.Status.ProfileName != a.opts.Profile) {
		return ctrl.Result{}, nil
	}
	unlock := r.lock(s.UID)
	defer unlock()
	// Read the action itself, not the cache: another reconcile of it may have
	// finished while this one waited for the session's lock.
	if err := a.reader.Get(ctx, req.NamespacedName, act); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if act.Status.Phase.Finished() {
		r.finished(act)
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("session", s.Name, "window", act.Spec.WindowRef.Name))
	run := &actionRun{agent: a, act: act, before: act.DeepCopy(), session: s}
	if act.Status.Phase == twv1.ActionRunning {
		// Claimed before this agent (re)started: some steps may have run.
		run.finish(ctx, twv1.ActionFailed, &refusal{reason: ReasonAgentRestarted,
			message: "the agent restarted while the action ran; some of its steps may have run. Observe the page and act again",
			hint:    hint.Observe(act)})
	} else {
		run.execute(ctx)
	}
	if err := run.write(ctx); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	if run.act.Status.Phase.Finished() {
		r.finished(act)
	}
	return ctrl.Result{}, nil
}

// ReasonAgentRestarted: an action the agent had claimed when it stopped; it is
// failed rather than run twice.
const ReasonAgentRestarted = "agent_restarted"

// actionRun is one action being run.
type actionRun struct {
	agent   *Agent
	act     *twv1.BrowserAction
	before  *twv1.BrowserAction
	session *twv1.BrowserSession
	window  *twv1.BrowserWindow
	page    browser.Record
	// claimed is set once the Running status is written; claimedAt is when
	// (status.startTime, at full resolution: the API keeps seconds).
	claimed   bool
	claimedAt time.Time
	// spawned collects the windows adopted for the session meanwhile.
	spawned *[]twv1.SpawnedWindow
	// claimErr is the error of a claim that was not written.
	claimErr error
}

// execute checks the action's guards, claims it and runs its steps. It sets the
// action's status; the caller writes it.
func (run *actionRun) execute(ctx context.Context) {
	a, act, s := run.agent, run.act, run.session
	if rf := run.admit(ctx); rf != nil {
		run.finish(ctx, twv1.ActionRefused, rf)
		return
	}
	if w := run.keepaliveWarning(ctx); w != "" {
		act.Status.Warnings = append(act.Status.Warnings, w)
	}
	now := metav1.Now()
	act.Status.Phase, act.Status.ProfileName, act.Status.StartTime = twv1.ActionRunning, a.opts.Profile, &now
	conditions.Action(act)
	if err := run.write(ctx); err != nil {
		// Not claimed: a conflict means someone else wrote it; the next
		// reconcile looks again.
		act.Status = run.before.Status
		run.claimErr = err
		return
	}
	run.claimed, run.claimedAt = true, now.Time
	run.spawned = a.spawnWatch.start(s.Namespace, s.Name)
	defer a.spawnWatch.stop(s.Namespace, s.Name, run.spawned)
	// The steps run under the session's fence: its end cancels them, and its
	// cleanup waits for this function to return before closing anything.
	stepCtx, end := a.fence.begin(ctx, s.UID)
	defer end()

	mayHaveSpawned := false
	for i, step := range act.Spec.Steps {
		if sessionEnded(stepCtx) {
			run.collectSpawns(ctx, mayHaveSpawned)
			run.finish(ctx, twv1.ActionRefused, run.endedRefusal(i))
			return
		}
		if step.Type.Mutating() && mayHaveSpawned {
			a.settle(ctx)
			mayHaveSpawned = false
		}
		res, rf, err := run.step(stepCtx, i, step)
		if err != nil && sessionEnded(stepCtx) {
			// The step in flight was cut short by the session's end.
			rf, err = run.endedRefusal(i+1), nil
			res.Phase, res.Reason, res.Message = twv1.ActionRefused, rf.reason, rf.message
		}
		act.Status.Steps = append(act.Status.Steps, res)
		switch {
		case rf != nil:
			run.collectSpawns(ctx, mayHaveSpawned || rf.reason == twv1.ReasonSessionFinished)
			run.finish(ctx, twv1.ActionRefused, rf)
			return
		case err != nil:
			run.collectSpawns(ctx, true)
			run.finish(ctx, twv1.ActionFailed, failure(act, err))
			return
		}
		if step.Type.Mutating() {
			mayHaveSpawned = true
		}
	}
	run.collectSpawns(ctx, mayHaveSpawned)
	run.finish(ctx, twv1.ActionSucceeded, nil)
}

// endedRefusal is session_finished for an action whose session ended before
// step next: no step from next on ran.
func (run *actionRun) endedRefusal(next int) *refusal {
	s := run.session
	return refuse(twv1.ReasonSessionFinished, fmt.Sprintf("kubectl get browsersession %s -n %s", s.Name, s.Namespace),
		"session %q ended while the action ran: step %d and after did not run, and the session's pages close. Start a new session to continue", s.Name, next)
}

// collectSpawns copies the windows adopted meanwhile into the status, after
// letting the browser report what the last steps spawned.
func (run *actionRun) collectSpawns(ctx context.Context, settle bool) {
	if run.spawned == nil {
		return
	}
	if settle {
		run.agent.settle(ctx)
	}
	run.act.Status.Spawned = run.agent.spawnWatch.snapshot(run.spawned)
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

// finish ends the action with phase; rf says why it did not succeed.
func (run *actionRun) finish(ctx context.Context, phase twv1.ActionPhase, rf *refusal) {
	a, act := run.agent, run.act
	now := metav1.Now()
	act.Status.Phase, act.Status.ProfileName, act.Status.CompletionTime = phase, a.opts.Profile, &now
	if act.Status.StartTime == nil {
		act.Status.StartTime = &now
	}
	if rf != nil {
		act.Status.Reason = rf.reason
		act.Status.Message = truncate(rf.message, 2048)
		act.Status.Hint = truncate(rf.hint, 2048)
	} else {
		act.Status.Message = fmt.Sprintf("%d step(s) ran", len(act.Spec.Steps))
	}
	if phase == twv1.ActionRefused {
		a.recorder.Eventf(act, run.session, corev1.EventTypeWarning, twv1.EventActionRefused, "Act", "%s: %s Corrected call: %s", rf.reason, act.Status.Message, act.Status.Hint)
	}
	conditions.Action(act)
	ctrl.LoggerFrom(ctx).Info("Action finished", "action", act.Name, "phase", phase, "reason", act.Status.Reason)
	a.metrics().ActionFinished(string(phase), act.Status.Reason, run.claimedAt)
}

// write patches the action's status with optimistic locking (one write for an
// action refused up front; the claim and the result otherwise).
func (run *actionRun) write(ctx context.Context) error {
	if run.claimErr != nil {
		err := run.claimErr
		run.claimErr = nil
		return err
	}
	a := run.agent
	err := a.client.Status().Patch(ctx, run.act, client.MergeFromWithOptions(run.before, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		return err
	}
	run.before = run.act.DeepCopy()
	return nil
}

// admit runs the guards that concern the whole action, before any step:
// session_finished, session_owned_by_another_thread, profile_mismatch,
// profile_not_allowed and window_not_in_session (or page_gone).
func (run *actionRun) admit(ctx context.Context) *refusal {
	a, act, s := run.agent, run.act, run.session
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
		return refuse(twv1.ReasonProfileNotAllowed, fmt.Sprintf("kubectl get browsersession %s -n %s -o yaml", s.Name, s.Namespace), "%s", revokedMessage(s, a.opts.Profile))
	}
	w := &twv1.BrowserWindow{}
	key := client.ObjectKey{Namespace: act.Namespace, Name: act.Spec.WindowRef.Name}
	err := a.client.Get(ctx, key, w)
	if apierrors.IsNotFound(err) {
		// Created a moment ago: the cache may not show it yet.
		err = a.reader.Get(ctx, key, w)
	}
	list := fmt.Sprintf("kubectl get browserwindows -n %s -l %s=%s", act.Namespace, twv1.SessionLabel, s.Name)
	if err != nil || w.Spec.SessionRef.Name != s.Name {
		return refuse(twv1.ReasonWindowNotInSession, list, "window %q is not a window of session %q in this profile; name one of the session's windows", act.Spec.WindowRef.Name, s.Name)
	}
	rec, ok, err := a.confirmRecord(ctx, w)
	switch {
	case err != nil:
		return refuse(twv1.ReasonBrowserUnreachable, hint.Action(act, act.Spec.Steps...), "the browser is unreachable (%v); nothing ran. Try again when the profile is Connected", err)
	case !ok && (w.Status.Phase == twv1.WindowGone || w.Status.Phase == twv1.WindowClosed):
		return refuse(twv1.ReasonPageGone, list, "window %q's page is %s", w.Name, strings.ToLower(string(w.Status.Phase)))
	case !ok:
		return refuse(twv1.ReasonWindowNotInSession, fmt.Sprintf("kubectl wait browserwindow/%s -n %s --for=jsonpath='{.status.phase}'=Open", w.Name, w.Namespace),
			"window %q has no page this agent opened, adopted or bound (yet): wait until it is Open", w.Name)
	}
	run.window, run.page = w, rec
	return nil
}

// keepaliveWarning is the no_keepalive warning, or "".
func (run *actionRun) keepaliveWarning(ctx context.Context) string {
	a, s := run.agent, run.session
	if s.Spec.Keepalive != nil || time.Since(s.CreationTimestamp.Time) < a.opts.KeepaliveWarnAfter {
		return ""
	}
	p := &twv1.BrowserProfile{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: a.opts.Profile}, p); err != nil || p.Spec.HostIdleTimeout == nil {
		return ""
	}
	interval := p.Spec.HostIdleTimeout.Duration / 2
	if interval < 5*time.Second {
		interval = 5 * time.Second
	}
	return fmt.Sprintf("%s: session %q has been driven for %s on profile %q, whose host ends connections idle for %s, and has no keepalive. Add one: %s",
		twv1.ReasonNoKeepalive, s.Name, time.Since(s.CreationTimestamp.Time).Round(time.Second), a.opts.Profile, p.Spec.HostIdleTimeout.Duration,
		hint.Keepalive(s.Namespace, s.Name, interval.String()))
}

// currentSession re-reads the session from the cache: the user may have
// started waiting since the action began. A session the cache shows waiting is
// read from the API server, so that a resume the cache has not seen yet does
// not refuse.
func (run *actionRun) currentSession(ctx context.Context) *twv1.BrowserSession {
	s := &twv1.BrowserSession{}
	if err := run.agent.client.Get(ctx, client.ObjectKeyFromObject(run.session), s); err != nil {
		return run.session
	}
	if s.Spec.State == twv1.SessionWaitingForUser {
		live := &twv1.BrowserSession{}
		if err := run.agent.reader.Get(ctx, client.ObjectKeyFromObject(s), live); err == nil {
			return live
		}
	}
	return s
}

// unacknowledged names the session's spawned windows with no disposition: the
// ones the cache shows, confirmed against the API server (an acknowledgement
// the cache has not seen yet must not refuse), and the ones adopted while this
// action ran that the cache does not show yet.
func (run *actionRun) unacknowledged(ctx context.Context) ([]string, error) {
	a, s := run.agent, run.session
	var list twv1.BrowserWindowList
	if err := a.client.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{twv1.SessionRefIndex: s.Name}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for i := range list.Items {
		w := &list.Items[i]
		seen[w.Name] = true
		if !w.Unacknowledged() {
			continue
		}
		live := &twv1.BrowserWindow{}
		if err := a.reader.Get(ctx, client.ObjectKeyFromObject(w), live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if live.Unacknowledged() {
			out = append(out, w.Name)
		}
	}
	if run.spawned != nil {
		for _, sp := range a.spawnWatch.snapshot(run.spawned) {
			if !seen[sp.Name] {
				out = append(out, sp.Name)
			}
		}
	}
	return out, nil
}

// step runs step i: its guards (waiting_for_user, unacknowledged_spawns,
// focus_violation, stale_ref, stale_coordinates), then the driver, which
// refuses ambiguous, missing and stale targets from the page's state.
func (run *actionRun) step(ctx context.Context, i int, step twv1.ActionStep) (twv1.StepResult, *refusal, error) {
	a, act := run.agent, run.act
	res := twv1.StepResult{Index: int32(i), Type: step.Type}
	refused := func(rf *refusal) (twv1.StepResult, *refusal, error) {
		res.Phase, res.Reason, res.Message, res.Candidates = twv1.ActionRefused, rf.reason, truncate(rf.message, 2048), rf.candidates
		return res, rf, nil
	}
	s := run.currentSession(ctx)
	if s.Spec.State == twv1.SessionWaitingForUser && (step.Type.Mutating() || step.Type == twv1.StepScroll) {
		a.observations.forgetSession(s.UID)
		return refused(refuse(twv1.ReasonWaitingForUser, hint.Resume(s.Namespace, s.Name),
			"session %q waits for the user: automated %s steps are refused until the user resumes it, and refs observed before need a fresh observation then. The user resumes with", s.Name, step.Type))
	}
	if s.Ended() {
		return refused(refuse(twv1.ReasonSessionFinished, fmt.Sprintf("kubectl get browsersession %s -n %s", s.Name, s.Namespace), "session %q ended while the action ran", s.Name))
	}
	if step.Type.Mutating() {
		unacked, err := run.unacknowledged(ctx)
		if err != nil {
			return res, nil, err
		}
		if len(unacked) > 0 {
			return refused(refuse(twv1.ReasonUnacknowledgedSpawns, hint.AckAll(s.Namespace, unacked, twv1.DispositionClose),
				"session %q has %d spawned window(s) with no disposition (%s): say keep (Keep), close (Close) or temporary (Temporary) for each before the next %s step",
				s.Name, len(unacked), strings.Join(unacked, ", "), step.Type))
		}
	}
	if step.Type == twv1.StepPress && focusShortcut(step.Key) {
		return refused(refuse(twv1.ReasonFocusViolation, hint.Action(act, twv1.ActionStep{Type: twv1.StepPress, Key: "Enter"}),
			"key %q is a browser shortcut that opens, switches or focuses tabs or windows; tabwarden never focuses. Press keys the page handles (Enter, Tab, Escape, letters...)", step.Key))
	}
	if step.Type == twv1.StepNavigate {
		if rf := a.checkURL(ctx, step.URL, "navigate url"); rf != nil {
			return refused(rf)
		}
	}
	bstep, rf := run.browserStep(step, s)
	if rf != nil {
		return refused(rf)
	}
	out, err := a.opts.Browser.Act(ctx, browser.ActRequest{
		Key:   ActionKey(act.Namespace, s.Name, run.window.Name),
		Owner: run.page.Key,
		Page:  run.page.Page,
		Step:  bstep,
	})
	var ae *browser.ActError
	switch {
	case errors.As(err, &ae):
		rf := &refusal{reason: ae.Reason, message: ae.Message, hint: hint.Observe(act)}
		obsID := ""
		if ae.Document != "" && len(ae.Candidates) > 0 {
			// The candidates are refs of the page as it is now: an observation
			// of their own, so that the caller can pick one.
			obsID = a.observations.add(observation{session: s.UID, sessionGeneration: s.Generation, page: run.page.Page, document: ae.Document, epoch: ae.Epoch, at: time.Now()})
		}
		for _, c := range ae.Candidates {
			rf.candidates = append(rf.candidates, run.element(obsID, c))
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
		return refused(rf)
	case errors.Is(err, browser.ErrNotOwned):
		return refused(refuse(twv1.ReasonWindowNotInSession, hint.Observe(act), "the driver refused: window %q does not own its page (%v)", run.window.Name, err))
	case err != nil:
		res.Phase, res.Reason, res.Message = twv1.ActionFailed, failure(act, err).reason, truncate(err.Error(), 2048)
		return res, nil, err
	}
	res.Phase = twv1.ActionSucceeded
	if o := out.Observation; o != nil {
		id := a.observations.add(observation{session: s.UID, sessionGeneration: s.Generation, page: run.page.Page, document: o.Document, epoch: o.Epoch, at: time.Now()})
		obs := &twv1.Observation{ID: id, URL: truncate(o.URL, 4096), Title: truncate(o.Title, 512), ScrollX: int32(o.ScrollX), ScrollY: int32(o.ScrollY), Truncated: o.Truncated}
		for _, e := range o.Elements {
			if len(obs.Elements) == 500 {
				obs.Truncated = true
				break
			}
			obs.Elements = append(obs.Elements, run.element(id, e))
		}
		res.Observation = obs
		act.Status.Observation = obs
		res.Message = fmt.Sprintf("observation %s: %d element(s)", id, len(obs.Elements))
	}
	return res, nil, nil
}

// element is a driver element as the API shows it, its ref qualified by the
// observation id.
func (run *actionRun) element(obsID string, e browser.Element) twv1.ObservedElement {
	ref := ""
	if obsID != "" {
		ref = obsID + "." + e.ID
	}
	return twv1.ObservedElement{Ref: ref, Role: truncate(e.Role, 64), Name: truncate(e.Name, 256),
		X: int32(e.X), Y: int32(e.Y), Width: int32(e.Width), Height: int32(e.Height)}
}

// browserStep turns an API step into the driver's, resolving refs and points
// against the observations they came from.
func (run *actionRun) browserStep(step twv1.ActionStep, s *twv1.BrowserSession) (browser.Step, *refusal) {
	bs := browser.Step{Text: step.Text, Key: step.Key, URL: step.URL, MaxElements: 200}
	switch step.Type {
	case twv1.StepObserve:
		bs.Kind = browser.StepObserve
	case twv1.StepNavigate:
		bs.Kind = browser.StepNavigate
	case twv1.StepClick:
		bs.Kind = browser.StepClick
	case twv1.StepTypeText:
		bs.Kind = browser.StepType
	case twv1.StepPress:
		bs.Kind = browser.StepPress
	case twv1.StepScroll:
		bs.Kind = browser.StepScroll
		if step.DeltaX != nil {
			bs.DeltaX = int(*step.DeltaX)
		}
		if step.DeltaY != nil {
			bs.DeltaY = int(*step.DeltaY)
		}
	case twv1.StepWait:
		bs.Kind = browser.StepWait
		bs.Timeout = 10 * time.Second
		if step.Duration != nil {
			bs.Timeout = step.Duration.Duration
		}
		if bs.Timeout > 30*time.Second {
			bs.Timeout = 30 * time.Second
		}
	}
	t := step.Target
	if t == nil {
		return bs, nil
	}
	switch {
	case t.Text != "":
		bs.Target = browser.Target{Text: t.Text}
	case t.Ref != "" || t.X != nil:
		point := t.X != nil
		var x, y float64
		if point {
			x, y = float64(*t.X), float64(*t.Y)
		}
		tg, reason, msg := run.agent.observations.resolve(t.Ref, t.Observation, point, x, y, s.UID, s.Generation, run.page.Page)
		if reason != "" {
			return bs, refuse(reason, hint.Observe(run.act), "%s; never retargeted: observe again and use a ref of the new observation", msg)
		}
		bs.Target = tg
	}
	return bs, nil
}
