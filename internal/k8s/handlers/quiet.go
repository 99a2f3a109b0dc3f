package handlers

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictRequeue is how soon a reconcile that lost an optimistic-lock race
// runs again: by then the cache has, almost always, the newer object.
const ConflictRequeue = 100 * time.Millisecond

// Quiet wraps r so that the ordinary outcomes of a busy controller are not
// reported as errors: a write that lost an optimistic-lock race (409 Conflict)
// is retried after ConflictRequeue, and a reconcile cut short because the
// manager is stopping ends quietly. Both are logged at V(1). Every other error
// goes to controller-runtime as it is (logged at ERROR, retried with backoff).
func Quiet(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		switch {
		case err == nil:
			return res, nil
		case conflict(err):
			ctrl.LoggerFrom(ctx).V(1).Info("lost an optimistic-lock race; retrying", "error", err.Error(), "in", ConflictRequeue)
			return reconcile.Result{RequeueAfter: ConflictRequeue}, nil
		case ctx.Err() != nil:
			ctrl.LoggerFrom(ctx).V(1).Info("stopped while reconciling", "error", err.Error())
			return reconcile.Result{}, nil
		}
		return res, err
	})
}

// conflict reports whether err is a 409 Conflict, or an aggregate (a patch
// helper's) of nothing but conflicts.
func conflict(err error) bool {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if !conflict(e) {
				return false
			}
		}
		return len(agg.Errors()) > 0
	}
	return apierrors.IsConflict(err)
}
