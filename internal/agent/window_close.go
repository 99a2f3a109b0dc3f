package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
)

// Closing, releasing and detaching pages: a page whose disposition is Close
// (reconcileDisposition), a deleted window's page in the page finalizer
// (reconcileDelete), and an ended session's pages at once (closeEnded).

// reconcileDisposition closes an owned page whose disposition is Close. Sets
// Opened=False reason Closed.
func (r *WindowReconciler) reconcileDisposition(ctx context.Context, _ *twv1.BrowserSession, w *twv1.BrowserWindow) (ctrl.Result, error) {
	if w.Spec.Disposition != twv1.DispositionClose || !w.Owned() || ended(w) {
		return ctrl.Result{}, nil
	}
	rec, ok, err := r.agent.confirmRecord(ctx, w)
	switch {
	case errors.Is(err, browser.ErrNotConnected):
		// Decided once the driver's records can be asked; a reconnect wakes it.
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	case !ok:
		// The driver, asked, has no page for it (never opened, or a spawn it
		// did not see): nothing of ours to close.
		w.Status.Phase = twv1.WindowClosed
		return ctrl.Result{}, nil
	}
	if err := r.closePage(ctx, w, rec); err != nil {
		return ctrl.Result{}, err
	}
	now := metav1.Now()
	w.Status.Phase, w.Status.ClosedTime = twv1.WindowClosed, &now
	setWindowCondition(w, twv1.OpenedCondition, metav1.ConditionFalse, twv1.ReasonClosed, "Closed by tabwarden: disposition Close")
	return ctrl.Result{}, nil
}

// reconcileDelete closes the page of an owned, temporary window, releases a Keep
// window and detaches a bound tab, then removes the page finalizer.
func (r *WindowReconciler) reconcileDelete(ctx context.Context, write *windowWrite, w *twv1.BrowserWindow) (ctrl.Result, error) {
	a := r.agent
	if !controllerutil.ContainsFinalizer(w, twv1.PageFinalizer) {
		return ctrl.Result{}, nil
	}
	s := &twv1.BrowserSession{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}, s); err != nil {
		s = nil
	}
	// Only a page the driver recorded under this window is closed, released or
	// detached; a window the driver, asked, has no record of (never opened, a
	// spawn it did not see, a bind it refused) lets go without touching any
	// page. The phase in status is a claim too: a recorded, owned, temporary
	// page is closed whatever it says (closing a page already gone is a no-op).
	rec, recorded, err := a.confirmRecord(ctx, w)
	switch {
	case errors.Is(err, browser.ErrNotConnected):
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	live := recorded && !ended(w)
	if recorded && !a.modelCurrent(ctx) {
		// The browser is back, but the adopter has not taken its snapshot:
		// what the page spawned while the link was down is not known yet.
		// Letting go of the record now would leave such a spawn owned by
		// nobody. The snapshot wakes every window; the requeue is a fallback.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if recorded {
		r.adoptSpawnsOf(ctx, w, rec)
	}
	switch {
	case !recorded:
	case !rec.Owned() || w.Spec.Disposition == twv1.DispositionKeep:
		if err := r.releasePage(ctx, w, rec); err != nil {
			return ctrl.Result{}, err
		}
		switch {
		case !live:
		case w.Spec.Source == twv1.SourceBind:
			r.event(s, w, twv1.EventTabDetached, "Detached the user's tab %s; it stays open", rec.Page)
		default:
			r.event(s, w, twv1.EventPageReleased, "Released Keep page %s (%s); it stays open as a deliverable", rec.Page, w.Status.URL)
		}
	default:
		if err := r.closeEnded(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		// Closed above or not, the window's own close decides: a page the
		// batch closed is gone (a no-op that drops its record), one it did not
		// close (a failure, a page it skipped) is closed here.
		if err := r.closePage(ctx, w, rec); err != nil {
			return ctrl.Result{}, err
		}
		if live {
			// One Event per page closed on its own; a session's cleanup is told
			// once, by the controller's SessionCleaned Event, not once per page.
			if s == nil || (s.DeletionTimestamp.IsZero() && !s.Ended()) {
				r.event(s, w, twv1.EventPageClosed, "Closed page %s (%s) of window %s", rec.Page, w.Status.URL, w.Name)
			}
			w.Status.Phase = twv1.WindowClosed
		}
	}
	release, ok := a.claimLetGo(w.UID)
	if !ok {
		// The session's batch is letting the window go (letGoClosed): its
		// patch lets it go, or its failure wakes the window again. Nothing is
		// written here, not even the status: the window is on its way out.
		write.skipAll()
		return ctrl.Result{RequeueAfter: letGoBackstop}, nil
	}
	write.releaseAfter(release)
	if err := a.forgetLost(w); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(w, twv1.PageFinalizer)
	a.forgetWindow(w)
	return ctrl.Result{}, nil
}

// forgetLost drops what the driver remembers of the window's pages lost in a
// browser restart, before the window goes.
func (a *Agent) forgetLost(w *twv1.BrowserWindow) error {
	if lr, ok := a.opts.Browser.(browser.LostRecords); ok {
		return lr.ForgetLost(string(w.UID))
	}
	return nil
}

// forgetWindow drops the agent's memory of a window it let go.
func (a *Agent) forgetWindow(w *twv1.BrowserWindow) {
	a.model.forgetOwner(string(w.UID))
	if a.poolProfile() {
		// The session's last window may be gone: the profile loop disposes
		// its browser context once nothing of the session lives in it.
		a.markProfileDirty()
	}
}

// closeAndLetGo closes the recorded page of an ended session's window (one
// already gone, e.g. with its disposed context, only loses its record) and then
// lets the window go in the background (letGoClosed): the close is over when it
// returns, and the batch's slot and the worker that runs the batch are free
// while the let-go waits for the window's deletion. A close that fails is left
// to the window's own cleanup, which retries. It reports whether the page was
// closed.
func (r *WindowReconciler) closeAndLetGo(ctx context.Context, rec browser.Record, w *twv1.BrowserWindow, ownsWindow bool) bool {
	if err := r.agent.closeRecorded(ctx, rec, ownsWindow); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Closing a page of an ended session failed; its window's cleanup retries", "page", rec.Page, "window", w.Name, "err", err.Error())
		return false
	}
	// Its own context: bounded, and not ended with the reconcile that ran the
	// batch (controller-runtime cancels that one at return when a
	// ReconciliationTimeout is set).
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deletionWait+letGoWriteTimeout)
	go func() {
		defer cancel()
		r.letGoClosed(lctx, w)
	}()
	return true
}

// letGoWriteTimeout bounds a background let-go's reads and finalizer patch
// after its wait for the window's deletion: what it does not finish, the
// window's own reconcile does.
const letGoWriteTimeout = 10 * time.Second

// letGoClosed lets a deleted window go the moment the session's batch
// (closeSessionPages) has closed its page: the removal of its page finalizer is
// the write its reconcile would make next, and nothing else is left to do for
// it. Made here, the N windows' last writes go out as their pages go, not all
// after the last page when the window reconciles (16 at a time) get to them:
// the session, which goes once none of its windows remain, then goes one
// finalizer write and the controller's after its last page (docs/design.md,
// "The session goes with its last page").
//
// The finalizer comes off a deleted window only. The controller deletes every
// window of an ended session, a few at a time, while the pages close all at
// once: a page often goes before its window's deletion reaches this agent's
// cache. Then this waits for it (deletionWait at most, told by the informer's
// event: a.deletions), in its own goroutine: the batch and the worker that ran
// it do not wait. (They did once: at 2,000 sessions ended together, 16
// workers each held for up to 2 s by deletions that the controller makes a
// session at a time made the agent's closes, not the API server, the pace of
// the whole cleanup.) A deletion that does not come within deletionWait is
// left to the window's reconcile, which its deletion brings: the record is
// gone, so it only lets go. The two never patch at once (claimLetGo): the one
// that finds the other's claim sends nothing, and a failure here (a conflict,
// the API server away, the agent stopping) wakes the window, whose reconcile
// retries. One that comes after finds the window gone or let go (LetGo) and
// sends nothing.
func (r *WindowReconciler) letGoClosed(ctx context.Context, listed *twv1.BrowserWindow) {
	a := r.agent
	seen, stop := a.deletions.expect(listed.UID)
	defer stop()
	w := &twv1.BrowserWindow{}
	current := func() bool {
		err := a.client.Get(ctx, client.ObjectKeyFromObject(listed), w)
		return err == nil && w.UID == listed.UID && !a.letGo.Gone(w)
	}
	if !current() {
		return
	}
	if w.DeletionTimestamp.IsZero() {
		if !waitSeen(ctx, seen, deletionWait) || !current() || w.DeletionTimestamp.IsZero() {
			return
		}
	}
	if _, recorded := a.model.pageOfKey(string(w.UID)); recorded {
		// A record under the window still (another page the driver holds for
		// it, which the batch did not close): its own cleanup decides.
		return
	}
	release, ok := a.claimLetGo(w.UID)
	if !ok {
		// The window's reconcile is letting it go (or retrying a failure).
		return
	}
	err := a.forgetLost(w)
	if err == nil {
		err = a.letGo.Patched(w, twv1.PageFinalizer, patch.RemoveFinalizer(ctx, a.client, w, twv1.PageFinalizer))
	}
	// Released before the wake below, so that the reconcile it brings finds
	// the window free.
	release()
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Letting a window of an ended session go failed; its reconcile retries", "window", w.Name, "err", err.Error())
		a.wakeAfterLetGo(ctx, w)
		return
	}
	a.forgetWindow(w)
}

// claimLetGo claims the removal of a deleted window's page finalizer, for one
// writer at a time: letGoClosed, in the background as the session's batch
// closes the window's page, and the window's own reconcile, which its
// deletion brings once the batch is over, both get there as a session's last
// pages go. The second sends nothing. Both sent their patch before: in traces
// of 10-page cleanups, 2 to 7 of the 10 windows were patched twice, all in
// the last 50 ms before the session's last page went, where each extra write
// delays the ones the session's end waits for. It reports false when the other
// holds the claim; release ends it.
func (a *Agent) claimLetGo(uid types.UID) (release func(), ok bool) {
	if _, held := a.lettingGo.LoadOrStore(uid, struct{}{}); held {
		return nil, false
	}
	return func() { a.lettingGo.Delete(uid) }, true
}

// letGoBackstop is when a window's reconcile that found letGoClosed letting
// it go looks again: by then that let-go has ended (letGoWriteTimeout), and
// it woke the window if it failed. A let-go that succeeded leaves nothing to
// look at.
const letGoBackstop = letGoWriteTimeout

// wakeAfterLetGo wakes a window whose let-go failed: its reconcile, which may
// have found the let-go's claim held and sent nothing, retries now.
func (a *Agent) wakeAfterLetGo(ctx context.Context, w *twv1.BrowserWindow) {
	o := &twv1.BrowserWindow{}
	o.Namespace, o.Name = w.Namespace, w.Name
	select {
	case a.wake <- event.GenericEvent{Object: o}:
	case <-ctx.Done():
		// The let-go's time is up (or the agent stops): the reconcile's
		// backstop requeue looks again.
	}
}

// modelCurrent reports whether the agent's model can tell what the browser's
// pages spawned: it waits until the adopter has handled every event the driver
// reported so far, so a spawn reported but not handled yet is adopted before a
// page is let go of (a page about to close drains again after its close:
// closeRecorded), then asks whether the model is connected and synced. A
// disconnect and reconnect the adopter has not handled yet leave the model of
// the old connection looking ready, without the pages spawned while the link
// was down (the fuzz, seed 1 episode 203). It reports false when the events
// are not handled within spawnDrainTimeout, or when not synced since the last
// reconnect: the caller must not let go of a record then.
func (a *Agent) modelCurrent(ctx context.Context) bool {
	wait, cancel := context.WithTimeout(ctx, spawnDrainTimeout)
	err := a.eventsHandled(wait)
	cancel()
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Waiting for the browser's events before letting go of pages")
		return false
	}
	ready, _ := a.model.state()
	return ready
}

// adoptSpawnsOf adopts the pages the window's page spawned, and those an action
// in the window caused, that are not adopted yet, before its record is
// dropped: after that the driver can no longer see them as spawned from the
// session (a popup opened while the browser link was down, reported on the
// reconnect that also runs this cleanup). The caller checked modelCurrent.
// Adoption is best effort: the adopter retries on its own, and a failure here
// must not hold the cleanup.
func (r *WindowReconciler) adoptSpawnsOf(ctx context.Context, w *twv1.BrowserWindow, rec browser.Record) {
	a := r.agent
	o := owner{Namespace: w.Namespace, Session: w.Spec.SessionRef.Name, Window: w.Name}
	for _, p := range a.model.spawnsOf(rec.Page) {
		if _, recorded := a.model.record(p.ID); recorded {
			continue
		}
		if err := a.adopt(ctx, p, o, rec.Key, ReasonOpener, time.Now()); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Adopting a spawn of a page before letting it go failed", "page", p.ID, "opener", rec.Page)
		}
	}
	// And what an action in this window caused without an opener (or from a
	// bound tab) whose adoption failed so far (the API server unreachable):
	// once the window and its session are gone, nothing could adopt it.
	key := ActionKey(w.Namespace, w.Spec.SessionRef.Name, w.Name)
	for _, p := range a.model.attributedTo(key) {
		if _, recorded := a.model.record(p.ID); recorded {
			continue
		}
		if err := a.adopt(ctx, p, o, key, ReasonDuringAction, time.Now()); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Adopting a page an action of the window caused before letting it go failed", "page", p.ID, "action", key)
		}
	}
}

// ended reports whether the window's page is closed or gone for good.
func ended(w *twv1.BrowserWindow) bool {
	return w.Status.Phase == twv1.WindowClosed || w.Status.Phase == twv1.WindowGone
}

// closePage closes the window's recorded page; an unreachable browser is a
// transient error. The driver checks the record again (ErrNotOwned).
func (r *WindowReconciler) closePage(ctx context.Context, w *twv1.BrowserWindow, rec browser.Record) error {
	a := r.agent
	if ready, _ := a.model.state(); !ready {
		if !ended(w) {
			w.Status.Phase = twv1.WindowUnknown
		}
		return fmt.Errorf("closing page %s: %w", rec.Page, browser.ErrNotConnected)
	}
	if !ended(w) {
		w.Status.Phase = twv1.WindowClosing
	}
	if err := a.closeRecorded(ctx, rec, w.Status.OwnsWindow); err != nil {
		return fmt.Errorf("closing page %s: %w", rec.Page, err)
	}
	ctrl.LoggerFrom(ctx).Info("Closed page", "page", rec.Page)
	return nil
}

// closeRecorded closes a recorded page (the driver checks the record again)
// and forgets it: the page, then its record.
//
// A page can spawn another until the moment it closes, and the driver reports
// such a spawn before the close completes, but the adopter may not have
// handled it yet. The record is forgotten only once the adopter has handled
// every event reported until the close returned: the spawn is adopted into the
// page's session while the record still names its window (the driver accepts
// a closed opener's owner as the parent, ledger.Closed), never left open and
// owned by nobody. A spawn racing the session's deletion is the case:
// TestSpawnRacingDeletionIsAdopted.
func (a *Agent) closeRecorded(ctx context.Context, rec browser.Record, ownsWindow bool) error {
	// Counted once per page, while its record is held: a page the session's
	// batch close closed has no record left when its window's own cleanup
	// closes it again (a page that went with a disposed pool context still
	// has one, and is counted here).
	held, recorded := a.model.record(rec.Page)
	if err := a.opts.Browser.Close(ctx, browser.CloseRequest{Key: rec.Key, ID: rec.Page, OwnsWindow: ownsWindow}); err != nil {
		return err
	}
	if recorded && held.Key == rec.Key {
		a.metrics().PageClosed()
	}
	wait, cancel := context.WithTimeout(ctx, spawnDrainTimeout)
	defer cancel()
	if err := a.eventsHandled(wait); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Waiting for the spawns of a closed page to be adopted; forgetting its record anyway", "page", rec.Page)
	}
	a.model.remove(rec.Page)
	a.model.dropRecord(rec.Key, rec.Page)
	return nil
}

// fenceTimeout bounds how long an ended session's cleanup waits for its running
// action to stop (closeEnded).
const fenceTimeout = 30 * time.Second

// spawnDrainTimeout bounds how long a close waits for the adopter
// (closeRecorded): it is busy only while it takes a snapshot or writes an
// adoption.
const spawnDrainTimeout = 30 * time.Second

// closeEnded closes the temporary pages of an ended session at once: a pool
// session's browser context is disposed when it holds nothing else
// (disposeSessionContext; each page's record is dropped and its window let go
// as the driver sees that page go, while the rest of the context is still
// going), and the pages of its windows are closed together (closeSessionPages:
// after a disposal, nothing of the context is left for it). What either leaves
// is each window's own cleanup.
// One at a time per session: the session's other windows, reconciled
// meanwhile, wait for it and then find their pages gone.
func (r *WindowReconciler) closeEnded(ctx context.Context, s *twv1.BrowserSession) error {
	if s == nil || !s.Ended() {
		return nil
	}
	_, err, _ := r.agent.closing.Do(string(s.UID), func() (any, error) {
		// Work in flight first: the running action stops before its next step
		// and what it spawned is adopted, so that it is closed with the rest.
		// A step that ignores its cancellation (a driver call stuck) holds the
		// cleanup for fenceTimeout at most: then the pages close under it.
		fenced, cancel := context.WithTimeout(ctx, fenceTimeout)
		defer cancel()
		if err := r.agent.fence.stop(fenced, s.UID); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "The session's running action did not stop; closing its pages anyway", "session", s.Name)
		}
		// Each page that goes with a disposed context lets its window go as
		// it goes, as the batch close below does for each page it closes.
		var went sync.WaitGroup
		_, err := r.agent.disposeSessionContext(ctx, s, func(rec browser.Record, w *twv1.BrowserWindow) {
			went.Go(func() { r.closeAndLetGo(ctx, rec, w, false) })
		})
		went.Wait()
		if err != nil {
			return nil, err
		}
		return nil, r.closeSessionPages(ctx, s)
	})
	return err
}

// closeSessionPages is the fast path of an ended session's cleanup outside a
// pool: the first of its windows reconciled once the session has ended (its
// own event maps to all of them) closes the temporary pages of all the
// session's windows on this profile at once, rather than one per window
// reconcile as each window's deletion arrives (the controller deletes them a
// few at a time, and this agent reconciles a few windows at a time).
// It closes what the window's own cleanup would: an owned page recorded under
// a window that is not Keep and not a Bind, whose status names that page (so
// whether the page owns its window is known); everything else, and any close
// that fails, is left to that window's own cleanup. The driver's last-tab rule
// applies to each close. The session's windows reconciled meanwhile wait for
// the batch and then find their pages gone.
//
// The session ending is the decision: the controller deletes every window of
// an ended session, and a deleted window's temporary page is closed whatever
// it says; closing the pages of the windows whose deletion has not arrived yet
// is that same decision, taken once. Their records go with their pages, so
// their own cleanup then only lets go (crash consistency: a restart in between
// finds the records of the pages not closed yet and closes them one by one).
//
// Which pages close is decided on each window as the API server has it, not
// as the cache does: its disposition decides whether the page closes, and the
// cache may show the session's end before a Keep the user set earlier on
// another window (the informers of sessions and windows are separate
// streams). A read after the session ended sees every write before its end.
// That read is one GET per window the cache shows closing (batchCloses), as of
// the session's end (current: from the API server's watch cache), not a
// LIST of the session's windows: the API server answers a LIST by label by
// scanning every window of the namespace, which made a fleet's cleanup
// quadratic (at 2,000 sessions × 5 windows in one namespace, 11 % of the API
// server's work in the delete phase). A window the cache does not have yet, or
// shows kept, has its page closed by its own cleanup when its deletion
// arrives: skipping a page here is always safe.
func (r *WindowReconciler) closeSessionPages(ctx context.Context, s *twv1.BrowserSession) error {
	a := r.agent
	if !a.modelCurrent(ctx) || !a.model.knowsRecords() {
		return nil
	}
	var list twv1.BrowserWindowList
	if err := a.client.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{twv1.SessionRefIndex: s.Name}); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	var (
		wg     sync.WaitGroup
		sem    = make(chan struct{}, maxBatchCloses)
		closed atomic.Int32
	)
	for i := range list.Items {
		cached := &list.Items[i]
		if _, _, ok := r.batchCloses(cached); !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w, err := a.current(ctx, cached, s.ResourceVersion)
			if err != nil {
				// Like a close that fails: the window's own cleanup closes it.
				log.V(1).Info("Reading a window of an ended session failed; its own cleanup closes its page", "window", cached.Name, "err", err.Error())
				return
			}
			if w == nil {
				return
			}
			rec, owns, ok := r.batchCloses(w)
			if !ok {
				return
			}
			r.adoptSpawnsOf(ctx, w, rec)
			if r.closeAndLetGo(ctx, rec, w, owns) {
				closed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := closed.Load(); n > 0 {
		log.Info("Closed the temporary pages of an ended session at once", "session", s.Name, "pages", n)
	}
	return nil
}

// current returns the window as the API server has it at least as of the
// session's resourceVersion after (a GET), for a decision that must see every
// write made before its session ended: the cache may not have them yet (the
// session and window informers are separate streams). after is the
// resourceVersion of the ended session as this agent's cache shows it: every
// write before the end has a smaller one (custom resources share the API
// server's one etcd, and its revisions). A GET that names it ("not older than")
// is answered from the API server's watch cache once that has caught up, where
// a GET without one is a quorum read from etcd; when a fleet's sessions end
// together those reads ran alongside every window's deletion and slowed the
// closes. A watch cache that has not caught up within the API server's wait
// answers 504 ResourceVersionTooLarge with a Retry-After, which client-go
// retries (ten times by default): a read that names the resourceVersion gets
// watchCacheWait, and one that fails so (or is answered so) is made again
// without it. It returns nil when the window is gone or was re-created under
// its name (another uid).
func (a *Agent) current(ctx context.Context, cached *twv1.BrowserWindow, after string) (*twv1.BrowserWindow, error) {
	w := &twv1.BrowserWindow{}
	key := client.ObjectKeyFromObject(cached)
	var err error
	if after != "" {
		wctx, cancel := context.WithTimeout(ctx, watchCacheWait)
		err = a.reader.Get(wctx, key, w, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: after}})
		outwaited := err != nil && errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if tooLargeResourceVersion(err) || outwaited {
			err = a.reader.Get(ctx, key, w)
		}
	} else {
		err = a.reader.Get(ctx, key, w)
	}
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if w.UID != cached.UID {
		return nil, nil
	}
	return w, nil
}

// watchCacheWait bounds a read at a resourceVersion (current): the API
// server's watch cache waits 3 s at most for it, and a read past that is made
// again as a quorum read.
var watchCacheWait = 4 * time.Second

// tooLargeResourceVersion reports whether err is the API server's answer to a
// read at a resourceVersion its watch cache has not reached in time.
func tooLargeResourceVersion(err error) bool {
	return apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// batchCloses reports whether closeSessionPages closes the window's page: a
// temporary (not Keep) owned window of this agent's profile with an owned
// record whose page its status names (the status this agent wrote last, when
// the window does not show it yet). It returns that record and whether the
// page owns its browser window.
func (r *WindowReconciler) batchCloses(w *twv1.BrowserWindow) (browser.Record, bool, bool) {
	a := r.agent
	if w.Labels[twv1.ProfileLabel] != a.opts.Profile || w.Spec.Disposition == twv1.DispositionKeep || !w.Owned() {
		return browser.Record{}, false, false
	}
	rec, ok := a.pageOf(w)
	if !ok || !rec.Owned() {
		return browser.Record{}, false, false
	}
	st := &w.Status
	if held := a.holds.peek(w.UID); held != nil {
		st = held
	}
	if st.TabID != rec.Page {
		return browser.Record{}, false, false
	}
	return rec, st.OwnsWindow, true
}

// deletionWait bounds how long letGoClosed waits for a closed page's window
// to show its deletion. The controller deletes an ended session's windows a
// few at a time: at 50 pages on a loaded machine the last deletions landed
// about a second after the session ended, while its pages were still
// closing. What outlasts it is let go by the window's own reconcile, as
// before.
const deletionWait = 2 * time.Second

// maxBatchCloses bounds the closes closeSessionPages has in flight.
const maxBatchCloses = 64

// releasePage drops the window's record and leaves the page open.
func (r *WindowReconciler) releasePage(ctx context.Context, w *twv1.BrowserWindow, rec browser.Record) error {
	a := r.agent
	if err := a.opts.Browser.Release(ctx, browser.ReleaseRequest{Key: rec.Key, ID: rec.Page}); err != nil {
		return fmt.Errorf("releasing page %s of window %s: %w", rec.Page, w.Name, err)
	}
	if held, recorded := a.model.record(rec.Page); recorded && held.Key == rec.Key {
		a.metrics().PageReleased()
	}
	a.model.dropRecord(rec.Key, rec.Page)
	return nil
}
