package patch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Deleting remembers the objects a reconciler deleted for an owner, by uid,
// until its cache shows them deleting: the expectations of Kubernetes' own
// controllers. The API server has the deletion once the DELETE returns, but
// the cache shows it only when the watch event arrives; a reconcile in
// between (a status write of the owner brings one) would see the objects as
// not deleted and delete them all again. Under load the watch runs tens of
// milliseconds behind (a traced pool session's cleanup sent its ten
// windows' DELETEs twice, a reconcile 100 ms apart), and every extra DELETE
// is work for the API server at the moment it is the slowest part.
//
// An expectation ends when the cache shows the object deleting, when it is
// older than DeletingTTL (the DELETE is sent again: a deletion that never
// shows is not taken on trust for ever), or with its owner (Forget). The
// zero value is ready to use.
type Deleting struct {
	mu sync.Mutex
	m  map[client.ObjectKey]map[types.UID]time.Time // owner → deleted objects → when
}

// DeletingTTL is how long an expectation holds at most.
var DeletingTTL = 30 * time.Second

// Deleted records that obj, one of owner's, was deleted just now.
func (d *Deleting) Deleted(owner client.ObjectKey, obj client.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[client.ObjectKey]map[types.UID]time.Time{}
	}
	if d.m[owner] == nil {
		d.m[owner] = map[types.UID]time.Time{}
	}
	d.m[owner][obj.GetUID()] = time.Now()
}

// Pending reports whether obj, as the cache shows it, is one this reconciler
// deleted and the cache does not show deleting yet: deleting it again would
// only repeat the request.
func (d *Deleting) Pending(owner client.ObjectKey, obj client.Object) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.m[owner][obj.GetUID()]
	if !ok {
		return false
	}
	if obj.GetDeletionTimestamp().IsZero() && time.Since(at) < DeletingTTL {
		return true
	}
	delete(d.m[owner], obj.GetUID())
	if len(d.m[owner]) == 0 {
		delete(d.m, owner)
	}
	return false
}

// Retain drops owner's expectations of objects the cache no longer lists
// (listed: the uids it lists): they are gone.
func (d *Deleting) Retain(owner client.ObjectKey, listed func(types.UID) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for uid := range d.m[owner] {
		if !listed(uid) {
			delete(d.m[owner], uid)
		}
	}
	if len(d.m[owner]) == 0 {
		delete(d.m, owner)
	}
}

// Forget drops owner's expectations: the owner is gone, and so are the
// objects it waited for (one deleted at once, with no finalizer, is never
// shown deleting).
func (d *Deleting) Forget(owner client.ObjectKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, owner)
}

// Len is how many expectations are held, for tests.
func (d *Deleting) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, objs := range d.m {
		n += len(objs)
	}
	return n
}
