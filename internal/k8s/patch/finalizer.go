package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// RemoveFinalizer removes finalizer from obj as a JSON patch that tests the
// finalizer list it replaces rather than the resourceVersion: a status written
// a moment before (by the same role or another) is then no conflict to retry,
// while a finalizer someone else added or removed meanwhile still is (the
// test fails with 422 Invalid and nothing is written). Removing the last
// finalizer of a deleted object lets the API server remove it: the patch is
// the object's last write. On success obj no longer holds the finalizer. A 404
// is returned as it is (callers that let a deleted object go treat it as done:
// LetGo.Patched). Nothing is sent when obj does not hold finalizer.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	held := obj.GetFinalizers()
	rest := slices.DeleteFunc(slices.Clone(held), func(f string) bool { return f == finalizer })
	if rest == nil {
		rest = []string{}
	}
	body, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/finalizers", "value": held},
		{"op": "replace", "path": "/metadata/finalizers", "value": rest},
	})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body)); err != nil {
		return fmt.Errorf("removing finalizer %s of %s: %w", finalizer, client.ObjectKeyFromObject(obj), err)
	}
	controllerutil.RemoveFinalizer(obj, finalizer)
	return nil
}
