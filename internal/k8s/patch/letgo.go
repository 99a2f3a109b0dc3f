package patch

import (
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Released reports whether obj is deleted and no longer holds finalizer: the
// patch that removed the finalizer (the reconciler's own, and the last one)
// lets the API server remove the object, so a status write after it would
// only meet a 404.
func Released(obj client.Object, finalizer string) bool {
	return !obj.GetDeletionTimestamp().IsZero() && !controllerutil.ContainsFinalizer(obj, finalizer)
}

// LetGo remembers the objects a reconciler let go (Released by its patch), by
// name and uid, until its cache sees them go. The API server removes such an
// object at once, but the cache shows it, deleted and without the finalizer,
// until the delete event arrives: a reconcile in between (another watch mapped
// to it) has nothing left to do, and patching again would only meet a 404.
//
// A reconcile asks Gone right after reading the object from the cache (and
// Forget when the read found nothing), and reports its last patch through
// Patched. The zero value is ready to use.
type LetGo struct {
	m sync.Map // client.ObjectKey → types.UID
}

// Gone reports whether obj, as the cache shows it, is an object this
// reconciler let go: nothing is left to do for it. A remembered name that now
// names another object (or one not deleted) is forgotten.
func (l *LetGo) Gone(obj client.Object) bool {
	key := client.ObjectKeyFromObject(obj)
	uid, ok := l.m.Load(key)
	if !ok {
		return false
	}
	if uid == obj.GetUID() && !obj.GetDeletionTimestamp().IsZero() {
		return true
	}
	l.m.Delete(key)
	return false
}

// Forget drops key: the cache saw the object go.
func (l *LetGo) Forget(key client.ObjectKey) { l.m.Delete(key) }

// Patched records the outcome err of the reconcile's last patch of obj: an
// object the patch released (Released, read after the patch) is remembered
// once the patch went through or met a 404, and the 404 of a deleted object
// is no error (its finalizer was the last thing holding it). It returns err
// otherwise.
func (l *LetGo) Patched(obj client.Object, finalizer string, err error) error {
	if (err == nil || apierrors.IsNotFound(err)) && Released(obj, finalizer) {
		l.m.Store(client.ObjectKeyFromObject(obj), obj.GetUID())
	}
	if err != nil && apierrors.IsNotFound(err) && !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return err
}
