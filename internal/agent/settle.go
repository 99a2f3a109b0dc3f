package agent

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// A page is reported in stages: created (no url yet for a spawn), committed
// (its url, and the url as a placeholder title), loaded (its title). Writing
// each stage costs a status write; statusHolds folds them into one:
//
//   - the first status write that says a page is Open waits until the page has
//     a title of its own, or until the settle budget passes (Options.OpenSettle
//     for Open windows, Options.SpawnStatusSettle for Spawned ones: the adoption
//     itself was announced by the create, so a spawn's status may wait longer);
//   - after it, a change of url or title only (no phase, no condition) is
//     written at most once per Options.ObserveInterval per window.
//
// Phase and condition changes are never held. A held status lives only in
// memory: the ledger, not the object, is the agent's authority over a page, so
// an agent that stops while holding loses nothing but the wait (its next
// reconcile observes the page again).
//
// An entry that holds nothing (no first Open waiting, nothing pending) and
// whose last write is older than the observe interval decides nothing a
// missing entry would not: sweep drops those, at most once per interval, so
// the map holds the windows written recently, not every window of the profile.
type statusHolds struct {
	mu sync.Mutex
	m  map[types.UID]*statusHold
	// keep is how long a written entry is kept (Options.ObserveInterval).
	keep time.Duration
	// swept is when sweep last ran.
	swept time.Time
}

type statusHold struct {
	// since is when the first Open status was first held.
	since time.Time
	// pending is the status held back, restored by the next reconcile while
	// the object in the cache does not show the page yet.
	pending *twv1.BrowserWindowStatus
	// lastWrite is when the agent last wrote the window's status.
	lastWrite time.Time
}

// settlePoll is how often a held first write looks at the page again.
const settlePoll = 25 * time.Millisecond

func (sh *statusHolds) get(uid types.UID) *statusHold {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = map[types.UID]*statusHold{}
	}
	h := sh.m[uid]
	if h == nil {
		h = &statusHold{}
		sh.m[uid] = h
	}
	return h
}

// sweep drops the entries that hold nothing, at most once per keep.
func (sh *statusHolds) sweep(now time.Time) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.swept) < max(sh.keep, settlePoll) {
		return
	}
	sh.swept = now
	for uid, h := range sh.m {
		if h.since.IsZero() && h.pending == nil && now.Sub(h.lastWrite) >= sh.keep {
			delete(sh.m, uid)
		}
	}
}

func (sh *statusHolds) peek(uid types.UID) *twv1.BrowserWindowStatus {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if h := sh.m[uid]; h != nil && h.pending != nil {
		return h.pending.DeepCopy()
	}
	return nil
}

func (sh *statusHolds) forget(uid types.UID) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.m, uid)
}

// restore puts a first-Open status back into w, read from a cache that does
// not show it: held (nothing of it written yet) or written a moment ago (the
// cache has not seen the write). A status patch is a merge patch, whose lists
// (conditions) replace the stored ones: a reconcile from such a cache would
// otherwise write the page's status again without what the first write said
// (Placed, the pin). Once the cache shows the page, what was kept is dropped.
func (sh *statusHolds) restore(w *twv1.BrowserWindow) {
	if w.Status.TabID != "" {
		sh.mu.Lock()
		if h := sh.m[w.UID]; h != nil && h.since.IsZero() {
			h.pending = nil
		}
		sh.mu.Unlock()
		sh.sweep(time.Now())
		return
	}
	if p := sh.peek(w.UID); p != nil && p.TabID != "" {
		w.Status = *p
	}
}

// hold decides whether w's status, changed since before, waits: it returns how
// long (0: write now). Callers record the write with wrote.
func (a *Agent) hold(before, w *twv1.BrowserWindow, now time.Time) time.Duration {
	if !w.DeletionTimestamp.IsZero() {
		return 0
	}
	firstOpen := before.Status.TabID == "" && w.Status.TabID != "" && w.Status.Phase == twv1.WindowOpen
	switch {
	case firstOpen:
		if titled(w.Status.URL, w.Status.Title) {
			return 0
		}
		budget := a.opts.OpenSettle
		if w.Spec.Source == twv1.SourceSpawned {
			budget = a.opts.SpawnStatusSettle
		}
		h := a.holds.get(w.UID)
		if h.since.IsZero() {
			h.since = now
		}
		rem := budget - now.Sub(h.since)
		if rem <= 0 {
			return 0
		}
		h.pending = w.Status.DeepCopy()
		return min(rem, settlePoll)
	case before.Status.TabID != "" && observationOnly(&before.Status, &w.Status):
		h := a.holds.get(w.UID)
		if h.lastWrite.IsZero() {
			// Written by an earlier run of the agent: this write is the first.
			return 0
		}
		if rem := a.opts.ObserveInterval - now.Sub(h.lastWrite); rem > 0 {
			return rem
		}
	}
	return 0
}

// wrote records that w's status was written now. A first-Open status is kept
// until the cache shows it (restore).
func (a *Agent) wrote(w *twv1.BrowserWindow, now time.Time) {
	h := a.holds.get(w.UID)
	h.since, h.pending, h.lastWrite = time.Time{}, nil, now
	if w.Status.TabID != "" && w.Status.Phase == twv1.WindowOpen {
		h.pending = w.Status.DeepCopy()
	}
	a.holds.sweep(now)
}

// titled reports whether a page has a title of its own: not empty, not its url
// (Chromium's placeholder before the document's title, with or without the
// scheme), and a url other than about:blank.
func titled(url, title string) bool {
	if url == "" || url == "about:blank" || title == "" || title == url {
		return false
	}
	return !strings.HasSuffix(url, title)
}

// observationOnly reports whether two statuses differ in the page's url, title
// or window only.
func observationOnly(a, b *twv1.BrowserWindowStatus) bool {
	if a.URL == b.URL && a.Title == b.Title && a.WindowID == b.WindowID {
		return false
	}
	x, y := a.DeepCopy(), b.DeepCopy()
	x.URL, x.Title, x.WindowID = "", "", ""
	y.URL, y.Title, y.WindowID = "", "", ""
	return equality.Semantic.DeepEqual(x, y)
}

// withHeld overlays the held first-Open statuses of windows the cache does not
// show open yet (their pins count for placement).
func (a *Agent) withHeld(windows []twv1.BrowserWindow) []twv1.BrowserWindow {
	for i := range windows {
		a.holds.restore(&windows[i])
	}
	return windows
}
