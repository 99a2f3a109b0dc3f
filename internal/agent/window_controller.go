package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
)

// WindowReconciler realizes the BrowserWindows of one profile: it opens Open
// windows (held while the session has unacknowledged spawns), closes pages whose
// disposition is Close, reports what the browser shows, and closes or releases
// the page in the tabwarden.dev/page finalizer.
type WindowReconciler struct {
	agent *Agent
}

// SetupWithManager registers the reconciler: this profile's windows, the
// browser's wake-ups, and sessions mapped to their windows (gating follows them).
func (r *WindowReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserWindow{}).
		Watches(&twv1.BrowserSession{}, handler.EnqueueRequestsFromMapFunc(r.sessionToWindows)).
		Watches(&twv1.BrowserWindow{}, handler.EnqueueRequestsFromMapFunc(r.heldSiblings)).
		WatchesRawSource(source.Channel(r.agent.wake, handlers.Coalescing(observeDelay, handlers.Self))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.agent.opts.WindowWorkers, NeedLeaderElection: ptrTo(false)}).
		Named("browserwindow-agent").
		Complete(handlers.Quiet(r))
}

func ptrTo[T any](v T) *T { return &v }

// observeDelay is how long a browser-driven wake-up waits before the window is
// reconciled. Browsers report a new page in stages (created, then its window,
// its url, its title, within tens of milliseconds); waiting lets the work queue
// fold them into one reconcile and one status write. Adoption itself (the
// create) does not wait.
const observeDelay = 100 * time.Millisecond

// Reconcile dispatches one window. It reads the window (one this agent let go
// and the cache still shows is done: patch.LetGo), starts the window's one
// write (windowWrite; its deferred finish sets Ready and the kstatus
// conditions, then patches what changed), and runs, in order: the deletion
// (reconcileDelete), the session (reconcileSession), the page finalizer, and
// the sub-reconcilers, the first result or error of which ends the reconcile:
//
//   - reconcileRegistered: Registered=True and status.profileName;
//   - reconcileProvenance: the window's authority over its page, from the
//     driver's records (Opened=False spawn_not_observed; Bound=False
//     tab_in_use or profile_not_allowed; Opened or Bound False
//     BrowserRestarted after a browser restart);
//   - reconcileOpen: an Open window's page (Opened=False while held or
//     failing, Opened=True once open; Placed for Tab placement);
//   - reconcileDisposition: a page whose disposition is Close (Opened=False
//     Closed);
//   - reconcileObserve: what the browser shows of the page (Opened, or Bound).
func (r *WindowReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	a := r.agent
	w := &twv1.BrowserWindow{}
	if err := a.client.Get(ctx, req.NamespacedName, w); err != nil {
		if apierrors.IsNotFound(err) {
			a.letGo.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if w.Labels[twv1.ProfileLabel] != a.opts.Profile || a.letGo.Gone(w) {
		return ctrl.Result{}, nil
	}
	write := a.startWrite(w)
	defer func() { result, retErr = write.finish(ctx, w, result, retErr) }()

	if !w.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, write, w)
	}
	s, err := r.reconcileSession(ctx, write, w)
	if s == nil || err != nil {
		return ctrl.Result{}, err
	}
	if s.Ended() {
		// The session's end is when its pages go: all at once, from the
		// session's own event, not as each window's deletion arrives. Its
		// windows are about to be deleted (the controller deletes every window
		// of an ended session) and their cleanup lets them go; nothing else is
		// done for them here: no page opens, no claim is checked.
		return ctrl.Result{}, r.closeEnded(ctx, s)
	}
	if controllerutil.AddFinalizer(w, twv1.PageFinalizer) {
		// The finalizer must be stored before a page exists that it would close.
		if err := write.patchNow(ctx, w); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, sub := range []func(context.Context, *twv1.BrowserSession, *twv1.BrowserWindow) (ctrl.Result, error){
		r.reconcileRegistered,
		r.reconcileProvenance,
		r.reconcileOpen,
		r.reconcileDisposition,
		r.reconcileObserve,
	} {
		res, err := sub(ctx, s, w)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcileSession reads the window's session and returns it when this agent
// serves the window, nil otherwise (the reconcile ends, with the error if
// any). A session the cache does not show, or one pinned here and not placed
// yet, writes nothing; one placed on another profile sets Registered=False
// with reason profile_mismatch.
func (r *WindowReconciler) reconcileSession(ctx context.Context, write *windowWrite, w *twv1.BrowserWindow) (*twv1.BrowserSession, error) {
	a := r.agent
	s := &twv1.BrowserSession{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}, s); err != nil {
		// Registered windows name an existing session (its deletion deletes
		// them); one this cache does not show yet brings the window back.
		write.skipStatus()
		return nil, client.IgnoreNotFound(err)
	}
	// The label only selects what this agent caches; what it serves is decided
	// by where the controller placed the session.
	if s.Status.ProfileName == "" && s.Spec.ProfileName == a.opts.Profile {
		// Pinned here and not placed yet (its creator registered the window
		// ahead of the placement): nothing to say, nothing written; the
		// placement brings the window back.
		write.skipStatus()
		return nil, nil
	}
	if s.Status.ProfileName != a.opts.Profile {
		setWindowCondition(w, twv1.RegisteredCondition, metav1.ConditionFalse, twv1.ReasonProfileMismatch,
			fmt.Sprintf("The window is labelled for profile %q but its session %q is placed on %q; the agent of %q serves only windows of sessions placed on it, so nothing of this window is opened or touched here",
				a.opts.Profile, s.Name, s.Status.ProfileName, a.opts.Profile))
		return nil, nil
	}
	return s, nil
}

// reconcileRegistered records that this agent serves the window:
// status.profileName, and Registered=True naming the session's thread and
// purpose.
func (r *WindowReconciler) reconcileRegistered(_ context.Context, s *twv1.BrowserSession, w *twv1.BrowserWindow) (ctrl.Result, error) {
	w.Status.ProfileName = r.agent.opts.Profile
	setWindowCondition(w, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
		fmt.Sprintf("Window of session %q (thread %q): %s", s.Name, s.Spec.Thread, s.Spec.Purpose))
	return ctrl.Result{}, nil
}

func (r *WindowReconciler) event(s *twv1.BrowserSession, w *twv1.BrowserWindow, reason, format string, args ...any) {
	if s != nil {
		r.agent.recorder.Eventf(s, w, corev1.EventTypeNormal, reason, "Cleanup", format, args...)
		return
	}
	r.agent.recorder.Eventf(w, nil, corev1.EventTypeNormal, reason, "Cleanup", format, args...)
}

func (r *WindowReconciler) sessionWindows(ctx context.Context, s *twv1.BrowserSession) ([]twv1.BrowserWindow, error) {
	var list twv1.BrowserWindowList
	err := r.agent.client.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{twv1.SessionRefIndex: s.Name})
	return list.Items, err
}

// sessionToWindows maps a session to its windows that wait for something:
// held Open windows (gating), and every window once the session ends.
func (r *WindowReconciler) sessionToWindows(ctx context.Context, o client.Object) []reconcile.Request {
	var list twv1.BrowserWindowList
	// Read-only: the cache's objects, not copies (a session event maps often).
	if err := r.agent.client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{twv1.SessionRefIndex: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	ended := false
	if s, ok := o.(*twv1.BrowserSession); ok {
		ended = s.Ended()
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		w := &list.Items[i]
		if ended || w.Status.TabID == "" || !w.DeletionTimestamp.IsZero() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		}
	}
	return reqs
}

// heldSiblings maps an acknowledged (or closed) spawned window to the Open
// windows of its session that are held, so they open as soon as nothing is unacknowledged.
func (r *WindowReconciler) heldSiblings(ctx context.Context, o client.Object) []reconcile.Request {
	w := o.(*twv1.BrowserWindow)
	if w.Spec.Source != twv1.SourceSpawned {
		return nil
	}
	var list twv1.BrowserWindowList
	if err := r.agent.client.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingFields{twv1.SessionRefIndex: w.Spec.SessionRef.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		sib := &list.Items[i]
		if sib.Spec.Source == twv1.SourceOpen && sib.Status.TabID == "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(sib)})
		}
	}
	return reqs
}

func (a *Agent) poolProfile() bool { return a.pool.Load() }
