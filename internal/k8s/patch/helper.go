// Package patch is a small patch helper in the manner of cluster-api's: take a
// snapshot of an object when reconciliation starts, then write back only what
// changed — metadata and spec with optimistic locking, status through the status
// subresource — and nothing at all when nothing changed.
//
// Changes are found by comparing the typed objects field by field
// (equality.Semantic: an empty and a nil list are equal, quantities and times
// compare by value), not by converting both to JSON maps: a reconcile that
// changed nothing costs two reflective walks of the object and no request.
package patch

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
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

// Skipped reports whether SkipStatus was called.
func (h *Helper) Skipped() bool { return h.skipStatus }

// Before is the snapshot the next Patch compares against: read it, never
// change it.
func (h *Helper) Before() client.Object { return h.before }

// NewHelper snapshots obj, a pointer to a struct that embeds metav1.ObjectMeta
// and may have a Status field (every tabwarden kind).
func NewHelper(obj client.Object, c client.Client) *Helper {
	return &Helper{c: c, before: obj.DeepCopyObject().(client.Object)}
}

// Changes reports what obj changed since the snapshot: its object part
// (metadata, spec, any field but status and type meta) and its status.
func (h *Helper) Changes(obj client.Object) (object, status bool) {
	b, a := structOf(h.before), structOf(obj)
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case f.Name == "TypeMeta":
		case f.Name == "Status":
			status = !equality.Semantic.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface())
		case !f.IsExported():
		default:
			if !equality.Semantic.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
				object = true
			}
		}
	}
	return object, status
}

// Patch writes obj's changes since the snapshot: the object itself when its
// metadata or spec changed (optimistic lock: a concurrent writer makes it fail
// with a Conflict and the reconcile retry), then its status when that changed
// (a merge patch of the status fields that changed). Nothing changed, nothing
// is sent.
func (h *Helper) Patch(ctx context.Context, obj client.Object) error {
	objectChanged, statusChanged := h.Changes(obj)
	statusChanged = statusChanged && !h.skipStatus
	if objectChanged {
		// The status patch below needs the snapshot's status as its base and the
		// desired status back after the reply overwrote it with the server's.
		var desired reflect.Value
		if statusChanged {
			desired = reflect.New(statusField(obj).Type()).Elem()
			desired.Set(statusField(obj))
		}
		if err := h.c.Patch(ctx, obj, client.MergeFromWithOptions(h.before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		if statusChanged {
			// The reply is the object as stored, with the server's status: keep
			// its metadata (resourceVersion) and put the desired status back.
			server := obj.DeepCopyObject().(client.Object)
			statusField(server).Set(statusField(h.before))
			statusField(obj).Set(desired)
			h.before = server
		}
	}
	if statusChanged {
		if err := h.c.Status().Patch(ctx, obj, client.MergeFrom(h.before)); err != nil {
			return fmt.Errorf("patching status of %s: %w", client.ObjectKeyFromObject(obj), err)
		}
	}
	if objectChanged || statusChanged {
		h.before = obj.DeepCopyObject().(client.Object)
	}
	return nil
}

func structOf(obj client.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("patch: %T is not a pointer to a struct", obj))
	}
	return v.Elem()
}

// statusField is obj's Status field, or an unsettable zero value when it has none.
func statusField(obj client.Object) reflect.Value {
	f := structOf(obj).FieldByName("Status")
	if !f.IsValid() {
		return reflect.New(reflect.TypeOf(struct{}{})).Elem()
	}
	return f
}
