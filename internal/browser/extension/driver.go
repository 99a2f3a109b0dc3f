package extension

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// --- browser.Browser ------------------------------------------------------------------

// Driver is the browser.Browser served through the Host's extension connection.
// (It is a separate type because the Host's own Close ends the server.)
type Driver struct{ h *Host }

var _ browser.Browser = (*Driver)(nil)

// Driver returns the browser.Browser backed by this host.
func (h *Host) Driver() *Driver { return h.driver }

// Snapshot implements browser.Browser: the model of the live connection (after its
// first observe).
func (d *Driver) Snapshot(ctx context.Context) (browser.Snapshot, error) {
	h := d.h
	for range 3 {
		h.mu.Lock()
		s := h.sess
		if s == nil {
			h.mu.Unlock()
			return browser.Snapshot{}, fmt.Errorf("extension snapshot: %w", browser.ErrNotConnected)
		}
		if h.model.synced {
			snap := browser.Snapshot{Epoch: s.epoch, Version: "tabwarden-extension/" + s.version}
			snap.Windows, snap.Pages = h.model.snapshot()
			snap.Records = h.model.seamRecords()
			h.mu.Unlock()
			return snap, nil
		}
		h.mu.Unlock()
		if err := h.observe(ctx, s); err != nil {
			return browser.Snapshot{}, err
		}
	}
	return browser.Snapshot{}, fmt.Errorf("extension snapshot: %w", browser.ErrNotConnected)
}

// Open implements browser.Browser with the `open` command. Without WindowID or
// NewWindow it uses the focused normal window (else the first normal window, else a
// new window). Nothing is focused; the extension is idempotent by owner.
func (d *Driver) Open(ctx context.Context, req browser.OpenRequest) (browser.Page, error) {
	h := d.h
	if req.Key == "" {
		return browser.Page{}, errors.New("extension open: a key (owner) is required")
	}
	args := openArgs{Owner: req.Key, URL: req.URL}
	switch {
	case req.NewWindow:
		args.NewWindow = true
	case req.WindowID != "":
		wid, ok := parseID(req.WindowID)
		if !ok {
			return browser.Page{}, fmt.Errorf("extension open: window %q: %w", req.WindowID, browser.ErrNotFound)
		}
		args.WindowID = &wid
	default:
		wid, ok, err := d.defaultWindow(ctx)
		if err != nil {
			return browser.Page{}, err
		}
		if ok {
			args.WindowID = &wid
		} else {
			args.NewWindow = true
		}
	}
	var r openResult
	s, err := h.commandOn(ctx, "open", args, &r)
	if err != nil {
		return browser.Page{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recordLocked(s, setRecord(Record{Owner: req.Key, TabID: r.TabID, WindowID: r.WindowID, CreatedWindow: r.CreatedWindow, Kind: string(browser.RecordOpened)}))
	if t, ok := h.model.tabs[r.TabID]; ok {
		return h.model.page(t), nil
	}
	t := wireTab{ID: r.TabID, WindowID: r.WindowID, URL: req.URL}
	if s := h.sess; s != nil && h.model.synced {
		return h.upsertTabLocked(s, t), nil
	}
	return h.model.page(t), nil
}

func (d *Driver) defaultWindow(ctx context.Context) (int64, bool, error) {
	h := d.h
	if _, err := d.Snapshot(ctx); err != nil {
		return 0, false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var first int64
	found := false
	for _, wid := range h.model.winOrder {
		w := h.model.windows[wid]
		if w.Type != "normal" && w.Type != "" {
			continue
		}
		if w.Focused {
			return wid, true, nil
		}
		if !found {
			first, found = wid, true
		}
	}
	return first, found, nil
}

// Close implements browser.Browser with the `close` command; the extension checks
// ownership (ErrNotOwned) and applies the last-tab rule from its own records, so
// req.OwnsWindow is not sent. A tab already gone is not an error.
func (d *Driver) Close(ctx context.Context, req browser.CloseRequest) error {
	h := d.h
	tid, ok := parseID(req.ID)
	if !ok {
		return nil // no such tab can exist: already gone
	}
	if req.Key == "" {
		// No key owns anything: a live tab is refused, a gone one is not an error.
		h.mu.Lock()
		_, live := h.model.tabs[tid]
		h.mu.Unlock()
		if live {
			return fmt.Errorf("extension close of tab %s without a key (owner): %w", req.ID, browser.ErrNotOwned)
		}
		return nil
	}
	var r closeResult
	s, err := h.commandOn(ctx, "close", ownerTabArgs{Owner: req.Key, TabID: tid}, &r)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.recordLocked(s, dropRecord(req.Key, tid))
	h.mu.Unlock()
	d.forgetTab(tid)
	return nil
}

// forgetTab drops a tab the extension closed (or found gone) and emits Removed,
// unless its tabRemoved event did so already.
func (d *Driver) forgetTab(tid int64) {
	h := d.h
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sess
	if s == nil || !h.model.synced {
		return
	}
	h.model.markGone(tid)
	if t, ok := h.model.tabs[tid]; ok {
		delete(h.model.tabs, tid)
		h.emitLocked(browser.Event{Type: browser.PageRemoved, Epoch: s.epoch,
			Page: browser.Page{ID: id(t.ID), WindowID: id(t.WindowID), Popup: h.model.popup(t.WindowID)}})
	}
}

// Adopt implements browser.Browser with the `adopt` command: the extension records
// the tab under req.Key only if it saw the spawn itself (the tab's opener, as Chrome
// reported it, is recorded under req.Parent): ErrNotObserved otherwise, ErrInUse
// when another key has the tab. The record lets Close work after the extension's
// service worker restarts.
func (d *Driver) Adopt(ctx context.Context, req browser.AdoptRequest) error {
	h := d.h
	if req.Key == "" || req.Parent == "" {
		return errors.New("extension adopt: a key (owner) and a parent are required")
	}
	tid, ok := parseID(req.ID)
	if !ok {
		return fmt.Errorf("extension adopt: page %q: %w", req.ID, browser.ErrNotFound)
	}
	var r tabResult
	s, err := h.commandOn(ctx, "adopt", adoptArgs{Owner: req.Key, TabID: tid, Parent: req.Parent}, &r)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recordLocked(s, setRecord(Record{Owner: req.Key, TabID: tid, WindowID: r.WindowID, CreatedWindow: r.CreatedWindow,
		Kind: string(browser.RecordSpawned), Parent: req.Parent}))
	return nil
}

// Bind implements browser.Browser with the `bind` command: the tab is recorded for
// use under req.Key and is never closed. ErrInUse when another key has it.
func (d *Driver) Bind(ctx context.Context, req browser.BindRequest) error {
	h := d.h
	if req.Key == "" {
		return errors.New("extension bind: a key (owner) is required")
	}
	tid, ok := parseID(req.ID)
	if !ok {
		return fmt.Errorf("extension bind: page %q: %w", req.ID, browser.ErrNotFound)
	}
	var r tabResult
	s, err := h.commandOn(ctx, "bind", ownerTabArgs{Owner: req.Key, TabID: tid}, &r)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recordLocked(s, setRecord(Record{Owner: req.Key, TabID: tid, WindowID: r.WindowID, Kind: string(browser.RecordBound)}))
	return nil
}

// Release implements browser.Browser with the `release` command: req.Key's record
// of the tab goes, the tab stays open. Idempotent; another key's record stays.
func (d *Driver) Release(ctx context.Context, req browser.ReleaseRequest) error {
	h := d.h
	if req.Key == "" {
		return errors.New("extension release: a key (owner) is required")
	}
	tid, ok := parseID(req.ID)
	if !ok {
		return nil // no such tab can be recorded
	}
	s, err := h.commandOn(ctx, "release", ownerTabArgs{Owner: req.Key, TabID: tid}, nil)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recordLocked(s, dropRecord(req.Key, tid))
	return nil
}

// Events implements browser.Browser. The channel closes when the Host is closed.
func (d *Driver) Events() <-chan browser.Event { return d.h.events }

// Connected implements browser.Browser: an extension connection is live.
func (d *Driver) Connected() bool {
	h := d.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sess != nil
}

// Epoch is the epoch of the live connection (0 when none).
func (d *Driver) Epoch() int64 {
	h := d.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess == nil {
		return 0
	}
	return h.sess.epoch
}

// PublishSessions sends the `sessions` command: what the popup's Session Monitor shows.
func (d *Driver) PublishSessions(ctx context.Context, sessions []SessionInfo) error {
	h := d.h
	list := make([]SessionInfo, len(sessions))
	copy(list, sessions)
	for i := range list {
		if list[i].Windows == nil {
			list[i].Windows = []SessionWindow{}
		}
	}
	return h.command(ctx, "sessions", map[string]any{"sessions": list}, nil)
}

// Cleanup sends the `cleanup` command: the extension closes every tab recorded under
// owner (last-tab rule included) and returns their ids.
func (d *Driver) Cleanup(ctx context.Context, owner string) ([]string, error) {
	h := d.h
	if owner == "" {
		return nil, errors.New("extension cleanup: an owner is required")
	}
	var r struct {
		Closed []int64 `json:"closed"`
	}
	s, err := h.commandOn(ctx, "cleanup", map[string]string{"owner": owner}, &r)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	// Every opened or spawned record of the owner is gone (closed, or found gone);
	// bound ones stay until Release.
	h.recordLocked(s, func(m *model) {
		for tid, rec := range m.records {
			if rec.Owner == owner && rec.Kind != string(browser.RecordBound) {
				delete(m.records, tid)
			}
		}
	})
	h.mu.Unlock()
	ids := make([]string, 0, len(r.Closed))
	for _, tid := range r.Closed {
		d.forgetTab(tid)
		ids = append(ids, id(tid))
	}
	return ids, nil
}

// Records returns the extension's ownership records (they survive its service
// worker restarting).
func (d *Driver) Records(ctx context.Context) ([]Record, error) {
	h := d.h
	var r struct {
		Records []Record `json:"records"`
	}
	if err := h.command(ctx, "records", struct{}{}, &r); err != nil {
		return nil, err
	}
	return r.Records, nil
}

var _ browser.SessionMonitor = (*Driver)(nil)

// Paired reports whether an extension is paired with the host: until one is,
// no browser can connect, and the agent reports the driver as unpaired rather
// than down (tabwarden_driver_paired).
func (d *Driver) Paired() bool { return d.h.Paired() }
