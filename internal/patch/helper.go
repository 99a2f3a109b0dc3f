// Package patch is a small patch helper in the manner of cluster-api's: take a
// snapshot of an object when reconciliation starts, then write back only what
// changed — metadata and spec with optimistic locking, status through the status
// subresource — and nothing at all when nothing changed.
package patch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helper patches one object against the snapshot taken by NewHelper.
type Helper struct {
	c      client.Client
	before client.Object
	// skipStatus drops the status part of the next Patch.
	skipStatus bool
}

// SkipStatus makes the next Patch write metadata and spec only (for an object
// that the patch itself lets go, by removing its last finalizer).
func (h *Helper) SkipStatus() { h.skipStatus = true }

// NewHelper snapshots obj.
func NewHelper(obj client.Object, c client.Client) *Helper {
	return &Helper{c: c, before: obj.DeepCopyObject().(client.Object)}
}

// Patch writes obj's changes since the snapshot: the object itself when its
// metadata or spec changed (optimistic lock: a concurrent writer makes it fail
// and the reconcile retry), then its status when that changed.
func (h *Helper) Patch(ctx context.Context, obj client.Object) error {
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(h.before)
	if err != nil {
		return err
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	desiredStatus := after["status"]
	statusChanged := !h.skipStatus && !equality.Semantic.DeepEqual(before["status"], desiredStatus)
	delete(before, "status")
	delete(after, "status")
	// The status patch below needs the snapshot's status as its base, so keep a
	// copy of the object to patch it from.
	statusBase := h.before.DeepCopyObject().(client.Object)
	if !equality.Semantic.DeepEqual(before, after) {
		// Status fields are ignored by the main resource endpoint; send only the rest.
		if err := h.c.Patch(ctx, obj, client.MergeFromWithOptions(h.before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		// The reply overwrote obj with the server's status; put the desired one back.
		if statusChanged {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return err
			}
			u["status"] = desiredStatus
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj); err != nil {
				return err
			}
		}
	}
	if statusChanged {
		if err := h.c.Status().Patch(ctx, obj, client.MergeFrom(statusBase)); err != nil {
			return fmt.Errorf("patching status of %s: %w", client.ObjectKeyFromObject(obj), err)
		}
	}
	h.before = obj.DeepCopyObject().(client.Object)
	return nil
}
