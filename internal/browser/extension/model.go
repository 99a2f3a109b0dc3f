// The driver's model of the profile (windows, tabs, the ownership mirror), kept
// from observe and the extension's events, and the events it emits.

package extension

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// model is the driver's view of the profile, built from observe and events. It
// belongs to the current connection: a new connection starts it over.
type model struct {
	// synced: an observe result has been applied. Until then events are buffered and
	// replayed on top of the first observe.
	synced   bool
	buffer   []inFrame
	windows  map[int64]wireWindow
	winOrder []int64
	tabs     map[int64]wireTab
	// records mirrors the extension's ownership ledger (tab id → record): fetched with
	// `records` in the connection's first sync and updated after every command that
	// changes it, so Snapshot needs no extra round trip. Updates that complete before
	// the first sync are kept in recOps and replayed on top of it.
	records map[int64]Record
	recOps  []func(*model)
	// gone are the tabs reported removed on this connection (the last maxGone):
	// Chrome never reuses a tab id, so a report of one of them that arrives
	// later (an update Chrome queued before the removal) is stale and must not
	// bring it back.
	gone      map[int64]struct{}
	goneOrder []int64
}

// maxGone bounds model.gone.
const maxGone = 8192

// markGone remembers that tab id was removed.
func (m *model) markGone(id int64) {
	if _, ok := m.gone[id]; ok {
		return
	}
	m.gone[id] = struct{}{}
	m.goneOrder = append(m.goneOrder, id)
	if len(m.goneOrder) > maxGone {
		delete(m.gone, m.goneOrder[0])
		m.goneOrder = m.goneOrder[1:]
	}
}

const maxBufferedEvents = 4096

func newModel() model {
	return model{windows: map[int64]wireWindow{}, tabs: map[int64]wireTab{}, records: map[int64]Record{}, gone: map[int64]struct{}{}}
}

func id(n int64) string { return strconv.FormatInt(n, 10) }

func parseID(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

func (m *model) popup(windowID int64) bool { return m.windows[windowID].Type == "popup" }

func (m *model) page(t wireTab) browser.Page {
	p := browser.Page{ID: id(t.ID), WindowID: id(t.WindowID), URL: t.URL, Title: t.Title, Popup: m.popup(t.WindowID)}
	if t.OpenerTabID != nil {
		p.OpenerID = id(*t.OpenerTabID)
	}
	if t.OpenerTabID == nil {
		p.Attributed = t.Attributed
	}
	return p
}

func (m *model) putWindow(w wireWindow) {
	if _, ok := m.windows[w.ID]; !ok {
		m.winOrder = append(m.winOrder, w.ID)
	}
	m.windows[w.ID] = w
}

func (m *model) removeWindow(wid int64) {
	delete(m.windows, wid)
	m.winOrder = slices.DeleteFunc(m.winOrder, func(x int64) bool { return x == wid })
}

func (m *model) replace(r observeResult, recs []Record) {
	ops, gone, goneOrder := m.recOps, m.gone, m.goneOrder
	*m = newModel()
	m.gone, m.goneOrder = gone, goneOrder
	for _, w := range r.Windows {
		m.putWindow(w)
	}
	for _, t := range r.Tabs {
		if _, ok := m.gone[t.ID]; ok {
			continue // an observe that started before its removal
		}
		m.tabs[t.ID] = t
	}
	for _, rec := range recs {
		m.records[rec.TabID] = rec
	}
	for _, op := range ops {
		op(m)
	}
	m.synced = true
}

// seamRecords is the mirror as the seam's records, by tab id.
func (m *model) seamRecords() []browser.Record {
	ids := slices.Sorted(maps.Keys(m.records))
	out := make([]browser.Record, 0, len(ids))
	for _, tid := range ids {
		out = append(out, m.records[tid].seam())
	}
	return out
}

// recordLocked applies a change of the extension's ledger to the mirror of the
// connection s it was made on (a change on an older connection is left to the new
// connection's own fetch).
func (h *Host) recordLocked(s *session, op func(*model)) {
	if s == nil || h.sess != s {
		return
	}
	if !h.model.synced {
		h.model.recOps = append(h.model.recOps, op)
		return
	}
	op(&h.model)
}

func setRecord(r Record) func(*model) { return func(m *model) { m.records[r.TabID] = r } }

func dropRecord(owner string, tid int64) func(*model) {
	return func(m *model) {
		if r, ok := m.records[tid]; ok && r.Owner == owner {
			delete(m.records, tid)
		}
	}
}

// snapshot orders windows as reported and tabs by index; tabs of windows that were
// never reported get a (non-popup) window entry after the known ones.
func (m *model) snapshot() ([]browser.Window, []browser.Page) {
	byWindow := map[int64][]wireTab{}
	for _, t := range m.tabs {
		byWindow[t.WindowID] = append(byWindow[t.WindowID], t)
	}
	order := slices.Clone(m.winOrder)
	var extra []int64
	for wid := range byWindow {
		if _, ok := m.windows[wid]; !ok {
			extra = append(extra, wid)
		}
	}
	slices.Sort(extra)
	order = append(order, extra...)
	var windows []browser.Window
	var pages []browser.Page
	for _, wid := range order {
		windows = append(windows, browser.Window{ID: id(wid), Popup: m.popup(wid)})
		tabs := byWindow[wid]
		slices.SortFunc(tabs, func(a, b wireTab) int {
			if a.Index != b.Index {
				return a.Index - b.Index
			}
			return int(a.ID - b.ID)
		})
		for _, t := range tabs {
			pages = append(pages, m.page(t))
		}
	}
	return windows, pages
}

// emitLocked queues an event without blocking: a reader that stops consuming must
// not stall the connection. Dropped events are counted and logged.
func (h *Host) emitLocked(ev browser.Event) {
	if h.closed {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	select {
	case h.events <- ev:
	default:
		h.dropped++
		if h.dropped == 1 || h.dropped%1000 == 0 {
			h.log.Error(nil, "event buffer full; nobody is consuming Events(); dropping", "dropped", h.dropped)
		}
	}
}

func (h *Host) handleEvent(s *session, f inFrame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != s {
		return
	}
	if !h.model.synced {
		if len(h.model.buffer) >= maxBufferedEvents {
			h.model.buffer = h.model.buffer[1:]
		}
		h.model.buffer = append(h.model.buffer, f)
		return
	}
	h.applyLocked(s, f)
}

// applyLocked applies one event to the synced model and emits what changed.
func (h *Host) applyLocked(s *session, f inFrame) {
	m := &h.model
	emit := func(typ browser.EventType, p browser.Page) {
		h.emitLocked(browser.Event{Type: typ, Page: p, Epoch: s.epoch})
	}
	switch f.Event {
	case evTabCreated, evTabUpdated:
		if f.Tab == nil {
			return
		}
		if _, gone := m.gone[f.Tab.ID]; gone {
			return // a stale report of a tab already removed
		}
		if f.Event == evTabCreated && f.Owner != "" {
			// The extension recorded it for an open that a worker restart interrupted.
			if _, ok := m.records[f.Tab.ID]; !ok {
				m.records[f.Tab.ID] = Record{Owner: f.Owner, TabID: f.Tab.ID, WindowID: f.Tab.WindowID, Kind: string(browser.RecordOpened)}
			}
		}
		h.upsertTabLocked(s, *f.Tab)
	case evTabRemoved:
		if f.TabID == nil {
			return
		}
		m.markGone(*f.TabID)
		if t, ok := m.tabs[*f.TabID]; ok {
			delete(m.tabs, t.ID)
			emit(browser.PageRemoved, browser.Page{ID: id(t.ID), WindowID: id(t.WindowID), Popup: m.popup(t.WindowID)})
		}
	case evWindowCreated:
		if f.Window == nil {
			return
		}
		was := m.popup(f.Window.ID)
		m.putWindow(*f.Window)
		if m.popup(f.Window.ID) != was {
			// Its tab was reported first: correct the tab's Popup.
			for _, t := range m.tabs {
				if t.WindowID == f.Window.ID {
					emit(browser.PageUpdated, m.page(t))
				}
			}
		}
	case evWindowRemoved:
		if f.WindowID == nil {
			return
		}
		wid := *f.WindowID
		popup := m.popup(wid)
		var gone []wireTab
		for _, t := range m.tabs {
			if t.WindowID == wid {
				gone = append(gone, t)
			}
		}
		slices.SortFunc(gone, func(a, b wireTab) int { return a.Index - b.Index })
		for _, t := range gone {
			m.markGone(t.ID)
			delete(m.tabs, t.ID)
			emit(browser.PageRemoved, browser.Page{ID: id(t.ID), WindowID: id(wid), Popup: popup})
		}
		m.removeWindow(wid)
	}
}

// upsertTabLocked records a tab and emits Created for a new one, Updated for a
// changed one. (A tab leaving a hidden url such as chrome://newtab first shows up
// as tabUpdated: Created.)
func (h *Host) upsertTabLocked(s *session, t wireTab) browser.Page {
	m := &h.model
	old, known := m.tabs[t.ID]
	if known && t.OpenerTabID == nil {
		t.OpenerTabID = old.OpenerTabID // an update may omit the opener; keep it
	}
	if known && t.Attributed == "" {
		t.Attributed = old.Attributed // only tabCreated and observe carry it
	}
	m.tabs[t.ID] = t
	p := m.page(t)
	switch {
	case !known:
		h.emitLocked(browser.Event{Type: browser.PageCreated, Page: p, Epoch: s.epoch})
	case m.page(old) != p:
		h.emitLocked(browser.Event{Type: browser.PageUpdated, Page: p, Epoch: s.epoch})
	}
	return p
}

// initialObserve syncs the model of a new connection.
func (h *Host) initialObserve(s *session) {
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.CommandTimeout)
	defer cancel()
	if err := h.observe(ctx, s); err != nil && !errors.Is(err, browser.ErrNotConnected) {
		h.log.Error(err, "initial observe failed; Snapshot will retry", "epoch", s.epoch)
	}
}

// observe asks the extension for everything and installs it as the model, unless
// an earlier observe of this connection already did. Concurrent callers share one
// observe command.
func (h *Host) observe(ctx context.Context, s *session) error {
	h.mu.Lock()
	if h.sess != s {
		h.mu.Unlock()
		return fmt.Errorf("extension observe: %w", browser.ErrNotConnected)
	}
	if h.model.synced {
		h.mu.Unlock()
		return nil
	}
	if call := s.syncing; call != nil {
		h.mu.Unlock()
		select {
		case <-call.done:
			return call.err
		case <-ctx.Done():
			return fmt.Errorf("extension observe: %w", ctx.Err())
		}
	}
	call := &syncCall{done: make(chan struct{})}
	s.syncing = call
	h.mu.Unlock()

	var r observeResult
	var recs struct {
		Records []Record `json:"records"`
	}
	err := h.command(ctx, "observe", struct{}{}, &r)
	if err == nil {
		err = h.command(ctx, "records", struct{}{}, &recs)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.syncing = nil
	defer func() { call.err = err; close(call.done) }()
	if err != nil {
		return err
	}
	if h.sess != s {
		err = fmt.Errorf("extension observe: %w", browser.ErrNotConnected)
		return err
	}
	if h.model.synced {
		return nil
	}
	buffered := h.model.buffer
	h.model.replace(r, recs.Records)
	for _, f := range buffered {
		h.applyLocked(s, f)
	}
	return nil
}

// syncCall is an observe in flight that others may wait for.
type syncCall struct {
	done chan struct{}
	err  error
}
