package controllers

import (
	"context"
	"slices"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
	"github.com/tabwarden/tabwarden/internal/metrics"
)

// SessionReconciler reconciles BrowserSessions: it places them on a profile,
// counts and gates their windows, and on deletion or Finished closes their
// temporary windows, releases Keep ones and detaches bound tabs.
type SessionReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// CleanupRequeue is how often an ended session whose pages are still open is
	// looked at again even without a window event (the agent may be away).
	CleanupRequeue time.Duration

	// placeMu serializes placement decisions; reserved holds the placements
	// decided but maybe not yet in the cache (the status write follows the
	// decision), so that a burst of sessions cannot overshoot maxSessions.
	placeMu  sync.Mutex
	reserved map[types.NamespacedName]reservation
	// endedAt is when this controller first saw a session end (spec.state
	// Finished or an idle timeout), for the cleanup duration metric; a deleted
	// session's end is its deletionTimestamp.
	endedAt sync.Map
	// cleaned holds the finished sessions whose cleanup this controller told
	// (Event and metric), until they are deleted: a reconcile on a cache that
	// has not seen the Finished phase yet must not tell it again.
	cleaned sync.Map
	// letGo remembers the sessions whose finalizer this controller removed
	// until the cache sees them go.
	letGo patch.LetGo
	// deletingWrites is when this controller last wrote the status of each
	// deleted session whose windows are going (deletingStatusWait).
	deletingWrites sync.Map
	// deleting remembers the windows of each ended session this controller
	// deleted until the cache shows them deleting (cleanup).
	deleting patch.Deleting
}

// reservation is a placement decided by this controller, counted until the
// cache shows it (or the session is gone, or reservationTTL passed).
type reservation struct {
	profile string
	at      time.Time
}

const reservationTTL = time.Minute

// SetupWithManager registers the reconciler: sessions, and the windows that name them.
func (r *SessionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.CleanupRequeue == 0 {
		r.CleanupRequeue = 30 * time.Second
	}
	r.reserved = map[types.NamespacedName]reservation{}
	leaseHandler, leasePredicate := holderLeases()
	// The session gauges read the cache at scrape time: only once it has
	// synced (the metrics endpoint serves earlier), and no longer once this
	// manager stopped.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		withdraw := metrics.SetSessionReader(mgr.GetClient())
		<-ctx.Done()
		withdraw()
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserSession{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletingPredicate()))).
		// Window changes come in bursts (a page opens, then its url, title and
		// counts move); coalesce them into one session reconcile and status write.
		// Gating does not wait on this: the agent decides from its own cache.
		Watches(&twv1.BrowserWindow{}, r.windowEvents()).
		// A profile's connection, capacity or tenancy changes where sessions may be placed.
		Watches(&twv1.BrowserProfile{}, r.profileHandler()).
		// A namespace's labels change which profiles' selectors admit it.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToSessions), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		// A holder Lease taken, handed over or gone (renewals are not events: see reconcileAbandon).
		Watches(&coordv1.Lease{}, leaseHandler, builder.WithPredicates(leasePredicate)).
		Named("browsersession").
		Complete(handlers.Quiet(r))
}

// Reconcile is a dispatcher. It reads the session and its windows; one
// deferred patch (writeStatus) writes the status the sub-reconcilers set, with
// Ready, Reconciling and Stalled summarized from the rest (session_status.go).
// A deleted session goes to reconcileDelete; a live one gets its finalizer,
// then the sub-reconcilers in order, the first that fails or asks to requeue
// ending the pass:
//
//   - reconcileDelete (session_cleanup.go): phase Finishing, Clean; removes
//     the finalizer once no window remains.
//   - reconcileAbandon (session_abandon.go): Held; ends an abandoned session
//     (status.endReason), before the lifecycle sees it.
//   - reconcilePlacement (session_placement.go): Registered, Admitted and
//     ProfileReachable; status.profileName.
//   - reconcileSpawns (session_spawns.go): SpawnsAcknowledged; the window
//     counts and last activity.
//   - reconcileLifecycle (session_phase.go): the phase and Clean, with the
//     timers of session_lifecycle.go and the cleanup of session_cleanup.go.
func (r *SessionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	session, err := r.getSession(ctx, req)
	if session == nil {
		return ctrl.Result{}, err
	}
	helper := patch.NewHelper(session, r.Client)
	held := controllerutil.ContainsFinalizer(session, twv1.SessionFinalizer)
	var windows []twv1.BrowserWindow
	defer func() { result, retErr = r.writeStatus(ctx, helper, session, windows, held, result, retErr) }()

	if windows, err = liveWindows(ctx, r.Client, session); err != nil {
		return ctrl.Result{}, err
	}
	if !session.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, session, windows)
	}
	if controllerutil.AddFinalizer(session, twv1.SessionFinalizer) {
		// Persist the finalizer before anything can open a page for the session.
		if err := helper.Patch(ctx, session); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Abandonment decides before the lifecycle, which ends an abandoned
	// session; it looks again when abandonAfter would expire.
	abandonIn, err := r.reconcileAbandon(ctx, session)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, sub := range []func(context.Context, *twv1.BrowserSession, []twv1.BrowserWindow) (ctrl.Result, error){
		r.reconcilePlacement,
		r.reconcileSpawns,
		r.reconcileLifecycle,
	} {
		res, err := sub(ctx, session, windows)
		if err != nil || !res.IsZero() {
			return soonest(res, abandonIn), err
		}
	}
	return soonest(ctrl.Result{}, abandonIn), nil
}

// getSession reads the session of req: nil when it is gone, or when this
// controller removed its finalizer and the cache has not seen it go yet.
func (r *SessionReconciler) getSession(ctx context.Context, req ctrl.Request) (*twv1.BrowserSession, error) {
	session := &twv1.BrowserSession{}
	if err := r.Get(ctx, req.NamespacedName, session); err != nil {
		if apierrors.IsNotFound(err) {
			r.letGo.Forget(req.NamespacedName)
			r.deletingWrites.Delete(req.NamespacedName)
			r.deleting.Forget(req.NamespacedName)
		}
		return nil, client.IgnoreNotFound(err)
	}
	if r.letGo.Gone(session) {
		// This controller removed its finalizer: the session is gone, the
		// cache has not seen it go yet.
		return nil, nil
	}
	return session, nil
}

// liveWindows lists the session's windows but the ones already gone.
func liveWindows(ctx context.Context, c client.Reader, s *twv1.BrowserSession) ([]twv1.BrowserWindow, error) {
	windows, err := sessionWindows(ctx, c, s)
	if err != nil {
		return nil, err
	}
	// A deleted window whose last finalizer is gone is gone: the API server
	// removed it then, and the cache shows it one event before its deletion.
	// Counting it would hold the session (and write its status) for nothing.
	return slices.DeleteFunc(windows, func(w twv1.BrowserWindow) bool {
		return !w.DeletionTimestamp.IsZero() && len(w.Finalizers) == 0
	}), nil
}

// writeStatus summarizes the session's conditions and patches what the pass
// changed (held: the session had its finalizer when the pass began), and
// returns the pass's result res and error err, with the patch's. Nothing is
// written for a session whose finalizer this pass removed: it is gone, and a
// status write after it would only meet a 404. A deleted session's write that
// only updates its counts and messages may wait (deletingStatusWait): the pass
// then comes back when it is due.
func (r *SessionReconciler) writeStatus(ctx context.Context, helper *patch.Helper, s *twv1.BrowserSession, windows []twv1.BrowserWindow, held bool, res ctrl.Result, err error) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(s)
	if held && !s.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(s, twv1.SessionFinalizer) {
		r.deletingWrites.Delete(key)
		return res, err
	}
	summarizeSession(s, windows, err)
	if err == nil {
		s.Status.ObservedGeneration = s.Generation
	}
	if wait := r.deletingStatusWait(helper, s); wait > 0 {
		return soonest(res, wait), err
	}
	_, changed := helper.Changes(s)
	if perr := helper.Patch(ctx, s); perr != nil && !(apierrors.IsNotFound(perr) && !s.DeletionTimestamp.IsZero()) {
		return res, kerrors.NewAggregate([]error{err, perr})
	}
	if changed && !s.DeletionTimestamp.IsZero() {
		r.deletingWrites.Store(key, time.Now())
	}
	return res, err
}
