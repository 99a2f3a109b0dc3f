package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/metrics"
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
		if err := pool.DisposeContext(ctx, name, nil); err != nil {
			return err
		}
		a.metrics().PoolContextDisposed(metrics.DisposedAfterCleanup)
		ctrl.LoggerFrom(ctx).Info("Disposed the browser context of an ended session", "context", name)
	}
	return nil
}

// disposeSessionContext is the fast path of a pool session's cleanup: when the
// session has ended and every page living in its browser context is the
// temporary page of one of its windows (no Keep window, no bound tab, nothing
// the driver has not recorded under one of them), one disposal of the context
// closes them all, instead of one close per page. It reports whether it
// disposed the context; anything else falls back to the per-page path.
//
// Crash consistency: the driver drops the context from its ledger only after
// every page of it is destroyed, and a window's record stays until its page
// is destroyed (closing a page already gone is a no-op that drops the
// record); its finalizer goes only after its record. A restart in between
// redoes the disposal (a context already gone is not an error) or finds the
// records' pages gone.
//
// wentWith, when not nil, is called with each of the windows' records as the
// driver sees its page go, while the rest of the context is still going
// (closeEnded lets each window go from there).
func (a *Agent) disposeSessionContext(ctx context.Context, s *twv1.BrowserSession, wentWith func(browser.Record, *twv1.BrowserWindow)) (bool, error) {
	pool, ok := a.opts.Browser.(browser.ContextPool)
	if !ok || !a.poolProfile() || s == nil || !s.Ended() {
		return false, nil
	}
	name := s.Namespace + "/" + s.Name
	// One disposal per context: closeEnded runs it once per session at a time.
	if !slices.Contains(pool.PoolContexts(), name) {
		return false, nil
	}
	if ready, _ := a.model.state(); !ready || !a.model.knowsRecords() {
		return false, nil
	}
	var windows twv1.BrowserWindowList
	if err := a.client.List(ctx, &windows, client.InNamespace(s.Namespace), client.MatchingFields{twv1.SessionRefIndex: s.Name}); err != nil {
		return false, err
	}
	temporary := map[string]*twv1.BrowserWindow{}
	for i := range windows.Items {
		w := &windows.Items[i]
		if w.Labels[twv1.ProfileLabel] != a.opts.Profile {
			continue
		}
		if w.Spec.Disposition == twv1.DispositionKeep || !w.Owned() {
			return false, nil
		}
		temporary[string(w.UID)] = w
	}
	pages := 0
	for _, p := range a.model.all() {
		if p.Context != name {
			continue
		}
		rec, ok := a.model.record(p.ID)
		if !ok || !rec.Owned() || temporary[rec.Key] == nil {
			// Not (or not yet) the temporary page of one of the session's
			// windows: a spawn not adopted yet, a page someone else opened in
			// the context. The per-page path decides about each.
			return false, nil
		}
		pages++
	}
	if !a.noneKept(ctx, temporary, s.ResourceVersion) {
		return false, nil
	}
	var gone func(string)
	if wentWith != nil {
		gone = func(page string) {
			if rec, ok := a.model.record(page); ok && rec.Owned() && temporary[rec.Key] != nil {
				wentWith(rec, temporary[rec.Key])
			}
		}
	}
	if err := pool.DisposeContext(ctx, name, gone); err != nil {
		return false, fmt.Errorf("disposing the browser context %q of ended session %s: %w", name, s.Name, err)
	}
	a.metrics().PoolContextDisposed(metrics.DisposedInCleanup)
	ctrl.LoggerFrom(ctx).Info("Disposed the browser context of an ended session: its temporary pages are closed at once", "context", name, "pages", pages)
	return true, nil
}

// noneKept confirms on the API server what the cache showed of an ended
// session's windows before their context is disposed: that none is Keep or a
// Bind now. The cache may show the session's end before a Keep the user set
// earlier (the session and window informers are separate streams), and a
// disposal closes every page of the context. One GET per window, at most
// maxBatchCloses at a time; a window gone, or re-created under its name, is
// not a kept one (its pages are recorded under the old uid). Any failed read
// reports false: the per-page path, which reads each window again, decides.
func (a *Agent) noneKept(ctx context.Context, windows map[string]*twv1.BrowserWindow, after string) bool {
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, maxBatchCloses)
		kept atomic.Bool
	)
	for _, cached := range windows {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			w, err := a.current(ctx, cached, after)
			if err != nil {
				ctrl.LoggerFrom(ctx).V(1).Info("Reading a window of an ended session failed; its pages close one by one", "window", cached.Name, "err", err.Error())
				kept.Store(true)
				return
			}
			if w != nil && (w.Spec.Disposition == twv1.DispositionKeep || !w.Owned()) {
				kept.Store(true)
			}
		}()
	}
	wg.Wait()
	return !kept.Load()
}
