package agent

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// trackOwners names every cached window in the model's owners (uid → window),
// so that a record the driver kept from an earlier run of the agent finds its
// window without a field index by uid: the index cost two sets and two keys per
// window (controller-runtime indexes each value twice, per namespace and for
// all), the owners map one entry, and the windows this agent opens were in it
// already. A window that leaves the cache is forgotten unless a record still
// names it: then the page is an orphan, and collectOrphans, which asks the API
// server by that name, forgets it once the page is collected.
func (a *Agent) trackOwners(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &twv1.BrowserWindow{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if w, ok := o.(*twv1.BrowserWindow); ok {
				a.model.rememberOwner(string(w.UID), owner{Namespace: w.Namespace, Session: w.Spec.SessionRef.Name, Window: w.Name})
				if !w.DeletionTimestamp.IsZero() {
					a.deletions.seen(w.UID)
				}
			}
		},
		UpdateFunc: func(_, o any) {
			if w, ok := o.(*twv1.BrowserWindow); ok && !w.DeletionTimestamp.IsZero() {
				a.deletions.seen(w.UID)
			}
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if w, ok := o.(*twv1.BrowserWindow); ok {
				a.model.forgetOwnerUnrecorded(string(w.UID))
				a.deletions.seen(w.UID)
			}
		},
	})
	if err != nil {
		return err
	}
	a.ownersSynced = reg.HasSynced
	return nil
}
