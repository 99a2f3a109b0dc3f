package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/k8s/conditions"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
)

// ActionReconciler is the controller's part of BrowserActions: it refuses an
// action whose session does not exist (session_unregistered; the agent of the
// session's profile runs every other guard, since only it sees the page),
// stamps a pending action with the profile its session is placed on (label
// tabwarden.dev/profile: the only agent that may claim it, which
// config/admission/action_status.yaml enforces), and removes finished actions
// once their TTL has passed.
type ActionReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// now is the clock (tests).
	now func() time.Time
}

// SetupWithManager registers the reconciler: actions, and sessions mapped to
// the actions that name them (an action created before its session waits for it).
func (r *ActionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.now == nil {
		r.now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserAction{}).
		Watches(&twv1.BrowserSession{}, handler.EnqueueRequestsFromMapFunc(r.sessionToActions)).
		Named("browseraction").
		Complete(handlers.Quiet(r))
}

func (r *ActionReconciler) sessionToActions(ctx context.Context, o client.Object) []reconcile.Request {
	var list twv1.BrowserActionList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{twv1.SessionRefIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// sessionGrace is how long an action may wait for its session to appear (a
// manifest applying both at once) before it is refused.
const sessionGrace = 2 * time.Second

// Reconcile dispatches one action: TTL for finished ones, session_unregistered
// for pending ones whose session is missing.
func (r *ActionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	act := &twv1.BrowserAction{}
	if err := r.Get(ctx, req.NamespacedName, act); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if act.Status.Phase.Finished() {
		return r.reconcileTTL(ctx, act)
	}
	if act.Status.Phase == twv1.ActionRunning {
		return ctrl.Result{}, nil
	}
	return r.reconcileSession(ctx, act)
}

// reconcileTTL deletes a finished action ttlSecondsAfterFinished after its
// completion, and requeues until then.
func (r *ActionReconciler) reconcileTTL(ctx context.Context, act *twv1.BrowserAction) (ctrl.Result, error) {
	ttl := 600 * time.Second
	if act.Spec.TTLSecondsAfterFinished != nil {
		ttl = time.Duration(*act.Spec.TTLSecondsAfterFinished) * time.Second
	}
	done := act.CreationTimestamp.Time
	if act.Status.CompletionTime != nil {
		done = act.Status.CompletionTime.Time
	}
	if left := done.Add(ttl).Sub(r.now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	err := r.Delete(ctx, act, client.Preconditions{UID: &act.UID, ResourceVersion: &act.ResourceVersion})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return ctrl.Result{}, nil
	}
	if err == nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Removed finished action after its TTL", "ttl", ttl)
	}
	return ctrl.Result{}, err
}

// reconcileSession stamps a pending action with its session's profile, and
// refuses (session_unregistered) an action whose session does not exist a few
// seconds after the action was created.
func (r *ActionReconciler) reconcileSession(ctx context.Context, act *twv1.BrowserAction) (ctrl.Result, error) {
	s := &twv1.BrowserSession{}
	err := r.Get(ctx, client.ObjectKey{Namespace: act.Namespace, Name: act.Spec.SessionRef.Name}, s)
	if err == nil {
		return ctrl.Result{}, r.stampProfile(ctx, act, s)
	}
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if left := act.CreationTimestamp.Add(sessionGrace).Sub(r.now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	before := act.DeepCopy()
	n := &twv1.BrowserSession{}
	n.APIVersion, n.Kind = twv1.GroupVersion.String(), "BrowserSession"
	n.Namespace, n.Name = act.Namespace, act.Spec.SessionRef.Name
	n.Spec = twv1.BrowserSessionSpec{Thread: act.Spec.Thread, Purpose: "say what this session is for", ProfileName: act.Spec.ProfileName}
	if n.Spec.ProfileName == "" {
		n.Spec.ProfileSelector = &metav1.LabelSelector{}
	}
	now := metav1.NewTime(r.now())
	act.Status.Phase, act.Status.Reason = twv1.ActionRefused, twv1.ReasonSessionUnregistered
	act.Status.Message = fmt.Sprintf("session %q does not exist in namespace %q: every action runs in a registered session (who drives it and why). Create it, then the action again", act.Spec.SessionRef.Name, act.Namespace)
	act.Status.Hint = hint.Create(n)
	act.Status.StartTime, act.Status.CompletionTime = &now, &now
	conditions.Action(act)
	if err := r.Status().Patch(ctx, act, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Recorder.Eventf(act, nil, corev1.EventTypeWarning, twv1.EventActionRefused, "Admit", "%s: %s Corrected call: %s", act.Status.Reason, act.Status.Message, act.Status.Hint)
	return ctrl.Result{}, nil
}

// stampProfile labels a pending action tabwarden.dev/profile=<the profile its
// session is placed on>: only that profile's agent sees it (its cache selects
// by the label) and may claim it (config/admission/action_status.yaml compares
// the label with the agent's identity; only the controller sets the label). An
// action claimed by an agent (status.profileName) keeps its label.
func (r *ActionReconciler) stampProfile(ctx context.Context, act *twv1.BrowserAction, s *twv1.BrowserSession) error {
	want := s.Status.ProfileName
	if want == "" || act.Status.ProfileName != "" || act.Labels[twv1.ProfileLabel] == want {
		return nil
	}
	before := act.DeepCopy()
	if act.Labels == nil {
		act.Labels = map[string]string{}
	}
	act.Labels[twv1.ProfileLabel] = want
	if err := r.Patch(ctx, act, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return nil // the action changed: its new version is reconciled again
		}
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Stamped the action with its session's profile", "profile", want)
	return nil
}
