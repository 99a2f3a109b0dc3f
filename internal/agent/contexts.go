package agent

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// disposeEndedContexts ends the browser context (`<namespace>/<session>`) of
// every pool session that is over: the session is gone or ended, none of its
// windows on this profile still holds the page finalizer (its cleanup is done),
// and no page lives in the context any more. A released Keep page keeps its
// context (and the session's cookies it needs) alive until it is closed:
// disposing the context would close the deliverable. Run by the profile loop
// (every heartbeat, and soon after a window's cleanup), so it converges after a
// restart and after a cache that lagged behind the last window's deletion.
func (a *Agent) disposeEndedContexts(ctx context.Context) error {
	pool, ok := a.opts.Browser.(browser.ContextPool)
	if !ok || !a.poolProfile() {
		return nil
	}
	if ready, _ := a.model.state(); !ready {
		return nil
	}
	names := pool.PoolContexts()
	if len(names) == 0 {
		return nil
	}
	live := map[string]bool{}
	for _, p := range a.model.all() {
		live[p.Context] = true
	}
	for _, name := range names {
		ns, session, ok := strings.Cut(name, "/")
		if !ok || live[name] {
			continue
		}
		s := &twv1.BrowserSession{}
		err := a.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: session}, s)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		case s.Ended():
		case s.Status.ProfileName == a.opts.Profile || s.Status.ProfileName == "":
			// Running here, or not placed yet (it may be placed here next).
			continue
		}
		var windows twv1.BrowserWindowList
		if err := a.client.List(ctx, &windows, client.InNamespace(ns), client.MatchingFields{twv1.SessionRefIndex: session}); err != nil {
			return err
		}
		busy := false
		for i := range windows.Items {
			busy = busy || controllerutil.ContainsFinalizer(&windows.Items[i], twv1.PageFinalizer)
		}
		if busy {
			continue
		}
		if err := pool.DisposeContext(ctx, name); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("Disposed the browser context of an ended session", "context", name)
	}
	return nil
}
