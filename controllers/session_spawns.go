package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

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
