package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// A window's authority over its page comes from the driver's records, never
// from what its status says: reconcileProvenance checks it (a Spawned window's
// spawn, a Bind's tab), and reconcileLost settles a window whose page went
// with a browser restart.

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
