package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

// Opening an Open window's page (reconcileOpen) and reporting what the
// browser shows of a window's page (reconcileObserve).

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
		msg := heldMessage(s, unacked)
		if c := apimeta.FindStatusCondition(w.Status.Conditions, twv1.OpenedCondition); c == nil || c.Reason != twv1.ReasonUnacknowledgedSpawns {
			// The hold is told when it stops something: here, and by the refused
			// action's ActionRefused Event. A spawn acknowledged before the
			// session's next step costs no Event (docs/design.md, "Writes per
			// operation"). Event notes are limited to 1 KiB: the condition holds
			// the command for every window.
			a.recorder.Eventf(w, s, corev1.EventTypeWarning, twv1.ReasonUnacknowledgedSpawns, "Hold", "%s", truncate(msg, 1000))
		}
		setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonUnacknowledgedSpawns, msg)
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
