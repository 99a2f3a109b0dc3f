package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
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

// Reconcile dispatches one window.
func (r *WindowReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	a := r.agent
	w := &twv1.BrowserWindow{}
	if err := a.client.Get(ctx, req.NamespacedName, w); err != nil {
		if apierrors.IsNotFound(err) {
			a.letGo.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if w.Labels[twv1.ProfileLabel] != a.opts.Profile {
		return ctrl.Result{}, nil
	}
	if uid, ok := a.letGo.Load(req.NamespacedName); ok {
		if uid == w.UID && !w.DeletionTimestamp.IsZero() {
			// This agent removed its finalizer: the object is gone, the cache
			// has not seen it go yet. Patching again would only meet a 404.
			return ctrl.Result{}, nil
		}
		a.letGo.Delete(req.NamespacedName)
	}
	helper := patch.NewHelper(w, a.client)
	before := w.DeepCopy()
	// A first Open status held back last time (see settle.go) is what this
	// reconcile starts from: the cache cannot show it.
	a.holds.restore(w)
	defer func() {
		summarizeWindow(w, retErr)
		if retErr == nil {
			w.Status.ObservedGeneration = w.Generation
		}
		if !w.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(w, twv1.PageFinalizer) {
			// Removing the finalizer lets the object go; a status write after it
			// would only meet a 404.
			helper.SkipStatus()
			a.holds.forget(w.UID)
		}
		now := time.Now()
		_, statusChanged := helper.Changes(w)
		if statusChanged && retErr == nil {
			if wait := a.hold(before, w, now); wait > 0 {
				helper.SkipStatus()
				statusChanged = false
				if result.RequeueAfter == 0 || wait < result.RequeueAfter {
					result.RequeueAfter = wait
				}
			}
		}
		err := helper.Patch(ctx, w)
		if err == nil && statusChanged && !helper.Skipped() {
			a.wrote(w, now)
		}
		if (err == nil || apierrors.IsNotFound(err)) && !w.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(w, twv1.PageFinalizer) {
			a.letGo.Store(req.NamespacedName, w.UID)
		}
		switch {
		case err == nil:
		case apierrors.IsNotFound(err) && !w.DeletionTimestamp.IsZero():
			// The finalizer was the last thing holding the object.
		default:
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	if !w.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, w)
	}
	s := &twv1.BrowserSession{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}, s); err != nil {
		// Registered windows name an existing session (its deletion deletes
		// them); one this cache does not show yet brings the window back.
		helper.SkipStatus()
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The label only selects what this agent caches; what it serves is decided
	// by where the controller placed the session.
	if s.Status.ProfileName == "" && s.Spec.ProfileName == a.opts.Profile {
		// Pinned here and not placed yet (its creator registered the window
		// ahead of the placement): nothing to say, nothing written; the
		// placement brings the window back.
		helper.SkipStatus()
		return ctrl.Result{}, nil
	}
	if s.Status.ProfileName != a.opts.Profile {
		setWindowCondition(w, twv1.RegisteredCondition, metav1.ConditionFalse, twv1.ReasonProfileMismatch,
			fmt.Sprintf("The window is labelled for profile %q but its session %q is placed on %q; the agent of %q serves only windows of sessions placed on it, so nothing of this window is opened or touched here",
				a.opts.Profile, s.Name, s.Status.ProfileName, a.opts.Profile))
		return ctrl.Result{}, nil
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
		if err := helper.Patch(ctx, w); err != nil {
			return ctrl.Result{}, err
		}
	}
	w.Status.ProfileName = a.opts.Profile
	setWindowCondition(w, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
		fmt.Sprintf("Window of session %q (thread %q): %s", s.Name, s.Spec.Thread, s.Spec.Purpose))

	for _, sub := range []func(context.Context, *twv1.BrowserSession, *twv1.BrowserWindow) (ctrl.Result, error){
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

// reconcileProvenance establishes the window's authority over its page from
// the driver's records, never from the tab ids written in the object. An Open
// window whose status names a page the driver never opened for it forgets that
// claim (and opens its own page). A Spawned window is recorded only when the
// driver saw its page spawned from a page of the window's session; otherwise
// Opened=False with reason spawn_not_observed. A Bind window is recorded only
// when no other window owns or binds the tab; otherwise Bound=False with reason
// tab_in_use. A refused window's page is never observed, closed or driven.
func (r *WindowReconciler) reconcileProvenance(ctx context.Context, s *twv1.BrowserSession, w *twv1.BrowserWindow) (ctrl.Result, error) {
	a := r.agent
	if err := r.reconcileLost(ctx, w); err != nil {
		return ctrl.Result{}, err
	}
	if _, ok := a.pageOf(w); ok || ended(w) || !a.model.knowsRecords() {
		return ctrl.Result{}, nil
	}
	if s.Ended() {
		// An ended session gains no authority, and its pages may be gone
		// already (closeSessionPages) ahead of its windows' deletion: a status
		// naming one is no claim to refuse.
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	switch w.Spec.Source {
	case twv1.SourceOpen:
		if w.Status.TabID != "" {
			log.Info("Status names a page the driver never opened for this window; ignoring it", "claimed", w.Status.TabID)
			r.agent.recorder.Eventf(w, nil, corev1.EventTypeWarning, twv1.ReasonSpawnNotObserved, "Verify",
				"status.tabId %s is not a page tabwarden opened for this window; it is ignored and never touched", w.Status.TabID)
			w.Status.TabID, w.Status.WindowID, w.Status.URL, w.Status.Title, w.Status.OpenedTime = "", "", "", "", nil
			w.Status.PinnedWindowID = ""
			w.Status.Phase = twv1.WindowPending
		}
	case twv1.SourceSpawned:
		if ready, _ := a.model.state(); !ready {
			return ctrl.Result{}, nil
		}
		parent, err := a.spawnParent(ctx, w)
		if err == nil {
			err = a.recordAdoption(ctx, w, parent)
		}
		switch {
		case err == nil:
		case errors.Is(err, browser.ErrNotConnected):
		case errors.Is(err, browser.ErrNotFound) && w.Status.Phase != "" && w.Status.Phase != twv1.WindowPending:
			// Adopted before and gone since (its record went with a restart of a
			// driver without a state file): nothing to close.
		default:
			if !apimeta.IsStatusConditionFalse(w.Status.Conditions, twv1.OpenedCondition) {
				a.recorder.Eventf(s, w, corev1.EventTypeWarning, twv1.ReasonSpawnNotObserved, "Verify",
					"Spawned window %s names page %s, which tabwarden did not see spawned from a page of session %s; the page is never touched", w.Name, w.Spec.Spawn.TabID, s.Name)
			}
			w.Status.Phase = twv1.WindowPending
			w.Status.TabID, w.Status.WindowID, w.Status.URL, w.Status.Title = "", "", "", ""
			setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonSpawnNotObserved,
				fmt.Sprintf("tabwarden did not see page %q spawned from a page of session %q (%v). Spawned windows are created by the agent when it sees a session's page spawn one; this one is refused and its page is never observed, closed or driven. Delete it: kubectl delete browserwindow %s -n %s",
					w.Spec.Spawn.TabID, s.Name, err, w.Name, w.Namespace))
		}
	case twv1.SourceBind:
		if revoked(s) {
			setWindowCondition(w, twv1.BoundCondition, metav1.ConditionFalse, twv1.ReasonProfileNotAllowed, revokedMessage(s, a.opts.Profile))
			return ctrl.Result{}, nil
		}
		if ready, _ := a.model.state(); !ready {
			return ctrl.Result{}, nil
		}
		if _, ok := a.model.page(w.Spec.BindTabID); !ok {
			return ctrl.Result{}, nil // reconcileObserve says bound_tab_not_found
		}
		key := string(w.UID)
		a.model.rememberOwner(key, owner{Namespace: w.Namespace, Session: s.Name, Window: w.Name})
		err := a.opts.Browser.Bind(ctx, browser.BindRequest{Key: key, ID: w.Spec.BindTabID})
		switch {
		case err == nil:
			a.model.putRecord(browser.Record{Key: key, Page: w.Spec.BindTabID, Kind: browser.RecordBound})
		case errors.Is(err, browser.ErrNotConnected), errors.Is(err, browser.ErrNotFound):
		case errors.Is(err, browser.ErrInUse):
			if !apimeta.IsStatusConditionFalse(w.Status.Conditions, twv1.BoundCondition) {
				a.recorder.Eventf(s, w, corev1.EventTypeWarning, twv1.ReasonTabInUse, "Bind",
					"Tab %s is already owned or bound by another window; it is not bound to %s", w.Spec.BindTabID, w.Name)
			}
			w.Status.Phase = twv1.WindowPending
			setWindowCondition(w, twv1.BoundCondition, metav1.ConditionFalse, twv1.ReasonTabInUse,
				fmt.Sprintf("Tab %q is already owned or bound by another window: a tab is bound by at most one window, and a page a session owns is never bound by another. Bind another tab (kubectl get browsertablist %s -n %s -o jsonpath='{.tabs}') or delete this window: kubectl delete browserwindow %s -n %s",
					w.Spec.BindTabID, a.opts.Profile, w.Namespace, w.Name, w.Namespace))
		default:
			return ctrl.Result{}, fmt.Errorf("binding tab %s: %w", w.Spec.BindTabID, err)
		}
	}
	return ctrl.Result{}, nil
}

// reconcileLost settles a window whose page went with a browser restart: the
// driver holds its record as lost (of an earlier browser instance, see
// browser.LostRecords), so the page was not closed by the user or the page.
// An Open window (of a live session: an ended one is deleted) gets its page
// again, as a Deployment's pod is recreated after its node reboots: its status
// forgets the old page and reconcileOpen opens one at the old page's last url.
// A Spawned or Bound window ends Gone, reason BrowserRestarted: what spawned
// the page, or the user's tab, cannot come back. A window whose page the user
// closed is Gone already (ended) and stays so: nothing reopens it. The lost
// record is dropped once the window's status no longer names its page.
func (r *WindowReconciler) reconcileLost(ctx context.Context, w *twv1.BrowserWindow) error {
	a := r.agent
	lr, ok := a.opts.Browser.(browser.LostRecords)
	if !ok {
		return nil
	}
	key := string(w.UID)
	rec, lost := lr.LostRecord(key)
	if !lost {
		return nil
	}
	if _, ok := a.pageOf(w); ok || ended(w) || w.Status.TabID != rec.Page {
		// Settled (and written) already, or the page was never in the status.
		return lr.ForgetLost(key)
	}
	ctrl.LoggerFrom(ctx).Info("The window's page went with a browser restart", "page", rec.Page, "source", w.Spec.Source)
	if w.Spec.Source == twv1.SourceOpen {
		last := w.Status.URL
		// Status.URL stays: reconcileOpen opens the page there again.
		w.Status.TabID, w.Status.WindowID, w.Status.Title, w.Status.OpenedTime = "", "", "", nil
		w.Status.PinnedWindowID, w.Status.OwnsWindow = "", false
		w.Status.Phase = twv1.WindowPending
		at := reopenURL(w)
		if at == "" {
			at = w.Spec.URL
		}
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonBrowserRestarted,
			fmt.Sprintf("The browser of profile %q restarted and page %s (%s) went with it; the page opens again at %s", a.opts.Profile, rec.Page, last, at))
		a.recorder.Eventf(w, nil, corev1.EventTypeNormal, twv1.ReasonBrowserRestarted, "Reopen",
			"Page %s went with a restart of the browser; opening it again at %s", rec.Page, at)
		return nil
	}
	now := metav1.Now()
	w.Status.Phase, w.Status.ClosedTime = twv1.WindowGone, &now
	cond, what := twv1.OpenedCondition, "the page it spawned cannot come back"
	if w.Spec.Source == twv1.SourceBind {
		cond, what = twv1.BoundCondition, "the user's tab it bound went with it; the binding failed and no other tab takes its place"
	}
	setWindowCondition(w, cond, metav1.ConditionFalse, twv1.ReasonBrowserRestarted,
		fmt.Sprintf("The browser of profile %q restarted and page %s went with it: %s", a.opts.Profile, rec.Page, what))
	a.recorder.Eventf(w, nil, corev1.EventTypeNormal, twv1.ReasonBrowserRestarted, "Observe",
		"Page %s went with a restart of the browser; the window is Gone", rec.Page)
	return nil
}

// reopenURL is where an Open window's page opens again after a browser restart
// (reconcileLost): the last url the page showed, when it is a web page; ""
// otherwise (then spec.url).
func reopenURL(w *twv1.BrowserWindow) string {
	if w.Spec.Source != twv1.SourceOpen || w.Status.TabID != "" || ended(w) {
		return ""
	}
	if u := w.Status.URL; strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return u
	}
	return ""
}

// reconcileOpen opens an Open window's page once, in the background, never
// focused. Sets Opened=False with reason unacknowledged_spawns (held),
// waiting_for_user, BrowserUnreachable or OpenFailed; Opened=True once open.
func (r *WindowReconciler) reconcileOpen(ctx context.Context, s *twv1.BrowserSession, w *twv1.BrowserWindow) (ctrl.Result, error) {
	a := r.agent
	if w.Spec.Source != twv1.SourceOpen || w.Status.TabID != "" || ended(w) || s.Ended() {
		return ctrl.Result{}, nil
	}
	if _, ok := a.pageOf(w); ok {
		// Opened already (its status not written yet): observed, never opened twice.
		return ctrl.Result{}, nil
	}
	w.Status.Phase = twv1.WindowPending
	if revoked(s) {
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonProfileNotAllowed, revokedMessage(s, a.opts.Profile))
		return ctrl.Result{}, nil
	}
	if s.Spec.State == twv1.SessionWaitingForUser {
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonWaitingForUser,
			fmt.Sprintf("Held: session %q waits for the user. When the user is done, they resume it: %s", s.Name, hint.Resume(s.Namespace, s.Name)))
		return ctrl.Result{}, nil
	}
	siblings, err := r.sessionWindows(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	siblings = a.withHeld(siblings)
	if unacked := unacknowledgedOf(siblings); len(unacked) > 0 {
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonUnacknowledgedSpawns,
			heldMessage(s, unacked))
		return ctrl.Result{}, nil
	}
	if !a.profileRead.Load() {
		// A pool profile isolates each session in its own browser context: open
		// nothing before knowing whether this profile is one.
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonOpening,
			fmt.Sprintf("Waiting for the agent to read profile %q", a.opts.Profile))
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if ready, _ := a.model.state(); !ready {
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonBrowserUnreachable,
			fmt.Sprintf("Waiting for the browser of profile %q; the page opens once the agent reaches it", a.opts.Profile))
		return ctrl.Result{}, nil
	}
	if rf := a.checkURL(ctx, w.Spec.URL, "spec.url"); rf != nil {
		if !apimeta.IsStatusConditionFalse(w.Status.Conditions, twv1.OpenedCondition) ||
			apimeta.FindStatusCondition(w.Status.Conditions, twv1.OpenedCondition).Reason != twv1.ReasonURLNotAllowed {
			a.recorder.Eventf(w, s, corev1.EventTypeWarning, rf.reason, "Open", "%s Corrected call: %s", rf.message, rf.hint)
		}
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, rf.reason, rf.message+" Corrected call: "+rf.hint)
		// Checked again on purpose: an admin may allow the host meanwhile.
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	placement := w.Spec.Placement
	if placement == "" {
		placement = s.Spec.Placement
	}
	openURL := w.Spec.URL
	if last := reopenURL(w); last != "" && last != openURL && a.checkURL(ctx, last, "status.url") == nil {
		// The page went with a browser restart (reconcileLost): it opens again
		// where it was, if the profile allows it still.
		openURL = last
	}
	req := browser.OpenRequest{Key: string(w.UID), URL: openURL, NewWindow: placement != twv1.PlacementTab}
	if !req.NewWindow {
		req.WindowID = pinnedWindow(s, siblings)
		for i := range siblings {
			if siblings[i].UID != w.UID {
				req.Anchors = append(req.Anchors, string(siblings[i].UID))
			}
		}
	}
	if a.poolProfile() {
		req.Context = s.Namespace + "/" + s.Name
	}
	page, err := a.opts.Browser.Open(ctx, req)
	requested := req.WindowID
	if errors.Is(err, browser.ErrNotFound) && req.WindowID != "" {
		// The session's pinned window is gone (the user closed it): the page
		// opens in a window of its own rather than nowhere, and Placed says so.
		req.WindowID, req.Anchors, req.NewWindow = "", nil, true
		if page, err = a.opts.Browser.Open(ctx, req); err == nil {
			page.Misplaced = fmt.Sprintf("the session's pinned window %s is gone (closed); the page opened in a new window of its own", requested)
		}
	}
	if errors.Is(err, browser.ErrNotConnected) {
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonBrowserUnreachable, err.Error())
		return ctrl.Result{}, nil
	}
	if err != nil {
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonOpenFailed, err.Error())
		return ctrl.Result{}, fmt.Errorf("opening %s: %w", openURL, err)
	}
	// Into the model and the records before anything else: the page may spawn
	// before its status is written and before the event is consumed.
	a.model.put(page)
	a.model.rememberOwner(string(w.UID), owner{Namespace: w.Namespace, Session: s.Name, Window: w.Name})
	a.model.putRecord(browser.Record{Key: string(w.UID), Page: page.ID, Kind: browser.RecordOpened})
	now := metav1.Now()
	w.Status.TabID, w.Status.WindowID, w.Status.OwnsWindow = page.ID, page.WindowID, req.NewWindow
	w.Status.OpenedTime = &now
	w.Status.Phase = twv1.WindowOpen
	if placement == twv1.PlacementTab {
		setPlaced(w, requested, page)
	}
	// No Event: the status records the open, and an Event per page doubles the
	// API writes of the common path. Events are kept for refusals, adoptions and cleanup.
	a.metrics().PageOpened(w.CreationTimestamp.Time)
	ctrl.LoggerFrom(ctx).Info("Opened page", "page", page.ID, "url", openURL, "newWindow", req.NewWindow)
	return ctrl.Result{}, nil
}

// reconcileDisposition closes an owned page whose disposition is Close. Sets
// Opened=False reason Closed.
func (r *WindowReconciler) reconcileDisposition(ctx context.Context, _ *twv1.BrowserSession, w *twv1.BrowserWindow) (ctrl.Result, error) {
	if w.Spec.Disposition != twv1.DispositionClose || !w.Owned() || ended(w) {
		return ctrl.Result{}, nil
	}
	rec, ok, err := r.agent.confirmRecord(ctx, w)
	switch {
	case errors.Is(err, browser.ErrNotConnected):
		// Decided once the driver's records can be asked; a reconnect wakes it.
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	case !ok:
		// The driver, asked, has no page for it (never opened, or a spawn it
		// did not see): nothing of ours to close.
		w.Status.Phase = twv1.WindowClosed
		return ctrl.Result{}, nil
	}
	if err := r.closePage(ctx, w, rec); err != nil {
		return ctrl.Result{}, err
	}
	now := metav1.Now()
	w.Status.Phase, w.Status.ClosedTime = twv1.WindowClosed, &now
	setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonClosed, "Closed by tabwarden: disposition Close")
	return ctrl.Result{}, nil
}

// reconcileObserve reports what the browser shows of the page: ids, url, title
// and phase. A page missing from a connected browser is Gone (a bound tab fails
// its binding, reason bound_tab_gone); with the browser unreachable it is Unknown.
// Sets Opened (or Bound).
func (r *WindowReconciler) reconcileObserve(_ context.Context, _ *twv1.BrowserSession, w *twv1.BrowserWindow) (ctrl.Result, error) {
	a := r.agent
	if ended(w) {
		return ctrl.Result{}, nil
	}
	rec, recorded := a.pageOf(w)
	id := rec.Page
	if !recorded {
		if w.Spec.Source != twv1.SourceBind || w.Spec.BindTabID == "" {
			// Nothing this window has authority over yet: nothing to observe.
			return ctrl.Result{}, nil
		}
		// A Bind the driver has not recorded: observe the claimed tab only to say
		// that it is missing (its refusal, if any, is already in the conditions).
		id = w.Spec.BindTabID
		if ready, _ := a.model.state(); ready {
			if _, ok := a.model.page(id); ok {
				return ctrl.Result{}, nil
			}
		}
	}
	cond := twv1.OpenedCondition
	if w.Spec.Source == twv1.SourceBind {
		cond = twv1.BoundCondition
	}
	ready, epoch := a.model.state()
	if !ready {
		if w.Status.Phase == twv1.WindowOpen || w.Status.Phase == "" {
			w.Status.Phase = twv1.WindowUnknown
		}
		setWindowCondition(w, cond, metav1.ConditionUnknown, twv1.ReasonBrowserUnreachable,
			fmt.Sprintf("The agent cannot reach the browser of profile %q; the page is not declared closed", a.opts.Profile))
		return ctrl.Result{}, nil
	}
	page, ok := a.model.page(id)
	if !ok {
		now := metav1.Now()
		w.Status.Phase, w.Status.ClosedTime = twv1.WindowGone, &now
		switch {
		case w.Spec.Source == twv1.SourceBind && !recorded:
			setWindowCondition(w, cond, metav1.ConditionFalse, twv1.ReasonBoundTabNotFound,
				fmt.Sprintf("No tab %q in profile %q; nothing is bound in its place. Pick a tab from: kubectl get browsertablist %s -n %s -o jsonpath='{range .tabs[*]}{.id}{\"\\t\"}{.title}{\"\\t\"}{.url}{\"\\n\"}{end}'", id, a.opts.Profile, a.opts.Profile, w.Namespace))
		case w.Spec.Source == twv1.SourceBind:
			setWindowCondition(w, cond, metav1.ConditionFalse, twv1.ReasonBoundTabGone,
				fmt.Sprintf("The bound tab %q was closed; the binding failed and no other tab takes its place", id))
		default:
			setWindowCondition(w, cond, metav1.ConditionFalse, twv1.ReasonGone, "The page was closed outside tabwarden")
		}
		a.recorder.Eventf(w, nil, corev1.EventTypeNormal, twv1.EventPageGone, "Observe", "Page %s is gone from the browser", id)
		return ctrl.Result{}, nil
	}
	if w.Status.OpenedTime == nil {
		now := metav1.Now()
		w.Status.OpenedTime = &now
	}
	if w.Spec.Source == twv1.SourceSpawned {
		w.Status.OwnsWindow = page.Popup
	}
	w.Status.Phase = twv1.WindowOpen
	w.Status.TabID, w.Status.WindowID, w.Status.Epoch = page.ID, page.WindowID, epoch
	w.Status.URL, w.Status.Title = truncate(page.URL, 4096), truncate(page.Title, 512)
	if w.Spec.Source == twv1.SourceBind {
		setWindowCondition(w, cond, metav1.ConditionTrue, twv1.ReasonBound, "Bound to the user's tab; it is used, never closed")
	} else {
		setWindowCondition(w, cond, metav1.ConditionTrue, twv1.ReasonOpen, "The page is open")
	}
	return ctrl.Result{}, nil
}

// reconcileDelete closes the page of an owned, temporary window, releases a Keep
// window and detaches a bound tab, then removes the page finalizer.
func (r *WindowReconciler) reconcileDelete(ctx context.Context, w *twv1.BrowserWindow) (ctrl.Result, error) {
	a := r.agent
	if !controllerutil.ContainsFinalizer(w, twv1.PageFinalizer) {
		return ctrl.Result{}, nil
	}
	s := &twv1.BrowserSession{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}, s); err != nil {
		s = nil
	}
	// Only a page the driver recorded under this window is closed, released or
	// detached; a window the driver, asked, has no record of (never opened, a
	// spawn it did not see, a bind it refused) lets go without touching any
	// page. The phase in status is a claim too: a recorded, owned, temporary
	// page is closed whatever it says (closing a page already gone is a no-op).
	rec, recorded, err := a.confirmRecord(ctx, w)
	switch {
	case errors.Is(err, browser.ErrNotConnected):
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	live := recorded && !ended(w)
	if recorded {
		r.adoptSpawnsOf(ctx, w, rec)
	}
	switch {
	case !recorded:
	case !rec.Owned() || w.Spec.Disposition == twv1.DispositionKeep:
		if err := r.releasePage(ctx, w, rec); err != nil {
			return ctrl.Result{}, err
		}
		switch {
		case !live:
		case w.Spec.Source == twv1.SourceBind:
			r.event(s, w, twv1.EventTabDetached, "Detached the user's tab %s; it stays open", rec.Page)
		default:
			r.event(s, w, twv1.EventPageReleased, "Released Keep page %s (%s); it stays open as a deliverable", rec.Page, w.Status.URL)
		}
	default:
		if err := r.closeEnded(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		// Closed above or not, the window's own close decides: a page the
		// batch closed is gone (a no-op that drops its record), one it did not
		// close (a failure, a page it skipped) is closed here.
		if err := r.closePage(ctx, w, rec); err != nil {
			return ctrl.Result{}, err
		}
		if live {
			// One Event per page closed on its own; a session's cleanup is told
			// once, by the controller's SessionCleaned Event, not once per page.
			if s == nil || (s.DeletionTimestamp.IsZero() && !s.Ended()) {
				r.event(s, w, twv1.EventPageClosed, "Closed page %s (%s) of window %s", rec.Page, w.Status.URL, w.Name)
			}
			w.Status.Phase = twv1.WindowClosed
		}
	}
	if lr, ok := a.opts.Browser.(browser.LostRecords); ok {
		if err := lr.ForgetLost(string(w.UID)); err != nil {
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(w, twv1.PageFinalizer)
	a.model.forgetOwner(string(w.UID))
	if a.poolProfile() {
		// The session's last window may be gone: the profile loop disposes
		// its browser context once nothing of the session lives in it.
		a.markProfileDirty()
	}
	return ctrl.Result{}, nil
}

// adoptSpawnsOf adopts the pages the window's page spawned that are not adopted
// yet, before its record is dropped: after that the driver can no longer see
// them as spawned from the session (a popup opened while the browser link was
// down, reported on the reconnect that also runs this cleanup). Best effort:
// the adopter retries on its own, and a failure here must not hold the cleanup.
func (r *WindowReconciler) adoptSpawnsOf(ctx context.Context, w *twv1.BrowserWindow, rec browser.Record) {
	a := r.agent
	if ready, _ := a.model.state(); !ready {
		return
	}
	o := owner{Namespace: w.Namespace, Session: w.Spec.SessionRef.Name, Window: w.Name}
	for _, p := range a.model.spawnsOf(rec.Page) {
		if _, recorded := a.model.record(p.ID); recorded {
			continue
		}
		if err := a.adopt(ctx, p, o, rec.Key, ReasonOpener, time.Now()); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Adopting a spawn of a page before letting it go failed", "page", p.ID, "opener", rec.Page)
		}
	}
}

// ended reports whether the window's page is closed or gone for good.
func ended(w *twv1.BrowserWindow) bool {
	return w.Status.Phase == twv1.WindowClosed || w.Status.Phase == twv1.WindowGone
}

// closePage closes the window's recorded page; an unreachable browser is a
// transient error. The driver checks the record again (ErrNotOwned).
func (r *WindowReconciler) closePage(ctx context.Context, w *twv1.BrowserWindow, rec browser.Record) error {
	a := r.agent
	if ready, _ := a.model.state(); !ready {
		if !ended(w) {
			w.Status.Phase = twv1.WindowUnknown
		}
		return fmt.Errorf("closing page %s: %w", rec.Page, browser.ErrNotConnected)
	}
	if !ended(w) {
		w.Status.Phase = twv1.WindowClosing
	}
	if err := a.closeRecorded(ctx, rec, w.Status.OwnsWindow); err != nil {
		return fmt.Errorf("closing page %s: %w", rec.Page, err)
	}
	ctrl.LoggerFrom(ctx).Info("Closed page", "page", rec.Page)
	return nil
}

// closeRecorded closes a recorded page (the driver checks the record again)
// and forgets it: the page, then its record.
//
// A page can spawn another until the moment it closes, and the driver reports
// such a spawn before the close completes, but the adopter may not have
// handled it yet. The record is forgotten only once the adopter has handled
// every event reported until the close returned: the spawn is adopted into the
// page's session while the record still names its window (the driver accepts
// a closed opener's owner as the parent, ledger.Closed), never left open and
// owned by nobody. A spawn racing the session's deletion is the case:
// TestSpawnRacingDeletionIsAdopted.
func (a *Agent) closeRecorded(ctx context.Context, rec browser.Record, ownsWindow bool) error {
	// Counted once per page, while its record is held: a page the session's
	// batch close closed has no record left when its window's own cleanup
	// closes it again (a page that went with a disposed pool context still
	// has one, and is counted here).
	held, recorded := a.model.record(rec.Page)
	if err := a.opts.Browser.Close(ctx, browser.CloseRequest{Key: rec.Key, ID: rec.Page, OwnsWindow: ownsWindow}); err != nil {
		return err
	}
	if recorded && held.Key == rec.Key {
		a.metrics().PageClosed()
	}
	wait, cancel := context.WithTimeout(ctx, spawnDrainTimeout)
	defer cancel()
	if err := a.eventsHandled(wait); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Waiting for the spawns of a closed page to be adopted; forgetting its record anyway", "page", rec.Page)
	}
	a.model.remove(rec.Page)
	a.model.dropRecord(rec.Key, rec.Page)
	return nil
}

// fenceTimeout bounds how long an ended session's cleanup waits for its running
// action to stop (closeEnded).
const fenceTimeout = 30 * time.Second

// spawnDrainTimeout bounds how long a close waits for the adopter
// (closeRecorded): it is busy only while it takes a snapshot or writes an
// adoption.
const spawnDrainTimeout = 30 * time.Second

// closeEnded closes the temporary pages of an ended session at once: a pool
// session's browser context is disposed when it holds nothing else
// (disposeSessionContext), and the pages of its windows are closed together
// (closeSessionPages: after a disposal, this only drops the records of the
// pages that went with the context). What either leaves is each window's own
// cleanup.
// One at a time per session: the session's other windows, reconciled
// meanwhile, wait for it and then find their pages gone.
func (r *WindowReconciler) closeEnded(ctx context.Context, s *twv1.BrowserSession) error {
	if s == nil || !s.Ended() {
		return nil
	}
	_, err, _ := r.agent.closing.Do(string(s.UID), func() (any, error) {
		// Work in flight first: the running action stops before its next step
		// and what it spawned is adopted, so that it is closed with the rest.
		// A step that ignores its cancellation (a driver call stuck) holds the
		// cleanup for fenceTimeout at most: then the pages close under it.
		fenced, cancel := context.WithTimeout(ctx, fenceTimeout)
		defer cancel()
		if err := r.agent.fence.stop(fenced, s.UID); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "The session's running action did not stop; closing its pages anyway", "session", s.Name)
		}
		if _, err := r.agent.disposeSessionContext(ctx, s); err != nil {
			return nil, err
		}
		return nil, r.closeSessionPages(ctx, s)
	})
	return err
}

// closeSessionPages is the fast path of an ended session's cleanup outside a
// pool: the first of its windows reconciled once the session has ended (its
// own event maps to all of them) closes the temporary pages of all the
// session's windows on this profile at once, rather than one per window
// reconcile as each window's deletion arrives (the controller deletes them a
// few at a time, and this agent reconciles a few windows at a time).
// It closes what the window's own cleanup would: an owned page recorded under
// a window that is not Keep and not a Bind, whose status names that page (so
// whether the page owns its window is known); everything else, and any close
// that fails, is left to that window's own cleanup. The driver's last-tab rule
// applies to each close. The session's windows reconciled meanwhile wait for
// the batch and then find their pages gone.
//
// The session ending is the decision: the controller deletes every window of
// an ended session, and a deleted window's temporary page is closed whatever
// it says; closing the pages of the windows whose deletion has not arrived yet
// is that same decision, taken once. Their records go with their pages, so
// their own cleanup then only lets go (crash consistency: a restart in between
// finds the records of the pages not closed yet and closes them one by one).
func (r *WindowReconciler) closeSessionPages(ctx context.Context, s *twv1.BrowserSession) error {
	a := r.agent
	if ready, _ := a.model.state(); !ready || !a.model.knowsRecords() {
		return nil
	}
	windows, err := r.sessionWindows(ctx, s)
	if err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	var (
		wg     sync.WaitGroup
		sem    = make(chan struct{}, maxBatchCloses)
		closed atomic.Int32
	)
	for i := range windows {
		w := &windows[i]
		if w.Labels[twv1.ProfileLabel] != a.opts.Profile || w.Spec.Disposition == twv1.DispositionKeep || !w.Owned() {
			continue
		}
		rec, ok := a.pageOf(w)
		if !ok || !rec.Owned() {
			continue
		}
		st := &w.Status
		if held := a.holds.peek(w.UID); held != nil {
			st = held
		}
		if st.TabID != rec.Page {
			continue
		}
		r.adoptSpawnsOf(ctx, w, rec)
		owns := st.OwnsWindow
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := a.closeRecorded(ctx, rec, owns); err != nil {
				log.V(1).Info("Closing a page of an ended session failed; its window's cleanup retries", "page", rec.Page, "window", w.Name, "err", err.Error())
				return
			}
			closed.Add(1)
		}()
	}
	wg.Wait()
	if n := closed.Load(); n > 0 {
		log.Info("Closed the temporary pages of an ended session at once", "session", s.Name, "pages", n)
	}
	return nil
}

// maxBatchCloses bounds the closes closeSessionPages has in flight.
const maxBatchCloses = 64

// releasePage drops the window's record and leaves the page open.
func (r *WindowReconciler) releasePage(ctx context.Context, w *twv1.BrowserWindow, rec browser.Record) error {
	a := r.agent
	if err := a.opts.Browser.Release(ctx, browser.ReleaseRequest{Key: rec.Key, ID: rec.Page}); err != nil {
		return fmt.Errorf("releasing page %s of window %s: %w", rec.Page, w.Name, err)
	}
	if held, recorded := a.model.record(rec.Page); recorded && held.Key == rec.Key {
		a.metrics().PageReleased()
	}
	a.model.dropRecord(rec.Key, rec.Page)
	return nil
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

// revokedMessage says why nothing new opens or binds in a session whose
// profile stopped admitting its namespace, and what to do.
func revokedMessage(s *twv1.BrowserSession, profile string) string {
	return fmt.Sprintf("Held: profile %q no longer admits namespace %q; the session keeps what it has until it ends, and nothing new opens or binds. End it: kubectl delete browsersession %s -n %s",
		profile, s.Namespace, s.Name, s.Namespace)
}
