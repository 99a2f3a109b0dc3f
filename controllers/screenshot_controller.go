package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
)

// ScreenshotReconciler collects BrowserScreenshots with their action, as the
// garbage collector does through their owner reference where there is one
// (envtest and `tabwarden up` run none): a screenshot whose owning action is
// gone (or is another action of the same name), or that an agent of another
// profile than the one that claimed the action wrote, is deleted. It watches
// screenshots as metadata only: the controller never holds an image.
type ScreenshotReconciler struct {
	client.Client
	// APIReader confirms against the API server that an action is gone before
	// its screenshots are deleted (the cache may not show a new action yet).
	APIReader client.Reader
}

// screenshotActionIndex indexes screenshots (metadata) by the name of their
// controlling BrowserAction.
const screenshotActionIndex = "tabwarden.dev/screenshot-action"

func screenshotMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(twv1.GroupVersion.WithKind("BrowserScreenshot"))
	return m
}

// actionOwner is the controlling BrowserAction owner reference of a screenshot.
func actionOwner(o metav1.Object) (metav1.OwnerReference, bool) {
	for _, r := range o.GetOwnerReferences() {
		if r.Kind == "BrowserAction" && r.Controller != nil && *r.Controller {
			return r, true
		}
	}
	return metav1.OwnerReference{}, false
}

// SetupWithManager registers the reconciler: screenshots (metadata only), and
// actions mapped to their screenshots when one is deleted or claimed.
func (r *ScreenshotReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), screenshotMeta(), screenshotActionIndex, func(o client.Object) []string {
		if ref, ok := actionOwner(o); ok {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("browserscreenshot").
		For(&twv1.BrowserScreenshot{}, builder.OnlyMetadata).
		Watches(&twv1.BrowserAction{}, handler.EnqueueRequestsFromMapFunc(r.actionToScreenshots),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc: func(event.CreateEvent) bool { return false },
				UpdateFunc: func(e event.UpdateEvent) bool {
					return e.ObjectOld.(*twv1.BrowserAction).Status.ProfileName != e.ObjectNew.(*twv1.BrowserAction).Status.ProfileName
				},
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		Complete(handlers.Quiet(r))
}

func (r *ScreenshotReconciler) actionToScreenshots(ctx context.Context, o client.Object) []reconcile.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(twv1.GroupVersion.WithKind("BrowserScreenshotList"))
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{screenshotActionIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// Reconcile deletes a screenshot that no longer goes with a live action of
// its profile. A screenshot with no controlling action (orphaned on purpose:
// kubectl delete --cascade=orphan) is left alone.
func (r *ScreenshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	shot := screenshotMeta()
	if err := r.Get(ctx, req.NamespacedName, shot); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owner, ok := actionOwner(shot)
	if !ok || !shot.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	keep := func(c client.Reader) (bool, error) {
		act := &twv1.BrowserAction{}
		err := c.Get(ctx, client.ObjectKey{Namespace: shot.Namespace, Name: owner.Name}, act)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return act.UID == owner.UID &&
			(act.Status.ProfileName == "" || act.Status.ProfileName == shot.Labels[twv1.ProfileLabel]), nil
	}
	if k, err := keep(r.Client); err != nil || k {
		return ctrl.Result{}, err
	}
	if k, err := keep(r.APIReader); err != nil || k {
		return ctrl.Result{}, err
	}
	uid := shot.UID
	ctrl.LoggerFrom(ctx).Info("Collecting a screenshot whose action is gone", "screenshot", shot.Name, "action", owner.Name)
	err := r.Delete(ctx, shot, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}
