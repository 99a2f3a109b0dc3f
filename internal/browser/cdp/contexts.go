package cdp

import (
	"context"
	"fmt"
	"slices"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// The pool: one browser context per OpenRequest.Context, its id kept in the
// ledger so that a restarted driver reuses it.

// ensureContext returns the browserContextId for a pool context name. The
// name → id map is kept in the ledger, so a restarted driver reuses the
// session's context (and its cookies) rather than creating another.
func (b *Browser) ensureContext(ctx context.Context, c *wire.Conn, name string) (string, error) {
	b.ctxLock.Lock()
	defer b.ctxLock.Unlock()
	if id, ok := b.ledger.Context(name); ok {
		return id, nil
	}
	r, err := call(ctx, c, "", wire.CreateBrowserContext{DisposeOnDetach: false})
	if err != nil {
		return "", fmt.Errorf("create browser context %q: %w", name, err)
	}
	if err := b.ledger.SetContext(name, r.BrowserContextID); err != nil {
		// Unrecorded, it would outlive the session: end it now.
		_, _ = call(ctx, c, "", wire.DisposeBrowserContext{BrowserContextID: r.BrowserContextID})
		return "", err
	}
	b.mu.Lock()
	b.ctxNames[r.BrowserContextID] = name
	b.mu.Unlock()
	b.log.V(1).Info("created browser context", "name", name, "id", r.BrowserContextID)
	return r.BrowserContextID, nil
}

// DisposeContext closes a pool context and all its pages, and returns once
// the driver has seen every page of it destroyed (so a Close of one of them
// after it is a no-op that drops its record), calling gone (if not nil) with
// each page as it is destroyed. Unknown names are not an error.
func (b *Browser) DisposeContext(ctx context.Context, name string, gone func(page string)) error {
	c, err := b.current()
	if err != nil {
		return err
	}
	b.ctxLock.Lock()
	defer b.ctxLock.Unlock()
	id, ok := b.ledger.Context(name)
	if !ok {
		return nil
	}
	dones := map[string]chan struct{}{}
	b.mu.Lock()
	for tid, t := range b.targets {
		if t.info.BrowserContextID == id {
			done := make(chan struct{})
			b.destroyed[tid] = append(b.destroyed[tid], done)
			dones[tid] = done
		}
	}
	b.mu.Unlock()
	if _, err := call(ctx, c, "", wire.DisposeBrowserContext{BrowserContextID: id}); err != nil && !wire.IsGone(err) {
		return err
	}
	// Each page as it goes, in the order they go: one waiter per page.
	went := make(chan string, len(dones))
	quit := make(chan struct{})
	defer close(quit)
	for tid, done := range dones {
		go func() {
			select {
			case <-done:
				went <- tid
			case <-quit:
			}
		}()
	}
	for range dones {
		select {
		case tid := <-went:
			if gone != nil {
				gone(tid)
			}
		case <-c.Done():
			return fmt.Errorf("dispose context %q: %w", name, browser.ErrNotConnected)
		case <-ctx.Done():
			return fmt.Errorf("dispose context %q: waiting for its pages to go: %w", name, ctx.Err())
		}
	}
	return b.ledger.DropContext(name)
}

// PoolContexts returns the names of the pool contexts the driver has recorded.
func (b *Browser) PoolContexts() []string {
	var out []string
	for name := range b.ledger.Contexts() {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
