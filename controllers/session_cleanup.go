package controllers

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
	"github.com/tabwarden/tabwarden/internal/metrics"
)

// reconcileDelete cleans up and lets the session go once none of its windows remain.
func (r *SessionReconciler) reconcileDelete(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	// A session that finished before its deletion had its cleanup told then
	// (its phase here may already be the Finishing this reconcile writes).
	_, told := r.cleaned.Load(s.UID)
	wasFinished := s.Status.Phase == twv1.SessionPhaseFinished || told
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
		r.cleaned.Delete(s.UID)
		r.deleting.Forget(client.ObjectKeyFromObject(s))
		r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventSessionCleaned, "Cleanup", "Every page the session owned is closed, released or detached")
		// A session that finished before its deletion was observed then.
		if at, finishing := r.endedAt.LoadAndDelete(s.UID); finishing {
			metrics.SessionCleaned(s.Status.ProfileName, at.(time.Time))
		} else if !wasFinished {
			metrics.SessionCleaned(s.Status.ProfileName, s.DeletionTimestamp.Time)
		}
	}
	return ctrl.Result{}, nil
}

// removeFinalizer removes the session's finalizer, the write that lets the
// session go (patch.RemoveFinalizer: it tests the finalizer list, not the
// resourceVersion, so the status written by the reconcile before, a moment
// ago as the windows went, is no conflict to retry). The object is gone after
// it. It reports false when the session was gone already.
func (r *SessionReconciler) removeFinalizer(ctx context.Context, s *twv1.BrowserSession) (bool, error) {
	err := patch.RemoveFinalizer(ctx, r.Client, s, twv1.SessionFinalizer)
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	controllerutil.RemoveFinalizer(s, twv1.SessionFinalizer)
	_ = r.letGo.Patched(s, twv1.SessionFinalizer, err) // err is nil or the 404 of a deleted session here
	return err == nil, nil
}

// cleanup deletes every window of an ended session, once: a window it deleted
// that the cache does not show deleting yet is not deleted again
// (patch.Deleting). The agent's page finalizer closes temporary pages and
// lets Keep pages and bound tabs go without closing them. It records Keep
// pages as deliverables, sets Clean=False (dirty_session) while owned pages
// are still open, and returns how many windows remain.
func (r *SessionReconciler) cleanup(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (int, error) {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8) // deletes in flight: cleanup of N pages is not N round trips in a row
	)
	owner := client.ObjectKeyFromObject(s)
	var listed map[types.UID]bool // built only when expectations are held
	r.deleting.Retain(owner, func(uid types.UID) bool {
		if listed == nil {
			listed = make(map[types.UID]bool, len(windows))
			for i := range windows {
				listed[windows[i].UID] = true
			}
		}
		return listed[uid]
	})
	for i := range windows {
		w := &windows[i]
		if w.Spec.Disposition == twv1.DispositionKeep && w.Live() {
			addDeliverable(s, w)
		}
		// Pending first: it also ends the expectation of a window shown deleting.
		if r.deleting.Pending(owner, w) || !w.DeletionTimestamp.IsZero() {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := r.Delete(ctx, w, client.Preconditions{UID: &w.UID})
			if err == nil {
				r.deleting.Deleted(owner, w)
			}
			if client.IgnoreNotFound(err) != nil {
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
