package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
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
	// No Event here: the hold is told by what it holds (a held Open window's
	// Hold Event, a refused action's ActionRefused), so a spawn acknowledged
	// before the session's next step costs three writes (docs/design.md,
	// "Writes per operation").
	setCondition(s, twv1.SpawnsAcknowledgedCondition, metav1.ConditionFalse, twv1.ReasonUnacknowledgedSpawns, UnacknowledgedMessage(s.Namespace, unacked))
	return ctrl.Result{}, nil
}
