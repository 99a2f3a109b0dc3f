package cdp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// Close: waiting for targetDestroyed, and the last-tab rule (an about:blank
// placeholder in the window before its last tab closes).

// Close implements browser.Browser with the last-tab rule.
func (b *Browser) Close(ctx context.Context, req browser.CloseRequest) error {
	c, err := b.current()
	if err != nil {
		return err
	}
	if !b.has(req.ID) {
		return b.ledger.Closed(req.Key, req.ID)
	}
	if err := b.ledger.MayClose(req.Key, req.ID); err != nil {
		return err
	}
	if req.OwnsWindow {
		return b.closeOwned(ctx, c, req)
	}
	w, err := windowFor(ctx, c, req.ID)
	if err != nil {
		if wire.IsGone(err) {
			return b.ledger.Closed(req.Key, req.ID)
		}
		return err
	}
	// The window's lock is held for the decision only, not for the close: a
	// tab whose close is in flight counts as gone, so of concurrent closes in
	// one window the last to decide opens the placeholder, and the closes
	// themselves run at once (a session's N tabs in one window close in about
	// the time of one, not N). A close that fails leaves its tab and maybe an
	// extra blank one: never a window with none.
	l := lockFor(b.winLocks, &b.mu, w)
	l.Lock()
	if !b.has(req.ID) {
		l.Unlock()
		return b.ledger.Closed(req.Key, req.ID)
	}
	if err := b.resolveAll(ctx, c); err != nil {
		l.Unlock()
		return err
	}
	b.mu.Lock()
	last := true
	for id, t := range b.targets {
		if id != req.ID && t.windowID == w && t.closing == 0 {
			last = false
			break
		}
	}
	ctxID, popup := "", false
	t, ok := b.targets[req.ID]
	if ok {
		ctxID, popup = t.info.BrowserContextID, t.popup
	}
	b.mu.Unlock()
	// A popup window was created for its page and cannot hold other tabs: it is
	// never the user's window, whatever the caller says.
	if last && !popup {
		if err := b.placeholder(ctx, c, req.ID, w, ctxID); err != nil {
			l.Unlock()
			return fmt.Errorf("close %s: last tab of window %s: %w", req.ID, w, err)
		}
	}
	b.mu.Lock()
	if ok {
		t.closing++
	}
	b.mu.Unlock()
	l.Unlock()
	defer func() {
		b.mu.Lock()
		if ok {
			t.closing--
		}
		b.mu.Unlock()
	}()
	return b.closeOwned(ctx, c, req)
}

// closeOwned closes a page whose ownership was checked and drops its record.
func (b *Browser) closeOwned(ctx context.Context, c *wire.Conn, req browser.CloseRequest) error {
	if err := b.closeTarget(ctx, c, req.ID); err != nil {
		return err
	}
	return b.ledger.Closed(req.Key, req.ID)
}

func (b *Browser) has(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.targets[id]
	return ok
}

// closeRetry is how long a close waits for targetDestroyed before it asks again.
const closeRetry = 500 * time.Millisecond

// closeTarget closes a page and waits for targetDestroyed.
func (b *Browser) closeTarget(ctx context.Context, c *wire.Conn, id string) error {
	b.mu.Lock()
	if _, ok := b.targets[id]; !ok {
		b.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	b.destroyed[id] = append(b.destroyed[id], done)
	b.mu.Unlock()
	// Chromium answers a close it then drops when it lands while the page
	// commits a navigation (an Open's first load, under request interception):
	// the target stays. Ask again until it is gone; a second close of a
	// closing page is harmless.
	//
	// targetDestroyed ends the close, whether or not the command's reply came:
	// with many windows closing at once, Chromium 156 tears them down one by
	// one and answers each closeTarget late, at times seconds after that
	// page's targetDestroyed (a 50-page cleanup traced 37 closes waiting for
	// replies of pages already gone). A reply still awaited then is dropped.
	replyCtx, stop := context.WithCancel(ctx)
	defer stop()
	retry := time.NewTicker(closeRetry)
	defer retry.Stop()
	for {
		wait := send(c, "", wire.CloseTarget{TargetID: id})
		replied := make(chan error, 1)
		go func() {
			_, err := wait(replyCtx)
			replied <- err
		}()
		if err := awaitDestroyed(ctx, id, done, c.Done(), replied, retry.C); !errors.Is(err, errCloseAgain) {
			return err
		}
		b.log.V(1).Info("Page still there after Target.closeTarget; closing it again", "target", id)
	}
}

// errCloseAgain asks closeTarget to send its command again.
var errCloseAgain = errors.New("close again")

// awaitDestroyed waits for page id's targetDestroyed (done): nil then, with
// or without the reply of its close (replied). A reply that reports an error
// other than the page being gone ends the wait with it (unless the page went
// meanwhile); the connection's end (connGone) with ErrNotConnected; a retry
// tick after the reply with errCloseAgain. A close not answered yet is not
// sent again: Chromium is still working through it (and the retry is for a
// close it answered, then dropped).
func awaitDestroyed(ctx context.Context, id string, done, connGone <-chan struct{}, replied <-chan error, retry <-chan time.Time) error {
	var tick <-chan time.Time // the retry, once the close is answered
	for {
		select {
		case <-done:
			return nil
		case err := <-replied:
			if err != nil && !wire.IsGone(err) {
				select {
				case <-done:
					return nil
				default:
					return err
				}
			}
			replied, tick = nil, retry // answered: the page goes at targetDestroyed
		case <-connGone:
			return fmt.Errorf("close %s: %w", id, browser.ErrNotConnected)
		case <-ctx.Done():
			return fmt.Errorf("close %s: waiting for the page to go: %w", id, ctx.Err())
		case <-tick:
			return errCloseAgain
		}
	}
}

// placeholder opens an about:blank tab in window w, next to page id which is
// about to close, and verifies where it landed.
func (b *Browser) placeholder(ctx context.Context, c *wire.Conn, id, w, ctxID string) error {
	b.phLock.Lock()
	defer b.phLock.Unlock()

	// 1. A middle click on an about:blank link inside the page: Chrome opens a
	// background tab in the page's own window, without an opener.
	pid, err := b.openFrom(ctx, c, id)
	if err == nil {
		pw, werr := windowFor(ctx, c, pid)
		if werr == nil && pw == w {
			b.setWindow(c, pid, pw)
			return nil
		}
		b.log.Info("placeholder tab landed in another window", "want", w, "got", pw, "err", werr)
		_ = b.closeTarget(ctx, c, pid)
	} else {
		b.log.V(1).Info("placeholder by click failed; trying createTarget", "page", id, "err", err)
	}
	if errors.Is(err, browser.ErrNotConnected) {
		return err
	}
	// 2. createTarget: lands in the context's last active window, which may be w.
	params := wire.CreateTarget{URL: "about:blank", Background: true}
	if ctxID != "" && b.isNonDefault(ctxID) {
		params.BrowserContextID = ctxID
	}
	pid, err = b.createTarget(ctx, c, params)
	if err != nil {
		return err
	}
	pw, err := windowFor(ctx, c, pid)
	if err == nil && pw == w {
		b.setWindow(c, pid, pw)
		return nil
	}
	_ = b.closeTarget(ctx, c, pid)
	return fmt.Errorf("cannot open an about:blank tab in window %s (landed in %s), refusing to close its last tab", w, pw)
}

func (b *Browser) isNonDefault(ctxID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.ctxNames[ctxID]
	return ok
}
