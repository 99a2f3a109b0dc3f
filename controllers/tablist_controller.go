package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
)

// TabListReconciler decides where BrowserTabLists exist: one named after a
// profile in each namespace with a session placed on that profile, not ended
// and still admitted, and none elsewhere. It creates them empty and deletes
// them; the profile's agent only fills them in (config/admission/tablist.yaml:
// agents update, never create, so a stolen agent credential cannot put a list,
// and the user's urls, in a namespace of its choosing). A request is
// namespace/profile: the tab list's own key.
type TabListReconciler struct {
	client.Client
}

// SetupWithManager registers the reconciler: tab lists (their metadata only:
// the controller never reads the user's urls), and sessions mapped to the
// namespace/profile they were and are placed on.
func (r *TabListReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserTabList{}, builder.OnlyMetadata).
		Watches(&twv1.BrowserSession{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				enqueuePlacement(q, e.Object)
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				enqueuePlacement(q, e.ObjectOld)
				enqueuePlacement(q, e.ObjectNew)
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				enqueuePlacement(q, e.Object)
			},
		}).
		Named("browsertablist").
		Complete(handlers.Quiet(r))
}

// enqueuePlacement enqueues the tab list of the session's namespace and profile.
func enqueuePlacement(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
	s, ok := o.(*twv1.BrowserSession)
	if !ok || s.Status.ProfileName == "" {
		return
	}
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Status.ProfileName}})
}

// Reconcile makes one namespace's tab list of one profile exist or not.
func (r *TabListReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	want, err := r.wanted(ctx, req.Namespace, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	have := &metav1.PartialObjectMetadata{}
	have.SetGroupVersionKind(twv1.GroupVersion.WithKind("BrowserTabList"))
	err = r.Get(ctx, req.NamespacedName, have)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	exists := err == nil && have.DeletionTimestamp.IsZero()
	log := ctrl.LoggerFrom(ctx)
	switch {
	case want && !exists && err != nil:
		tl := &twv1.BrowserTabList{
			ObjectMeta:  metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, Labels: map[string]string{twv1.ProfileLabel: req.Name}},
			ProfileName: req.Name,
		}
		if err := r.Create(ctx, tl); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, err
		}
		log.V(1).Info("Created the tab list: a session of the namespace is placed on the profile; its agent fills it in")
	case !want && exists:
		if err := r.Delete(ctx, have); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		log.V(1).Info("Deleted the tab list: no session of the namespace is placed on the profile")
	}
	return ctrl.Result{}, nil
}

// wanted reports whether a session of namespace ns is placed on profile, not
// ended, and its namespace still admitted by the profile (not Admitted=False).
func (r *TabListReconciler) wanted(ctx context.Context, ns, profile string) (bool, error) {
	var sessions twv1.BrowserSessionList
	if err := r.List(ctx, &sessions, client.InNamespace(ns), client.MatchingFields{SessionProfileIndex: profile}, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for i := range sessions.Items {
		s := &sessions.Items[i]
		if s.Status.ProfileName == profile && !s.Ended() && !apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.AdmittedCondition) {
			return true, nil
		}
	}
	return false, nil
}
