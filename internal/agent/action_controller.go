package agent

import (
	"context"
	"fmt"
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
	// Read the action again after waiting for the session's lock, from the
	// cache: no read from the API server on the way to the claim (it cost every
	// action a round trip). A cache behind the API server is harmless here:
	// an action this agent finished is remembered (ranHere), and the claim
	// and every other status write of the action carry the resourceVersion read
	// here (write: optimistic lock), so a version older than the API server's —
	// finished, refused or claimed meanwhile by anyone — makes the write a
	// conflict, and the reconcile that follows reads again: nothing runs on a
	// stale read.
	if err := a.client.Get(ctx, req.NamespacedName, act); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if act.Status.Phase.Finished() || r.ranHere(act) {
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("session", s.Name, "window", act.Spec.WindowRef.Name))
	run := &actionRun{agent: a, act: act, before: act.DeepCopy(), session: s}
	if act.Status.Phase == twv1.ActionRunning {
		// Claimed before this agent (re)started: some steps may have run.
		run.finish(ctx, twv1.ActionFailed, agentRestarted(act))
	} else {
		run.execute(ctx)
	}
	if err := run.write(ctx); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	if run.tell != nil {
		run.tell()
	}
	if run.act.Status.Phase.Finished() {
		r.finished(act)
	}
	return ctrl.Result{}, nil
}

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
	// stepSettle is what the step that ran last left to settle, set by step
	// once the driver ran it (a step refused before leaves nothing).
	stepSettle spawnSettle
	// claimErr is the error of a claim that was not written.
	claimErr error
	// tell records the finished action's Event, log line and metric (finish),
	// once its result is written.
	tell func()
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

	// pending is what the last mutating step left to settle (spawnwatch.go).
	var pending spawnSettle
	for i, step := range act.Spec.Steps {
		if sessionEnded(stepCtx) {
			run.collectSpawns(ctx, pending)
			run.finish(ctx, twv1.ActionRefused, sessionEndedDuring(s, i))
			return
		}
		if step.Type.Mutating() && pending.needed() {
			a.settle(ctx, run.spawned, pending)
			pending = spawnSettle{}
		}
		run.stepSettle = spawnSettle{}
		res, rf, err := run.step(stepCtx, i, step)
		if step.Type.Mutating() {
			pending = run.stepSettle
		}
		if err != nil && sessionEnded(stepCtx) {
			// The step in flight was cut short by the session's end.
			rf, err = sessionEndedDuring(s, i+1), nil
			res.Phase, res.Reason, res.Message = twv1.ActionRefused, rf.reason, rf.message
		}
		act.Status.Steps = append(act.Status.Steps, res)
		switch {
		case rf != nil:
			if rf.reason == twv1.ReasonSessionFinished {
				// Whatever the steps spawned is adopted before the pages close.
				pending.blind = true
			}
			run.collectSpawns(ctx, pending)
			run.finish(ctx, twv1.ActionRefused, rf)
			return
		case err != nil:
			pending.blind = true
			run.collectSpawns(ctx, pending)
			run.finish(ctx, twv1.ActionFailed, failure(act, err))
			return
		}
	}
	run.collectSpawns(ctx, pending)
	run.finish(ctx, twv1.ActionSucceeded, nil)
}

// collectSpawns copies the windows adopted meanwhile into the status, after
// settling what the last mutating step left (spawnSettle).
func (run *actionRun) collectSpawns(ctx context.Context, pending spawnSettle) {
	if run.spawned == nil {
		return
	}
	if pending.needed() {
		run.agent.settle(ctx, run.spawned, pending)
	}
	run.act.Status.Spawned = run.agent.withSpawnURLs(ctx, run.act.Namespace, run.agent.spawnWatch.snapshot(run.spawned))
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
	conditions.Action(act)
	// Told once the result is written (Reconcile): a result the API server
	// refuses (a conflict: the cache's copy was behind) happened to no one.
	message, hint, reason := act.Status.Message, act.Status.Hint, act.Status.Reason
	run.tell = func() {
		if phase == twv1.ActionRefused {
			a.recorder.Eventf(act, run.session, corev1.EventTypeWarning, twv1.EventActionRefused, "Act", "%s: %s Corrected call: %s", reason, message, hint)
		}
		ctrl.LoggerFrom(ctx).Info("Action finished", "action", act.Name, "phase", phase, "reason", reason)
		a.metrics().ActionFinished(string(phase), reason, run.claimedAt)
	}
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
