package main

import (
	"fmt"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

type tracker struct {
	mu                 sync.Mutex
	sessions, windows  map[string]bool // exists
	readySess, openWin map[string]bool
	w                  int
}

func newTracker(w int) *tracker {
	return &tracker{sessions: map[string]bool{}, windows: map[string]bool{}, readySess: map[string]bool{}, openWin: map[string]bool{}, w: w}
}

func (t *tracker) on(e apiEvent) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case e.Sess != nil:
		n := e.Sess.Name
		if e.Type == watch.Deleted {
			delete(t.sessions, n)
			delete(t.readySess, n)
			return false
		}
		t.sessions[n] = true
		st := e.Sess.Status
		if apimeta.IsStatusConditionTrue(st.Conditions, twv1.ReadyCondition) && int(st.Windows.Live) == t.w && int(st.Windows.Opened) == t.w {
			t.readySess[n] = true
		} else {
			delete(t.readySess, n)
		}
	case e.Win != nil:
		n := e.Win.Name
		if e.Type == watch.Deleted {
			delete(t.windows, n)
			delete(t.openWin, n)
			return false
		}
		t.windows[n] = true
		if e.Win.Status.Phase == twv1.WindowOpen && e.Win.Status.TabID != "" {
			t.openWin[n] = true
		} else {
			delete(t.openWin, n)
		}
	}
	return false
}

func (t *tracker) state() (sess, win, ready, open int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions), len(t.windows), len(t.readySess), len(t.openWin)
}

// waitFor polls the tracker (and extra) until cond holds; it logs progress.
func waitFor(what string, timeout time.Duration, t *tracker, cond func(sess, win, ready, open int) bool) error {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		s, w, r, o := t.state()
		if cond(s, w, r, o) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: timed out after %v (sessions %d, windows %d, ready %d, open %d)", what, timeout, s, w, r, o)
		}
		if time.Since(lastLog) > 15*time.Second {
			logf("  %s: sessions %d, windows %d, ready sessions %d, open windows %d", what, s, w, r, o)
			lastLog = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}
