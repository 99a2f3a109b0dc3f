package cdp

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// Windows: which window holds a page (Browser.getWindowForTarget), and the
// popup rule. Choosing a new tab's window is in place.go.

// windowFor asks Chrome which window holds a target. It retries briefly: a
// popup's target exists a moment before its window does.
func windowFor(ctx context.Context, c *wire.Conn, id string) (string, error) {
	var lastErr error
	for i, d := 0, 5*time.Millisecond; i < 8; i, d = i+1, d*2 {
		w, err := call(ctx, c, "", wire.GetWindowForTarget{TargetID: id})
		if err == nil {
			return strconv.FormatInt(w.WindowID, 10), nil
		}
		lastErr = err
		if errors.Is(err, browser.ErrNotConnected) || ctx.Err() != nil {
			return "", err
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "", lastErr
}

// resolveWindow fills in a page's window (and popup flag) and reports it.
func (b *Browser) resolveWindow(c *wire.Conn, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.mu.Lock()
	t, ok := b.targets[id]
	opener := ""
	if ok {
		if t.windowID != "" {
			b.mu.Unlock()
			return
		}
		if o, ok := b.targets[t.info.OpenerID]; ok && o.windowID == "" {
			opener = o.info.TargetID
		}
	}
	b.mu.Unlock()
	if !ok {
		return
	}
	// The opener's window first: the popup rule compares with it.
	if opener != "" {
		if w, err := windowFor(ctx, c, opener); err == nil {
			b.setWindow(c, opener, w)
		}
	}
	w, err := windowFor(ctx, c, id)
	if err != nil {
		if !wire.IsGone(err) {
			b.log.V(1).Info("window lookup failed", "target", id, "err", err)
		}
		return
	}
	b.setWindow(c, id, w)
}

func (b *Browser) setWindow(c *wire.Conn, id, w string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.targets[id]
	if !ok || b.conn != c || t.windowID == w {
		return
	}
	first := t.windowID == ""
	t.windowID = w
	if first {
		others := false
		for oid, o := range b.targets {
			if oid != id && o.windowID == w {
				others = true
				break
			}
		}
		t.popup = t.info.OpenerID != "" && !others
	}
	if b.connected && t.shown {
		b.emitLocked(browser.PageUpdated, t)
	}
}

// resolveAll looks up the windows of all pages whose window is unknown.
func (b *Browser) resolveAll(ctx context.Context, c *wire.Conn) error {
	b.mu.Lock()
	var ids []string
	for id, t := range b.targets {
		if t.windowID == "" {
			ids = append(ids, id)
		}
	}
	b.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 16)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			w, err := windowFor(ctx, c, id)
			if err != nil {
				if !wire.IsGone(err) {
					errs[i] = err
				}
				return
			}
			b.setWindow(c, id, w)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, browser.ErrNotConnected) {
			return err
		}
	}
	return nil
}

// withWindow fills in a page's window when it is not known yet.
func (b *Browser) withWindow(ctx context.Context, c *wire.Conn, p browser.Page) (browser.Page, error) {
	if p.WindowID != "" {
		return p, nil
	}
	w, err := windowFor(ctx, c, p.ID)
	if err != nil {
		if errors.Is(err, browser.ErrNotConnected) {
			return p, err
		}
		return p, nil
	}
	b.setWindow(c, p.ID, w)
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.targets[p.ID]; ok {
		return b.pageLocked(t), nil
	}
	p.WindowID = w
	return p, nil
}
