package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
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
	// letGo remembers the sessions whose finalizer this controller removed
	// (name → uid) until the cache sees them go.
	letGo sync.Map
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

// sessionDelay is how long window events wait before their session is
// reconciled, so that a burst of them becomes one status write.
const sessionDelay = 200 * time.Millisecond

// untakenDelay is how long the events of a window that no agent has taken yet
// (just created, or registered) wait: its agent's first status write follows
// within the agent's settle budget (1s at most by default), and the session's
// counts and conditions are then written once for the create, the registration
// and the page. Gating does not wait on this (the agent decides from its own
// cache), and neither does cleanup: a window being deleted, or gone, reconciles
// its session at once.
const untakenDelay = 1500 * time.Millisecond

// windowEvents maps window events to their session: at once when the
// session's last window goes (the session's finalizer may be the last thing
// left) or a window is deleted
// before an agent took it (the controller may have to let it go itself), after
// untakenDelay while no agent has taken it, else after sessionDelay.
func (r *SessionReconciler) windowEvents() handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		w, ok := o.(*twv1.BrowserWindow)
		if !ok {
			return
		}
		req := windowToSession(context.Background(), w)[0]
		switch {
		case !w.DeletionTimestamp.IsZero() && AgentTook(w) && controllerutil.ContainsFinalizer(w, twv1.PageFinalizer):
			// Its agent is closing the page: only the window's going (its Delete
			// event, at once below) can let the session go. Reconciling now would
			// hold that reconcile behind a status write from a cache that has not
			// seen the last one yet.
			q.AddAfter(req, sessionDelay)
		case !w.DeletionTimestamp.IsZero():
			q.Add(req)
		case !AgentTook(w):
			q.AddAfter(req, untakenDelay)
		default:
			q.AddAfter(req, sessionDelay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// controller-runtime hands over the last known object, tombstones unwrapped.
			w, ok := e.Object.(*twv1.BrowserWindow)
			if !ok {
				return
			}
			req := windowToSession(ctx, w)[0]
			// The cache has dropped the window already: while other windows of
			// the session remain, the last one to go reconciles it at once and
			// this one waits like any other event, so a session's N windows
			// going together cost one status write, not N.
			var list twv1.BrowserWindowList
			if err := r.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingFields{WindowSessionIndex: w.Spec.SessionRef.Name}); err == nil &&
				slices.ContainsFunc(list.Items, func(o twv1.BrowserWindow) bool {
					return o.UID != w.UID && (o.DeletionTimestamp.IsZero() || len(o.Finalizers) > 0)
				}) {
				q.AddAfter(req, sessionDelay)
				return
			}
			q.Add(req)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// Reconcile dispatches: get, patch helper, deferred status patch, deletion,
// finalizer, then the ordered sub-reconcilers.
func (r *SessionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	session := &twv1.BrowserSession{}
	if err := r.Get(ctx, req.NamespacedName, session); err != nil {
		if apierrors.IsNotFound(err) {
			r.letGo.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if uid, ok := r.letGo.Load(req.NamespacedName); ok {
		if uid == session.UID {
			// This controller removed its finalizer: the session is gone, the
			// cache has not seen it go yet.
			return ctrl.Result{}, nil
		}
		r.letGo.Delete(req.NamespacedName)
	}
	helper := patch.NewHelper(session, r.Client)
	held := controllerutil.ContainsFinalizer(session, twv1.SessionFinalizer)
	var windows []twv1.BrowserWindow
	defer func() {
		if held && !session.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(session, twv1.SessionFinalizer) {
			// reconcileDelete removed the finalizer (its own write) and the
			// object is gone: a status write after it would only meet a 404.
			return
		}
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
	// A deleted window whose last finalizer is gone is gone: the API server
	// removed it then, and the cache shows it one event before its deletion.
	// Counting it would hold the session (and write its status) for nothing.
	windows = slices.DeleteFunc(windows, func(w twv1.BrowserWindow) bool {
		return !w.DeletionTimestamp.IsZero() && len(w.Finalizers) == 0
	})

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

// reconcilePlacement binds the session to a profile that admits its namespace:
// the pinned one, or a connected profile with capacity matching the selector.
// Sets Registered and Admitted. A session whose pinned profile is missing or does
// not admit its namespace stays unplaced (status.profileName empty), so no agent
// serves it and none of its windows opens. A placed session is never evicted: if
// its profile stops admitting its namespace it keeps its placement until it ends
// (its pages stay owned and are cleaned up) and Admitted turns False.
func (r *SessionReconciler) reconcilePlacement(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	if s.Status.ProfileName != "" {
		moved, err := r.reconcileReachable(ctx, s, windows)
		if err != nil || moved {
			return ctrl.Result{}, err
		}
		setCondition(s, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
			fmt.Sprintf("Thread %q drives profile %q for: %s", s.Spec.Thread, s.Status.ProfileName, s.Spec.Purpose))
		return ctrl.Result{}, r.reconcileStillAdmitted(ctx, s)
	}
	if s.Spec.ProfileName != "" {
		p := &twv1.BrowserProfile{}
		err := r.Get(ctx, client.ObjectKey{Name: s.Spec.ProfileName}, p)
		if apierrors.IsNotFound(err) {
			apimeta.RemoveStatusCondition(&s.Status.Conditions, twv1.AdmittedCondition)
			r.refuse(s, twv1.ReasonNoProfile, MissingProfileMessage(s),
				fmt.Sprintf("BrowserProfile %q does not exist; the session waits unplaced (see its Registered condition)", s.Spec.ProfileName))
			// The profile watch brings the session back when the profile appears.
			return ctrl.Result{}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		ok, err := r.admits(ctx, p, s.Namespace)
		if !ok {
			r.refuseNotAllowed(ctx, s, p, err)
			// The profile and namespace watches bring the session back when either changes.
			return ctrl.Result{}, nil
		}
		r.place(s, p.Name)
		return ctrl.Result{}, nil
	}
	r.placeMu.Lock()
	defer r.placeMu.Unlock()
	profile, notAdmitting, err := r.schedule(ctx, s, "")
	if err != nil {
		return ctrl.Result{}, err
	}
	if profile == "" {
		if len(notAdmitting) > 0 {
			r.refuse(s, twv1.ReasonProfileNotAllowed, SelectorNotAllowedMessage(s, notAdmitting),
				fmt.Sprintf("No profile matching spec.profileSelector admits namespace %q; admit it: %s", s.Namespace, hint.Admit(notAdmitting[0], s.Namespace)))
			return ctrl.Result{}, nil
		}
		setCondition(s, twv1.RegisteredCondition, metav1.ConditionFalse, twv1.ReasonNoProfile,
			fmt.Sprintf("No connected BrowserProfile with free capacity that admits namespace %q matches spec.profileSelector; see `kubectl get browserprofiles --show-labels -o wide`, or pin one with spec.profileName", s.Namespace))
		// Profiles coming and going re-trigger this through the profile watch;
		// capacity freed by sessions that end is looked at again after a while.
		return ctrl.Result{RequeueAfter: r.CleanupRequeue}, nil
	}
	r.reserve(s, profile)
	r.place(s, profile)
	return ctrl.Result{}, nil
}

// reconcileReachable sets ProfileReachable on a placed session from its
// profile's liveness. A running selector session whose profile's agent is lost
// and that has no page there yet (movable) is placed on another profile; every
// other session keeps its placement (its pages stay owned; nothing is closed
// twice) and converges when the agent returns. Reports whether it moved.
func (r *SessionReconciler) reconcileReachable(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (bool, error) {
	p := &twv1.BrowserProfile{}
	if err := r.Get(ctx, client.ObjectKey{Name: s.Status.ProfileName}, p); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !ProfileLost(p) {
		setCondition(s, twv1.ProfileReachableCondition, metav1.ConditionTrue, twv1.ReasonProfileReachable,
			fmt.Sprintf("The agent of profile %q renews its heartbeat", p.Name))
		return false, nil
	}
	old := s.Status.ProfileName
	if !s.Ended() && s.Spec.ProfileName == "" && movable(windows) {
		r.placeMu.Lock()
		defer r.placeMu.Unlock()
		profile, _, err := r.schedule(ctx, s, old)
		if err != nil {
			return false, err
		}
		if profile != "" {
			r.reserve(s, profile)
			r.place(s, profile)
			setCondition(s, twv1.ProfileReachableCondition, metav1.ConditionTrue, twv1.ReasonProfileReachable,
				fmt.Sprintf("Moved from profile %q, whose agent was lost, to %q before any page opened", old, profile))
			ctrl.LoggerFrom(ctx).Info("Session moved off a lost profile", "from", old, "to", profile)
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventRescheduled, "Place",
				"The agent of profile %q was lost before any page of the session opened; placed on %q", old, profile)
			return true, nil
		}
	}
	was := !apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.ProfileReachableCondition)
	msg := ProfileLostMessage(s, old, movable(windows))
	setCondition(s, twv1.ProfileReachableCondition, metav1.ConditionFalse, twv1.ReasonProfileLost, msg)
	if was {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, twv1.ReasonProfileLost, "Place", "%s", truncate(msg, 1000))
	}
	return false, nil
}

// movable reports whether a session may leave its profile: none of its windows
// may have a page there. A window the agent took (AgentTook: its status, written
// in the reconcile that opens the page), a spawned or a bound one ties the
// session to that browser.
func movable(windows []twv1.BrowserWindow) bool {
	for i := range windows {
		w := &windows[i]
		if w.Spec.Source != twv1.SourceOpen || AgentTook(w) {
			return false
		}
	}
	return true
}

// ProfileLostMessage says that a session's profile is lost, what happens to it
// meanwhile and what the user can do.
func ProfileLostMessage(s *twv1.BrowserSession, profile string, movable bool) string {
	why := "it has pages there, which stay owned by it (nothing is closed or opened twice)"
	switch {
	case s.Spec.ProfileName != "":
		why = "it is pinned to it (spec.profileName)"
	case s.Ended():
		why = "it has ended and its pages are closed by that agent"
	case movable:
		why = "no other connected profile with free capacity matches spec.profileSelector (it moves when one does)"
	}
	return fmt.Sprintf("The agent of profile %q is lost (its heartbeat Lease is not renewed): none of the session's pages is opened, observed or closed until it returns. The session stays on %q because %s; it converges when the agent returns. See: kubectl get browserprofile %s -o wide; or end it: kubectl delete browsersession %s -n %s",
		profile, profile, why, profile, s.Name, s.Namespace)
}

// reserve records a placement decided for s until the cache shows it. Callers hold placeMu.
func (r *SessionReconciler) reserve(s *twv1.BrowserSession, profile string) {
	r.reserved[client.ObjectKeyFromObject(s)] = reservation{profile: profile, at: time.Now()}
}

// load counts the running sessions placed on profile, from the cache (the
// status.profileName index) and the placements decided but not yet cached,
// leaving out the session self. Callers hold placeMu.
func (r *SessionReconciler) load(ctx context.Context, profile string, self types.NamespacedName) (int32, error) {
	var list twv1.BrowserSessionList
	if err := r.List(ctx, &list, client.MatchingFields{SessionProfileIndex: profile}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	counted := map[types.NamespacedName]bool{}
	var n int32
	for i := range list.Items {
		s := &list.Items[i]
		key := client.ObjectKeyFromObject(s)
		if key == self || s.Ended() {
			continue
		}
		if res, ok := r.reserved[key]; ok && res.profile != profile {
			continue // moved elsewhere; the cache has not seen it yet
		}
		counted[key] = true
		n++
	}
	for key, res := range r.reserved {
		if res.profile == profile && key != self && !counted[key] {
			n++
		}
	}
	return n, nil
}

// pruneReservations forgets the placements the cache shows, those of sessions
// that are gone, and stale ones (a status write that failed is retried, and
// reserves again). Callers hold placeMu.
func (r *SessionReconciler) pruneReservations(ctx context.Context) {
	for key, res := range r.reserved {
		s := &twv1.BrowserSession{}
		err := r.Get(ctx, key, s)
		if apierrors.IsNotFound(err) || (err == nil && s.Status.ProfileName == res.profile) || time.Since(res.at) > reservationTTL {
			delete(r.reserved, key)
		}
	}
}

// place binds the session to an admitting profile.
func (r *SessionReconciler) place(s *twv1.BrowserSession, profile string) {
	s.Status.ProfileName = profile
	setCondition(s, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
		fmt.Sprintf("Thread %q drives profile %q for: %s", s.Spec.Thread, profile, s.Spec.Purpose))
	setCondition(s, twv1.AdmittedCondition, metav1.ConditionTrue, twv1.ReasonAdmitted,
		fmt.Sprintf("BrowserProfile %q admits namespace %q", profile, s.Namespace))
}

// refuse leaves the session unplaced: Registered=False with the reason and the
// message, and a Warning Event when it was not refused for that reason already.
func (r *SessionReconciler) refuse(s *twv1.BrowserSession, reason, msg, note string) {
	c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.RegisteredCondition)
	again := c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
	setCondition(s, twv1.RegisteredCondition, metav1.ConditionFalse, reason, msg)
	if !again {
		// Event notes are limited to 1 KiB: the full hint lives in the condition.
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, reason, "Place", "%s", truncate(note, 1000))
	}
}

// refuseNotAllowed refuses a session whose pinned profile does not admit its namespace.
func (r *SessionReconciler) refuseNotAllowed(ctx context.Context, s *twv1.BrowserSession, p *twv1.BrowserProfile, admitErr error) {
	msg := NotAllowedMessage(s, p, r.admittingProfiles(ctx, s.Namespace), admitErr)
	setCondition(s, twv1.AdmittedCondition, metav1.ConditionFalse, twv1.ReasonProfileNotAllowed, msg)
	r.refuse(s, twv1.ReasonProfileNotAllowed, msg,
		fmt.Sprintf("BrowserProfile %q does not admit namespace %q; the session is not placed. Admit it: %s", p.Name, s.Namespace, hint.Admit(p, s.Namespace)))
}

// reconcileStillAdmitted re-evaluates a placed session's admission after its
// profile's tenancy or its namespace's labels changed: it is not evicted, but
// Admitted says so, with a Warning Event when it turns False.
func (r *SessionReconciler) reconcileStillAdmitted(ctx context.Context, s *twv1.BrowserSession) error {
	if s.Ended() {
		return nil
	}
	p := &twv1.BrowserProfile{}
	if err := r.Get(ctx, client.ObjectKey{Name: s.Status.ProfileName}, p); err != nil {
		// A deleted profile is its agent's to register again; nothing to say here.
		return client.IgnoreNotFound(err)
	}
	ok, err := r.admits(ctx, p, s.Namespace)
	if ok {
		setCondition(s, twv1.AdmittedCondition, metav1.ConditionTrue, twv1.ReasonAdmitted,
			fmt.Sprintf("BrowserProfile %q admits namespace %q", p.Name, s.Namespace))
		return nil
	}
	was := !apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.AdmittedCondition)
	setCondition(s, twv1.AdmittedCondition, metav1.ConditionFalse, twv1.ReasonProfileNotAllowed, NoLongerAllowedMessage(s, p, err))
	if was {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, twv1.ReasonProfileNotAllowed, "Place",
			"BrowserProfile %q no longer admits namespace %q; the session keeps its placement until it ends (not evicted). End it: kubectl delete browsersession %s -n %s",
			p.Name, s.Namespace, s.Name, s.Namespace)
	}
	return nil
}

// admits reports whether profile p admits namespace ns, reading the namespace's
// labels from the cache when the profile has a selector. A namespace the cache
// does not hold yet has no labels; the namespace watch re-evaluates it.
func (r *SessionReconciler) admits(ctx context.Context, p *twv1.BrowserProfile, ns string) (bool, error) {
	var nsLabels map[string]string
	if p.Spec.NamespaceSelector != nil && !slices.Contains(p.Spec.Namespaces, ns) {
		n := &corev1.Namespace{}
		if err := r.Get(ctx, client.ObjectKey{Name: ns}, n); err == nil {
			nsLabels = n.Labels
		} else if !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return p.Admits(ns, nsLabels)
}

// admittingProfiles names up to five profiles that admit namespace ns, for hints.
func (r *SessionReconciler) admittingProfiles(ctx context.Context, ns string) []string {
	var profiles twv1.BrowserProfileList
	if err := r.List(ctx, &profiles); err != nil {
		return nil
	}
	var names []string
	for i := range profiles.Items {
		if ok, _ := r.admits(ctx, &profiles.Items[i], ns); ok {
			names = append(names, profiles.Items[i].Name)
		}
	}
	slices.Sort(names)
	if len(names) > 5 {
		names = names[:5]
	}
	return names
}

// schedule picks, among the connected profiles matching the selector that admit
// the session's namespace and have room, the least-loaded one. When none does
// but some connected ones with capacity only fail to admit the namespace, it
// returns those, so that the refusal can say which profile to open up.
//
// Load is counted by the controller itself (sessions placed on the profile in
// its cache, plus placements it decided that the cache does not show yet), not
// read from the agent's status.sessions, so a burst never overshoots
// maxSessions. The least-loaded profile wins; ties go to the first name. The
// profile skip (a lost one being left) is never chosen. Callers hold placeMu.
func (r *SessionReconciler) schedule(ctx context.Context, s *twv1.BrowserSession, skip string) (string, []*twv1.BrowserProfile, error) {
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.ProfileSelector)
	if err != nil {
		return "", nil, reconcile.TerminalError(fmt.Errorf("spec.profileSelector: %w", err))
	}
	var profiles twv1.BrowserProfileList
	if err := r.List(ctx, &profiles, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", nil, err
	}
	slices.SortFunc(profiles.Items, func(a, b twv1.BrowserProfile) int { return strings.Compare(a.Name, b.Name) })
	r.pruneReservations(ctx)
	self := client.ObjectKeyFromObject(s)
	best, bestLoad := "", int32(-1)
	var notAdmitting []*twv1.BrowserProfile
	for i := range profiles.Items {
		p := &profiles.Items[i]
		if p.Name == skip || !apimeta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition) {
			continue
		}
		load, err := r.load(ctx, p.Name, self)
		if err != nil {
			return "", nil, err
		}
		if p.Spec.MaxSessions > 0 && load >= p.Spec.MaxSessions {
			continue
		}
		if ok, _ := r.admits(ctx, p, s.Namespace); !ok {
			notAdmitting = append(notAdmitting, p)
			continue
		}
		if best == "" || load < bestLoad {
			best, bestLoad = p.Name, load
		}
	}
	slices.SortFunc(notAdmitting, func(a, b *twv1.BrowserProfile) int { return strings.Compare(a.Name, b.Name) })
	return best, notAdmitting, nil
}

// NotAllowedMessage teaches why a session pinned to profile p is refused and the
// two ways out: the admin admits the namespace, or the session pins another profile.
func NotAllowedMessage(s *twv1.BrowserSession, p *twv1.BrowserProfile, admitting []string, admitErr error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "BrowserProfile %q does not admit namespace %q: it is neither in the profile's spec.namespaces (%s) nor matched by its spec.namespaceSelector (%s). Session %q is not placed and none of its pages opens.",
		p.Name, s.Namespace, listOrNone(p.Spec.Namespaces), selectorString(p.Spec.NamespaceSelector), s.Name)
	if admitErr != nil {
		fmt.Fprintf(&b, " The selector is invalid: %v.", admitErr)
	}
	fmt.Fprintf(&b, " An admin of the profile admits the namespace with: %s ; or create the session again pinned to another profile (spec.profileName is immutable)", hint.Admit(p, s.Namespace))
	if len(admitting) > 0 {
		fmt.Fprintf(&b, ", one that admits %q: %s.", s.Namespace, strings.Join(admitting, ", "))
	} else {
		fmt.Fprintf(&b, "; no profile admits %q yet (kubectl get browserprofiles -o wide).", s.Namespace)
	}
	return b.String()
}

// NoLongerAllowedMessage says that a placed session's profile stopped admitting
// its namespace, that it is not evicted, and how to end it or admit it again.
func NoLongerAllowedMessage(s *twv1.BrowserSession, p *twv1.BrowserProfile, admitErr error) string {
	msg := fmt.Sprintf("BrowserProfile %q no longer admits namespace %q (spec.namespaces: %s; spec.namespaceSelector: %s). The session keeps its placement until it ends: a placed session is not evicted, so its pages stay owned and are cleaned up; new sessions in %q are refused. End it: kubectl delete browsersession %s -n %s. Or admit the namespace again: %s",
		p.Name, s.Namespace, listOrNone(p.Spec.Namespaces), selectorString(p.Spec.NamespaceSelector), s.Namespace, s.Name, s.Namespace, hint.Admit(p, s.Namespace))
	if admitErr != nil {
		msg += fmt.Sprintf(" (the selector is invalid: %v)", admitErr)
	}
	return msg
}

// MissingProfileMessage teaches what to do about a session pinned to a profile that does not exist.
func MissingProfileMessage(s *twv1.BrowserSession) string {
	p := s.Spec.ProfileName
	return fmt.Sprintf("BrowserProfile %q does not exist, so session %q is not placed and none of its pages opens; it is placed when the profile appears and admits namespace %q. "+
		"An admin creates it admitting the namespace: kubectl apply -f - <<<'{\"apiVersion\":\"tabwarden.dev/v1alpha1\",\"kind\":\"BrowserProfile\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"]}}' "+
		"and runs its agent: tabwarden agent --profile %s. Or create the session again pinned to an existing profile: kubectl get browserprofiles -o wide",
		p, s.Name, s.Namespace, p, s.Namespace, p)
}

// SelectorNotAllowedMessage teaches why no profile matching a session's selector was picked.
func SelectorNotAllowedMessage(s *twv1.BrowserSession, notAdmitting []*twv1.BrowserProfile) string {
	names := make([]string, 0, len(notAdmitting))
	for _, p := range notAdmitting {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("Connected BrowserProfiles with free capacity match spec.profileSelector (%s) but none admits namespace %q, so session %q is not placed and none of its pages opens. An admin admits it: %s",
		strings.Join(names, ", "), s.Namespace, s.Name, hint.Admit(notAdmitting[0], s.Namespace))
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func selectorString(sel *metav1.LabelSelector) string {
	if sel == nil {
		return "unset"
	}
	b, _ := json.Marshal(sel)
	return string(b)
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
			len(unacked), hint.Ack(s.Namespace, unacked[0].Name, twv1.DispositionClose), s.Namespace, twv1.SessionLabel, s.Name, twv1.SourceLabel)
	}
	return ctrl.Result{}, nil
}

// reconcileLifecycle sets the phase and, once the session is Finished, cleans up
// like a deletion does but keeps the session. Sets Clean (reason dirty_session).
func (r *SessionReconciler) reconcileLifecycle(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	next, err := r.reconcileTimers(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case s.Spec.State == twv1.SessionFinished || s.Status.EndReason != "":
		remaining, err := r.cleanup(ctx, s, windows)
		if err != nil {
			return ctrl.Result{}, err
		}
		if s.Status.Phase != twv1.SessionPhaseFinished {
			r.endedAt.LoadOrStore(s.UID, time.Now())
		}
		if remaining > 0 {
			s.Status.Phase = twv1.SessionPhaseFinishing
			return ctrl.Result{RequeueAfter: r.CleanupRequeue}, nil
		}
		if s.Status.Phase != twv1.SessionPhaseFinished {
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventSessionCleaned, "Cleanup", "Every page the session owned is closed, released or detached")
			if at, ok := r.endedAt.LoadAndDelete(s.UID); ok {
				metrics.SessionCleaned(at.(time.Time))
			}
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
	// Look again when a timer would expire (activity moves the idle one on).
	return ctrl.Result{RequeueAfter: next}, nil
}

// reconcileDelete cleans up and lets the session go once none of its windows remain.
func (r *SessionReconciler) reconcileDelete(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	wasFinished := s.Status.Phase == twv1.SessionPhaseFinished
	s.Status.Phase = twv1.SessionPhaseFinishing
	remaining, err := r.cleanup(ctx, s, windows)
	if err != nil {
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		return ctrl.Result{RequeueAfter: r.CleanupRequeue}, nil
	}
	if controllerutil.ContainsFinalizer(s, twv1.SessionFinalizer) {
		removed, err := r.removeFinalizer(ctx, s)
		if err != nil || !removed {
			// Not removed here: an earlier reconcile did (and told it), the
			// cache has not seen the session go yet.
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventSessionCleaned, "Cleanup", "Every page the session owned is closed, released or detached")
		// A session that finished before its deletion was observed then.
		if at, finishing := r.endedAt.LoadAndDelete(s.UID); finishing {
			metrics.SessionCleaned(at.(time.Time))
		} else if !wasFinished {
			metrics.SessionCleaned(s.DeletionTimestamp.Time)
		}
	}
	return ctrl.Result{}, nil
}

// removeFinalizer removes the session's finalizer, the write that lets the
// session go, as a JSON patch that tests the finalizers it replaces rather than
// the resourceVersion: the status written by the reconcile before (a moment
// ago, as the windows went) is then no conflict to retry, while a finalizer
// someone else added meanwhile still is. The object is gone after it. It
// reports false when the session was gone already.
func (r *SessionReconciler) removeFinalizer(ctx context.Context, s *twv1.BrowserSession) (bool, error) {
	rest := slices.DeleteFunc(slices.Clone(s.Finalizers), func(f string) bool { return f == twv1.SessionFinalizer })
	if rest == nil {
		rest = []string{}
	}
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/finalizers", "value": s.Finalizers},
		{"op": "replace", "path": "/metadata/finalizers", "value": rest},
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return false, err
	}
	err = r.Patch(ctx, s, client.RawPatch(types.JSONPatchType, body))
	if client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("removing the finalizer of session %s: %w", s.Name, err)
	}
	controllerutil.RemoveFinalizer(s, twv1.SessionFinalizer)
	r.letGo.Store(client.ObjectKeyFromObject(s), s.UID)
	return err == nil, nil
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
	if err := r.releaseUntaken(ctx, s, windows); err != nil {
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

// releaseUntaken removes the page finalizer, which the registration stored
// with the profile label, from the deleted windows that no agent took (no
// status from one) when no agent can take them any more: the session's profile
// is gone or its agent is lost. Such a window has no page (an agent writes a
// window's status in the reconcile that opens its page), so nothing is left to
// close; a live agent removes the finalizer itself.
func (r *SessionReconciler) releaseUntaken(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) error {
	var untaken []*twv1.BrowserWindow
	for i := range windows {
		w := &windows[i]
		if !w.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(w, twv1.PageFinalizer) && !AgentTook(w) {
			untaken = append(untaken, w)
		}
	}
	if len(untaken) == 0 {
		return nil
	}
	if s.Status.ProfileName != "" {
		p := &twv1.BrowserProfile{}
		err := r.Get(ctx, client.ObjectKey{Name: s.Status.ProfileName}, p)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && !ProfileLost(p) {
			return nil
		}
	}
	var errs []error
	for _, w := range untaken {
		before := w.DeepCopy()
		controllerutil.RemoveFinalizer(w, twv1.PageFinalizer)
		if err := r.Patch(ctx, w, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	ctrl.LoggerFrom(ctx).Info("Released windows no agent took: their profile's agent is lost or gone", "windows", len(untaken))
	return kerrors.NewAggregate(errs)
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

// profileHandler maps a profile event to the sessions it may concern: unplaced
// sessions whose selector may match it or that are pinned to it, and, when its
// tenancy changed, the sessions placed on it (Admitted is re-evaluated).
func (r *SessionReconciler) profileHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, p *twv1.BrowserProfile, placed bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.profileToSessions(ctx, p, placed) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object.(*twv1.BrowserProfile), true, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, n := e.ObjectOld.(*twv1.BrowserProfile), e.ObjectNew.(*twv1.BrowserProfile)
			tenancy := !equality.Semantic.DeepEqual(o.Spec.Namespaces, n.Spec.Namespaces) ||
				!equality.Semantic.DeepEqual(o.Spec.NamespaceSelector, n.Spec.NamespaceSelector)
			// The agent lost or back: the sessions placed on it say so (and may move).
			liveness := !equality.Semantic.DeepEqual(apimeta.FindStatusCondition(o.Status.Conditions, twv1.ConnectedCondition),
				apimeta.FindStatusCondition(n.Status.Conditions, twv1.ConnectedCondition))
			// Where an unplaced session may go: the profile's spec (capacity,
			// tenancy), labels (selectors), connection, and its load as its
			// agent counts it (a session ended elsewhere frees room). A status
			// write that changes none of these (its tab count, version, epoch)
			// concerns no session and costs no lookup.
			placement := tenancy || liveness || o.Generation != n.Generation ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) || o.Status.Sessions != n.Status.Sessions
			if !placement {
				return
			}
			enqueue(ctx, n, tenancy || liveness, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if p, ok := e.Object.(*twv1.BrowserProfile); ok {
				enqueue(ctx, p, false, q)
			}
		},
	}
}

// profileToSessions lists the sessions a change of profile p may concern: those
// still waiting for placement (by selector, or pinned to p) and, with placed,
// the running sessions placed on p. Each comes from an index of the cache, read
// without copies: a profile event costs the sessions it concerns, not all of them.
func (r *SessionReconciler) profileToSessions(ctx context.Context, p *twv1.BrowserProfile, placed bool) []reconcile.Request {
	var reqs []reconcile.Request
	add := func(field, value string, keep func(*twv1.BrowserSession) bool) {
		var sessions twv1.BrowserSessionList
		if err := r.List(ctx, &sessions, client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range sessions.Items {
			if s := &sessions.Items[i]; keep(s) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)})
			}
		}
	}
	all := func(*twv1.BrowserSession) bool { return true }
	add(index.Unplaced, index.UnplacedSelector, all)
	add(index.Unplaced, index.UnplacedPinned(p.Name), all)
	if placed {
		add(SessionProfileIndex, p.Name, func(s *twv1.BrowserSession) bool { return !s.Ended() })
	}
	return reqs
}

// namespaceToSessions maps a namespace whose labels changed to its running sessions.
func (r *SessionReconciler) namespaceToSessions(ctx context.Context, o client.Object) []reconcile.Request {
	var sessions twv1.BrowserSessionList
	if err := r.List(ctx, &sessions, client.InNamespace(o.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range sessions.Items {
		if s := &sessions.Items[i]; !s.Ended() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)})
		}
	}
	return reqs
}

func deletingPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() })
}

var _ = labels.Everything
