package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/handlers"
	"github.com/tabwarden/tabwarden/internal/patch"
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
}

// SetupWithManager registers the reconciler: sessions, and the windows that name them.
func (r *SessionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.CleanupRequeue == 0 {
		r.CleanupRequeue = 30 * time.Second
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserSession{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletingPredicate()))).
		// Window changes come in bursts (a page opens, then its url, title and
		// counts move); coalesce them into one session reconcile and status write.
		// Gating does not wait on this: the agent decides from its own cache.
		Watches(&twv1.BrowserWindow{}, handlers.Coalescing(sessionDelay, windowToSession)).
		Watches(&twv1.BrowserProfile{}, handler.EnqueueRequestsFromMapFunc(r.profileToPendingSessions)).
		Named("browsersession").
		Complete(r)
}

// sessionDelay is how long window events wait before their session is
// reconciled, so that a burst of them becomes one status write.
const sessionDelay = 200 * time.Millisecond

// Reconcile dispatches: get, patch helper, deferred status patch, deletion,
// finalizer, then the ordered sub-reconcilers.
func (r *SessionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	session := &twv1.BrowserSession{}
	if err := r.Get(ctx, req.NamespacedName, session); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper := patch.NewHelper(session, r.Client)
	var windows []twv1.BrowserWindow
	defer func() {
		summarizeSession(session, windows, retErr)
		if retErr == nil {
			session.Status.ObservedGeneration = session.Generation
		}
		if err := helper.Patch(ctx, session); err != nil && !(apierrors.IsNotFound(err) && !session.DeletionTimestamp.IsZero()) {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	var err error
	if windows, err = sessionWindows(ctx, r.Client, session); err != nil {
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

	for _, sub := range []func(context.Context, *twv1.BrowserSession, []twv1.BrowserWindow) (ctrl.Result, error){
		r.reconcilePlacement,
		r.reconcileSpawns,
		r.reconcileLifecycle,
	} {
		res, err := sub(ctx, session, windows)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcilePlacement binds the session to a profile: the pinned one, or a
// connected profile with capacity matching the selector. Sets Registered.
func (r *SessionReconciler) reconcilePlacement(ctx context.Context, s *twv1.BrowserSession, _ []twv1.BrowserWindow) (ctrl.Result, error) {
	if s.Status.ProfileName != "" {
		setCondition(s, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
			fmt.Sprintf("Thread %q drives profile %q for: %s", s.Spec.Thread, s.Status.ProfileName, s.Spec.Purpose))
		return ctrl.Result{}, nil
	}
	if s.Spec.ProfileName != "" {
		s.Status.ProfileName = s.Spec.ProfileName
		setCondition(s, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
			fmt.Sprintf("Thread %q drives profile %q for: %s", s.Spec.Thread, s.Status.ProfileName, s.Spec.Purpose))
		return ctrl.Result{}, nil
	}
	profile, err := r.schedule(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if profile == "" {
		setCondition(s, twv1.RegisteredCondition, metav1.ConditionFalse, twv1.ReasonNoProfile,
			"No connected BrowserProfile with free capacity matches spec.profileSelector; see `kubectl get browserprofiles --show-labels`, or pin one with spec.profileName")
		// Profiles coming and going re-trigger this through the profile watch.
		return ctrl.Result{}, nil
	}
	s.Status.ProfileName = profile
	setCondition(s, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
		fmt.Sprintf("Thread %q drives profile %q for: %s", s.Spec.Thread, profile, s.Spec.Purpose))
	return ctrl.Result{}, nil
}

// schedule picks the connected profile matching the selector with the most free capacity.
func (r *SessionReconciler) schedule(ctx context.Context, s *twv1.BrowserSession) (string, error) {
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.ProfileSelector)
	if err != nil {
		return "", reconcile.TerminalError(fmt.Errorf("spec.profileSelector: %w", err))
	}
	var profiles twv1.BrowserProfileList
	if err := r.List(ctx, &profiles, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", err
	}
	best, bestFree := "", int32(-1)
	for _, p := range profiles.Items {
		if !apimeta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition) {
			continue
		}
		free := int32(1 << 30)
		if p.Spec.MaxSessions > 0 {
			free = p.Spec.MaxSessions - p.Status.Sessions
		}
		if free > 0 && free > bestFree {
			best, bestFree = p.Name, free
		}
	}
	return best, nil
}

// reconcileSpawns counts the session's windows and gates it on spawned windows
// without a disposition. Sets SpawnsAcknowledged (reason unacknowledged_spawns,
// with the kubectl patch that acknowledges each one).
func (r *SessionReconciler) reconcileSpawns(_ context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	s.Status.Windows = countWindows(windows)
	s.Status.LastActivityTime = lastActivity(s, windows)
	unacked := unacknowledged(windows)
	if len(unacked) == 0 {
		setCondition(s, twv1.SpawnsAcknowledgedCondition, metav1.ConditionTrue, twv1.ReasonAcknowledged, "Every spawned window has a disposition")
		return ctrl.Result{}, nil
	}
	wasAcked := !apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.SpawnsAcknowledgedCondition)
	msg := UnacknowledgedMessage(s.Namespace, unacked)
	setCondition(s, twv1.SpawnsAcknowledgedCondition, metav1.ConditionFalse, twv1.ReasonUnacknowledgedSpawns, msg)
	if wasAcked {
		// Event notes are limited to 1 KiB: the commands for every window live in the condition.
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, twv1.ReasonUnacknowledgedSpawns, "Hold",
			"%d spawned window(s) have no disposition; new Open windows are held. First: %s (or Keep). All: kubectl get browserwindow -n %s -l %s=%s,%s=spawned",
			len(unacked), AckHint(s.Namespace, unacked[0].Name, twv1.DispositionClose), s.Namespace, twv1.SessionLabel, s.Name, twv1.SourceLabel)
	}
	return ctrl.Result{}, nil
}

// reconcileLifecycle sets the phase and, once the session is Finished, cleans up
// like a deletion does but keeps the session. Sets Clean (reason dirty_session).
func (r *SessionReconciler) reconcileLifecycle(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	var idleIn time.Duration
	if s.Spec.IdleTimeout != nil && s.Spec.IdleTimeout.Duration > 0 && !s.Ended() {
		since := s.CreationTimestamp.Time
		if s.Status.LastActivityTime != nil {
			since = s.Status.LastActivityTime.Time
		}
		if idleIn = time.Until(since.Add(s.Spec.IdleTimeout.Duration)); idleIn <= 0 {
			s.Status.EndReason = twv1.ReasonIdleTimeout
			ctrl.LoggerFrom(ctx).Info("Session idle; finishing it", "idleTimeout", s.Spec.IdleTimeout.Duration)
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.ReasonIdleTimeout, "Finish",
				"No activity for %s (spec.idleTimeout): the session finishes; temporary pages close, Keep pages are released", s.Spec.IdleTimeout.Duration)
		}
	}
	switch {
	case s.Spec.State == twv1.SessionFinished || s.IdledOut():
		remaining, err := r.cleanup(ctx, s, windows)
		if err != nil {
			return ctrl.Result{}, err
		}
		if remaining > 0 {
			s.Status.Phase = twv1.SessionPhaseFinishing
			return ctrl.Result{RequeueAfter: r.CleanupRequeue}, nil
		}
		if s.Status.Phase != twv1.SessionPhaseFinished {
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventSessionCleaned, "Cleanup", "Every page the session owned is closed, released or detached")
		}
		s.Status.Phase = twv1.SessionPhaseFinished
	case s.Status.ProfileName == "":
		s.Status.Phase = twv1.SessionPhasePending
	case s.Spec.State == twv1.SessionWaitingForUser:
		s.Status.Phase = twv1.SessionPhaseWaitingForUser
	default:
		s.Status.Phase = twv1.SessionPhaseActive
	}
	if s.Ended() {
		return ctrl.Result{}, nil
	}
	setCondition(s, twv1.CleanCondition, metav1.ConditionTrue, twv1.ReasonClean, "The session is running; its pages are its own")
	// Look again when the idle timeout would expire (activity moves it on).
	return ctrl.Result{RequeueAfter: idleIn}, nil
}

// reconcileDelete cleans up and lets the session go once none of its windows remain.
func (r *SessionReconciler) reconcileDelete(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	s.Status.Phase = twv1.SessionPhaseFinishing
	remaining, err := r.cleanup(ctx, s, windows)
	if err != nil {
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		return ctrl.Result{RequeueAfter: r.CleanupRequeue}, nil
	}
	if controllerutil.RemoveFinalizer(s, twv1.SessionFinalizer) {
		r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventSessionCleaned, "Cleanup", "Every page the session owned is closed, released or detached")
	}
	return ctrl.Result{}, nil
}

// cleanup deletes every window of an ended session. The agent's page finalizer
// closes temporary pages and lets Keep pages and bound tabs go without closing
// them. It records Keep pages as deliverables, sets Clean=False (dirty_session)
// while owned pages are still open, and returns how many windows remain.
func (r *SessionReconciler) cleanup(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (int, error) {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8) // deletes in flight: cleanup of N pages is not N round trips in a row
	)
	for i := range windows {
		w := &windows[i]
		if w.Spec.Disposition == twv1.DispositionKeep && w.Live() {
			addDeliverable(s, w)
		}
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := r.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := kerrors.NewAggregate(errs); err != nil {
		return 0, err
	}
	dirty := dirtyWindows(windows)
	if len(dirty) == 0 {
		setCondition(s, twv1.CleanCondition, metav1.ConditionTrue, twv1.ReasonClean, "The session owns no open page")
		return len(windows), nil
	}
	wasClean := !apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.CleanCondition)
	msg := DirtyMessage(s, dirty)
	setCondition(s, twv1.CleanCondition, metav1.ConditionFalse, twv1.ReasonDirtySession, msg)
	if wasClean {
		ctrl.LoggerFrom(ctx).Info("Session ended with open pages", "pages", len(dirty))
		// Event notes are limited to 1 KiB: the list of pages lives in the condition.
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, twv1.ReasonDirtySession, "Cleanup",
			"The session ended but still owns %d open page(s); tabwarden is closing them. See: kubectl get browsersession %s -n %s -o jsonpath='{.status.conditions[?(@.type==\"Clean\")].message}'",
			len(dirty), s.Name, s.Namespace)
	}
	return len(windows), nil
}

func addDeliverable(s *twv1.BrowserSession, w *twv1.BrowserWindow) {
	if slices.ContainsFunc(s.Status.Deliverables, func(d twv1.Deliverable) bool { return d.Window == w.Name }) {
		return
	}
	s.Status.Deliverables = append(s.Status.Deliverables, twv1.Deliverable{Window: w.Name, URL: w.Status.URL, Title: w.Status.Title})
}

// windowToSession maps a window to the session it names.
func windowToSession(_ context.Context, o client.Object) []reconcile.Request {
	w := o.(*twv1.BrowserWindow)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}}}
}

// profileToPendingSessions maps a profile change to sessions still waiting for placement.
func (r *SessionReconciler) profileToPendingSessions(ctx context.Context, _ client.Object) []reconcile.Request {
	var sessions twv1.BrowserSessionList
	if err := r.List(ctx, &sessions); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, s := range sessions.Items {
		if s.Status.ProfileName == "" && s.Spec.ProfileSelector != nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return reqs
}

func deletingPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() })
}

var _ = labels.Everything
