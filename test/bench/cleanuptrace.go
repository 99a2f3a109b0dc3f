package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// cleanupTrace is one cleanup repetition's timeline, written with -trace:
// every API request of the roles (sent and answered) and every target the raw
// connection saw destroyed (the session's pages, and other targets with their
// type and url), in ms from the session's Delete. It is how a slow tail is
// read: which write waited for what, and when each page went.
type cleanupTrace struct {
	mu    sync.Mutex
	t0    time.Time
	pages map[string]bool
	types map[string]string
	lines []traceLine
	subs  []func()
	// stopOnce guards stop: write calls it, and the caller's defer again.
	stopOnce sync.Once
}

type traceLine struct {
	at   float64
	text string
}

// traceCleanup starts recording the targets the raw connection reports (for
// their types) before the session's pages open; nil without -trace.
func (l *lab) traceCleanup() *cleanupTrace {
	if l.cfg.trace == "" {
		return nil
	}
	t := &cleanupTrace{pages: map[string]bool{}, types: map[string]string{}}
	ev := l.raw.events.expect(func(e cdpEvent) bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		switch e.Method {
		case "Target.targetCreated", "Target.targetInfoChanged":
			t.types[e.TargetID] = e.Type + " " + e.URL
		case "Target.targetDestroyed":
			if t.t0.IsZero() {
				return false
			}
			what := "other target " + t.types[e.TargetID]
			if t.pages[e.TargetID] {
				what = "session page"
			}
			t.add(time.Now(), fmt.Sprintf("destroyed %s %s", short(e.TargetID), what))
		}
		return false
	})
	req := l.reqs.expect(func(r reqEvent) bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.t0.IsZero() {
			t.add(r.start, fmt.Sprintf("%s %s %s (answered at %.1f)", r.role, r.key, r.name, ms(r.end.Sub(t.t0))))
		}
		return false
	})
	t.subs = []func(){ev.cancel, req.cancel}
	return t
}

// stop ends the recording; more calls do nothing.
func (t *cleanupTrace) stop() {
	if t == nil {
		return
	}
	t.stopOnce.Do(func() {
		for _, cancel := range t.subs {
			cancel()
		}
	})
}

func short(id string) string { return id[:min(len(id), 8)] }

// begin marks the session's Delete, the trace's zero, and names its pages.
func (t *cleanupTrace) begin(t0 time.Time, pages []string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.t0 = t0
	for _, p := range pages {
		t.pages[p] = true
	}
}

func (t *cleanupTrace) add(at time.Time, text string) {
	t.lines = append(t.lines, traceLine{ms(at.Sub(t.t0)), text})
}

// write stops the recording a moment after the session went (what trails it
// is part of the picture) and writes <dir>/cleanup-<name>.txt.
func (t *cleanupTrace) write(dir, name string, lastPage, gone time.Time) error {
	if t == nil {
		return nil
	}
	time.Sleep(200 * time.Millisecond)
	t.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.add(lastPage, "LAST SESSION PAGE DESTROYED")
	t.add(gone, "SESSION OBJECT GONE")
	slices.SortStableFunc(t.lines, func(a, b traceLine) int { return cmp.Compare(a.at, b.at) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "# cleanup %s: ms from the session's Delete, sent at %s\n", name, t.t0.UTC().Format("15:04:05.000000"))
	for _, l := range t.lines {
		fmt.Fprintf(&sb, "%9.1f  %s\n", l.at, l.text)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cleanup-"+name+".txt"), []byte(sb.String()), 0o644)
}
