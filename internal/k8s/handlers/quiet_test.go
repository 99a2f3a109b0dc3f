package handlers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestQuiet(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "tabwarden.dev", Resource: "browserwindows"}, "w", errors.New("the object has been modified"))
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		err     error
		wantErr bool
		want    reconcile.Result
	}{
		{"success passes", context.Background(), nil, false, reconcile.Result{RequeueAfter: 7}},
		{"a wrapped conflict is retried quietly", context.Background(), fmt.Errorf("patching ns/w: %w", conflict), false, reconcile.Result{RequeueAfter: ConflictRequeue}},
		{"a stop mid-reconcile ends quietly", canceled, fmt.Errorf("patching ns/w: %w", context.Canceled), false, reconcile.Result{}},
		{"an aggregate of conflicts is retried quietly", context.Background(), utilerrors.NewAggregate([]error{fmt.Errorf("patching ns/w: %w", conflict), conflict}), false, reconcile.Result{RequeueAfter: ConflictRequeue}},
		{"an aggregate with another error is an error", context.Background(), utilerrors.NewAggregate([]error{conflict, errors.New("boom")}), true, reconcile.Result{}},
		{"any other error is an error", context.Background(), errors.New("boom"), true, reconcile.Result{}},
		{"a cancellation while running is an error", context.Background(), context.Canceled, true, reconcile.Result{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				if c.err == nil {
					return reconcile.Result{RequeueAfter: 7}, nil
				}
				return reconcile.Result{}, c.err
			})
			got, err := Quiet(inner).Reconcile(c.ctx, reconcile.Request{})
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("Quiet: (%+v, %v), want (%+v, error %v)", got, err, c.want, c.wantErr)
			}
		})
	}
}
