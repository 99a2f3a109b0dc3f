package agent

import (
	"context"
	"errors"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// adopter consumes the browser's events: it keeps the model current, adopts every
// page spawned by a session's page (transitively), and wakes the windows whose
// pages changed. On each (re)connection it takes a snapshot and adopts anything
// missed while it was away, so a restart converges without duplicates.
type adopter struct {
	agent *Agent
	// retry is set when an adoption failed; a snapshot soon retries it.
	retry bool
	// resyncSoon is set when the browser (re)connected: take a snapshot now.
	resyncSoon bool
}

// NeedLeaderElection: every agent serves its own browser.
func (ad *adopter) NeedLeaderElection() bool { return false }

// Start runs until ctx ends.
func (ad *adopter) Start(ctx context.Context) error {
	a := ad.agent
	log := ctrl.LoggerFrom(ctx).WithName("adopter").WithValues("profile", a.opts.Profile)
	ctx = ctrl.LoggerInto(ctx, log)
	// The first snapshot's records find their windows by the owners the
	// cache's windows fill in (trackOwners).
	if a.ownersSynced != nil && !toolscache.WaitForCacheSync(ctx.Done(), a.ownersSynced) {
		return nil
	}
	resync := time.NewTimer(0) // take the first snapshot at once
	defer resync.Stop()
	events := a.opts.Browser.Events()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-resync.C:
			if err := ad.resync(ctx); err != nil {
				if !errors.Is(err, browser.ErrNotConnected) {
					log.Error(err, "Browser snapshot failed; retrying")
				}
				resync.Reset(time.Second)
			}
		case ev := <-events:
			ad.handle(ctx, ev)
		case done := <-a.barrier:
			// Everything the driver reported before the barrier is handled
			// before it is released: a spawn a step caused is adopted by then.
			for drained := false; !drained; {
				select {
				case ev := <-events:
					ad.handle(ctx, ev)
				default:
					drained = true
				}
			}
			close(done)
		}
		if ad.resyncSoon {
			ad.resyncSoon = false
			resync.Reset(0)
		}
		if ad.retry {
			ad.retry = false
			resync.Reset(2 * time.Second)
		}
	}
}

// handle applies one browser event.
func (ad *adopter) handle(ctx context.Context, ev browser.Event) {
	a := ad.agent
	log := ctrl.LoggerFrom(ctx)
	switch ev.Type {
	case browser.Connected:
		log.Info("Browser connected", "epoch", ev.Epoch)
		ad.resyncSoon = true
	case browser.Disconnected:
		log.Info("Browser disconnected; pages are Unknown until it is back", "epoch", ev.Epoch)
		a.model.disconnect()
		a.markProfileDirty()
		a.wakeAll(ctx)
	case browser.PageCreated:
		a.model.put(ev.Page)
		seen := ev.Time
		if seen.IsZero() {
			seen = time.Now()
		}
		ad.maybeAdopt(ctx, ev.Page, seen)
		a.markProfileDirty()
	case browser.PageUpdated:
		a.model.put(ev.Page)
		a.wakePage(ctx, ev.Page.ID)
		a.markProfileDirty()
	case browser.PageRemoved:
		// Wake before forgetting: the owner record goes with the page.
		a.wakePage(ctx, ev.Page.ID)
		a.model.remove(ev.Page.ID)
		a.markProfileDirty()
	}
}

// resync replaces the model with a snapshot, adopts spawns missed meanwhile (to
// a fixpoint, since a snapshot lists children before parents at times) and wakes
// every window.
func (ad *adopter) resync(ctx context.Context) error {
	a := ad.agent
	mark := a.model.beginSnapshot()
	snap, err := a.opts.Browser.Snapshot(ctx)
	if err != nil {
		a.model.abortSnapshot()
		return err
	}
	a.model.replace(snap, mark)
	seen := time.Now()
	for adopted := true; adopted; {
		adopted = false
		for _, p := range snap.Pages {
			if ad.maybeAdopt(ctx, p, seen) {
				adopted = true
			}
		}
	}
	// Every window reconciles against the new snapshot; a Spawned window whose
	// record is missing (the agent stopped between its create and its record)
	// asks the driver again there.
	a.markProfileDirty()
	a.wakeAll(ctx)
	return nil
}

// maybeAdopt adopts p when the driver recorded its opener as a page a window of
// a session owns, or when the driver attributed it to a session's action (its
// own input caused it: no opener, or opened from a tab the session binds).
// It reports whether it adopted p now; seen is when the browser reported p.
func (ad *adopter) maybeAdopt(ctx context.Context, p browser.Page, seen time.Time) bool {
	a := ad.agent
	if _, recorded := a.model.record(p.ID); recorded {
		a.wakePage(ctx, p.ID)
		return false
	}
	var (
		o              owner
		parent, reason string
		ok             bool
	)
	switch {
	case p.Attributed != "":
		// The driver saw the session's own action cause it (no opener, or
		// opened from a tab the session only binds).
		o, ok = parseActionKey(p.Attributed)
		parent, reason = p.Attributed, ReasonDuringAction
	case p.OpenerID != "":
		// Spawned by a page the session owns. A page opened from a bound tab
		// without an action of the session is the user's: never adopted.
		if r, recorded := a.model.record(p.OpenerID); recorded && !r.Owned() {
			return false
		}
		o, parent, ok = a.ownerOf(ctx, p.OpenerID)
		reason = ReasonOpener
	}
	if !ok {
		return false
	}
	if err := a.adopt(ctx, p, o, parent, reason, seen); err != nil {
		// The next snapshot (every reconnect, or the periodic one) retries.
		ctrl.LoggerFrom(ctx).Error(err, "Adopting spawned page failed; retrying", "page", p.ID)
		ad.retry = true
		return false
	}
	return true
}
