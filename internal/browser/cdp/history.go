package cdp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// History steps: Back and Forward move one entry through the page's own
// history (Page.getNavigationHistory, Page.navigateToHistoryEntry), Reload
// loads the current document again (Page.reload). None activates the page.
// Each waits, bounded by navigateTimeout, until the document it loads has
// loaded; that document has a new isolated world, so earlier refs are stale.

// sameDocumentGrace is how long a history step whose entry is at the url the
// frame already shows waits for a new document before it takes the move as
// same-document (a fragment or pushState entry keeps the document).
const sameDocumentGrace = 500 * time.Millisecond

// historyStep runs a back, forward or reload step on ps.
func (b *Browser) historyStep(ctx context.Context, ps *pageSession, kind browser.StepKind) error {
	tree, err := call(ctx, ps.c, ps.id, wire.GetFrameTree{})
	if err != nil {
		return err
	}
	before := tree.FrameTree.Frame.LoaderID
	if kind == browser.StepReload {
		if _, err := call(ctx, ps.c, ps.id, wire.Reload{}); err != nil {
			return err
		}
		return b.settle(ctx, ps, "reload", func(f wire.Frame, _ time.Duration) (bool, error) { return f.LoaderID != before, nil })
	}
	h, err := call(ctx, ps.c, ps.id, wire.GetNavigationHistory{})
	if err != nil {
		return err
	}
	to := h.CurrentIndex - 1
	if kind == browser.StepForward {
		to = h.CurrentIndex + 1
	}
	if h.CurrentIndex < 0 || h.CurrentIndex >= len(h.Entries) {
		return fmt.Errorf("%s: the page's history has no current entry", kind)
	}
	// The marker page a page is opened through (open.go) is the driver's, not
	// the page's history: going back to it would leave a blank page.
	if to < 0 || to >= len(h.Entries) || strings.HasPrefix(h.Entries[to].URL, markerPrefix) {
		return browser.NoHistory(kind, h.Entries[h.CurrentIndex].URL)
	}
	entry := h.Entries[to]
	if _, err := call(ctx, ps.c, ps.id, wire.NavigateToHistoryEntry{EntryID: entry.ID}); err != nil {
		return err
	}
	return b.settle(ctx, ps, string(kind)+" to "+entry.URL, func(f wire.Frame, since time.Duration) (bool, error) {
		// The history's current index moves when the move starts; the frame's
		// document changes when it commits.
		now, err := call(ctx, ps.c, ps.id, wire.GetNavigationHistory{})
		if err != nil || now.CurrentIndex != to {
			return false, err
		}
		return f.LoaderID != before || (f.URL == entry.URL && since >= sameDocumentGrace), nil
	})
}

// settle polls every waitPoll until moved says the page's main frame shows the
// step's document and that document has loaded, for at most navigateTimeout.
func (b *Browser) settle(ctx context.Context, ps *pageSession, what string, moved func(f wire.Frame, since time.Duration) (bool, error)) error {
	start := time.Now()
	for {
		var info struct {
			ReadyState string `json:"readyState"`
		}
		tree, err := call(ctx, ps.c, ps.id, wire.GetFrameTree{})
		ok := false
		if err == nil {
			ok, err = moved(tree.FrameTree.Frame, time.Since(start))
		}
		if err == nil && ok {
			if err = b.run(ctx, ps, "info", scriptArgs{}, &info); err == nil && ps.loader == tree.FrameTree.Frame.LoaderID {
				if info.ReadyState == "complete" || (info.ReadyState == "interactive" && time.Since(start) > navigateTimeout) {
					return nil
				}
			}
		}
		if err != nil && !worldGone(err) && !wire.IsGone(err) {
			return err
		}
		if time.Since(start) > navigateTimeout {
			return fmt.Errorf("%s: the page did not load within %v", what, navigateTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(waitPoll):
		}
	}
}
