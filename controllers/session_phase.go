package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/metrics"
)

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
		if _, told := r.cleaned.LoadOrStore(s.UID, struct{}{}); !told && s.Status.Phase != twv1.SessionPhaseFinished {
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventSessionCleaned, "Cleanup", "Every page the session owned is closed, released or detached")
			if at, ok := r.endedAt.LoadAndDelete(s.UID); ok {
				metrics.SessionCleaned(s.Status.ProfileName, at.(time.Time))
			}
		}
		r.endedAt.Delete(s.UID) // a reconcile on a stale cache stored it again
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
