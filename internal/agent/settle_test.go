package agent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

func TestTitled(t *testing.T) {
	for _, tc := range []struct {
		url, title string
		want       bool
	}{
		{"", "", false},
		{"about:blank", "about:blank", false},
		{"http://127.0.0.1:8080/landing", "", false},
		{"http://127.0.0.1:8080/landing", "http://127.0.0.1:8080/landing", false},
		{"http://127.0.0.1:8080/landing", "127.0.0.1:8080/landing", false}, // Chromium's placeholder
		{"http://127.0.0.1:8080/landing", "Landing", true},
		{"https://example.com/", "Example Domain", true},
	} {
		if got := titled(tc.url, tc.title); got != tc.want {
			t.Errorf("titled(%q, %q) = %v, want %v", tc.url, tc.title, got, tc.want)
		}
	}
}

func openWindow(uid string, source twv1.WindowSource) *twv1.BrowserWindow {
	w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: k8stypes.UID("uid-" + uid)}}
	w.Spec.Source = source
	return w
}

// TestHoldFoldsAPagesStagesIntoOneWrite: the first Open status waits for the
// title within the budget, and is written at once when the title is there or
// the budget is spent; later url/title-only changes wait for the interval;
// phase changes never wait.
func TestHoldFoldsAPagesStagesIntoOneWrite(t *testing.T) {
	a := &Agent{opts: Options{OpenSettle: 300 * time.Millisecond, SpawnStatusSettle: time.Second, ObserveInterval: time.Second}}
	t0 := time.Now()

	before := openWindow("w", twv1.SourceSpawned)
	w := before.DeepCopy()
	w.Status.Phase, w.Status.TabID = twv1.WindowOpen, "T1" // spawned: no url yet
	if d := a.hold(before, w, t0); d <= 0 || d > settlePoll {
		t.Fatalf("first write of an untitled spawn: hold %v, want a poll ≤ %v", d, settlePoll)
	}
	// The next reconcile starts from the cache (nothing written) and gets the held status back.
	again := before.DeepCopy()
	a.holds.restore(again)
	if again.Status.TabID != "T1" {
		t.Fatalf("held status not restored: %+v", again.Status)
	}
	w.Status.URL, w.Status.Title = "http://x.test/a", "x.test/a"
	if d := a.hold(before, w, t0.Add(500*time.Millisecond)); d <= 0 {
		t.Fatalf("placeholder title within the spawn budget: want a hold, got %v", d)
	}
	if d := a.hold(before, w, t0.Add(1100*time.Millisecond)); d != 0 {
		t.Fatalf("budget spent: want a write, got hold %v", d)
	}
	a.wrote(w, t0.Add(1100*time.Millisecond))
	// Written: a reconcile from a cache that has not seen the write yet starts
	// from what was written (a merge patch from the stale object would drop
	// its conditions); once the cache shows the page, nothing is kept.
	stale := before.DeepCopy()
	a.holds.restore(stale)
	if stale.Status.TabID != "T1" || stale.Status.Title != "x.test/a" {
		t.Fatalf("written status not restored into a stale object: %+v", stale.Status)
	}
	a.holds.restore(w.DeepCopy())
	if p := a.holds.peek(w.UID); p != nil {
		t.Fatalf("status still kept after the cache showed the page: %+v", p)
	}

	// After the first write: a title-only change waits for the interval.
	written := w.DeepCopy()
	w.Status.Title = "A"
	if d := a.hold(written, w, t0.Add(1200*time.Millisecond)); d < 800*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("title-only change 100ms after a write: hold %v, want ≈900ms", d)
	}
	if d := a.hold(written, w, t0.Add(2200*time.Millisecond)); d != 0 {
		t.Fatalf("title-only change after the interval: want a write, got %v", d)
	}
	// A phase change never waits.
	w.Status.Phase = twv1.WindowClosed
	if d := a.hold(written, w, t0.Add(1200*time.Millisecond)); d != 0 {
		t.Fatalf("phase change: want a write, got hold %v", d)
	}

	// An Open window whose page has its title is written at once.
	o := openWindow("o", twv1.SourceOpen)
	ow := o.DeepCopy()
	ow.Status.Phase, ow.Status.TabID, ow.Status.URL, ow.Status.Title = twv1.WindowOpen, "T2", "https://example.com/", "Example Domain"
	if d := a.hold(o, ow, t0); d != 0 {
		t.Fatalf("titled open: want a write, got hold %v", d)
	}
	// Without a title it waits at most OpenSettle.
	ow.Status.Title = ""
	if d := a.hold(o, ow, t0); d <= 0 {
		t.Fatalf("untitled open: want a hold")
	}
	if d := a.hold(o, ow, t0.Add(301*time.Millisecond)); d != 0 {
		t.Fatalf("untitled open after OpenSettle: want a write, got %v", d)
	}
}

// TestHoldsKeepOnlyWhatDecides: once a window's status is written, shown by the
// cache and older than the observe interval, its entry is dropped (the map holds
// the windows written recently, not every window of the profile), while a
// recent write still spaces the next title-only change and a held first Open
// status stays.
func TestHoldsKeepOnlyWhatDecides(t *testing.T) {
	a := &Agent{opts: Options{OpenSettle: time.Second, ObserveInterval: time.Second}, holds: statusHolds{keep: time.Second}}
	t0 := time.Now()
	titledOpen := func(uid string) (before, after *twv1.BrowserWindow) {
		before = openWindow(uid, twv1.SourceOpen)
		after = before.DeepCopy()
		after.Status.Phase, after.Status.TabID, after.Status.URL, after.Status.Title = twv1.WindowOpen, "T-"+uid, "https://x.test/", "X"
		return before, after
	}
	_, old := titledOpen("old")
	a.wrote(old, t0)
	a.holds.restore(old.DeepCopy()) // the cache shows the page
	_, recent := titledOpen("recent")
	a.wrote(recent, t0.Add(time.Second))
	a.holds.restore(recent.DeepCopy())
	heldBefore, held := titledOpen("held")
	held.Status.Title = "" // untitled: the first write waits
	if d := a.hold(heldBefore, held, t0.Add(time.Second)); d <= 0 {
		t.Fatalf("untitled first Open: want a hold, got %v", d)
	}

	a.holds.sweep(t0.Add(1100 * time.Millisecond))
	if _, ok := a.holds.m[old.UID]; ok {
		t.Errorf("entry of a window written 1.1s ago and shown by the cache still kept")
	}
	if _, ok := a.holds.m[recent.UID]; !ok {
		t.Errorf("entry of a window written 100ms ago dropped: its next title-only change would not wait")
	}
	if a.holds.peek(held.UID) == nil {
		t.Errorf("held first Open status dropped by the sweep")
	}
	// What the entries decide is unchanged: the old window writes a title-only
	// change at once, the recent one waits the rest of its interval.
	for _, c := range []struct {
		w        *twv1.BrowserWindow
		min, max time.Duration
	}{{old, 0, 0}, {recent, 800 * time.Millisecond, 900 * time.Millisecond}} {
		changed := c.w.DeepCopy()
		changed.Status.Title = "Y"
		if d := a.hold(c.w, changed, t0.Add(1150*time.Millisecond)); d < c.min || d > c.max {
			t.Errorf("%s: title-only change: hold %v, want %v..%v", c.w.Name, d, c.min, c.max)
		}
	}
	// A window deleted is forgotten at once (its finalizer's removal).
	a.holds.forget(recent.UID)
	if _, ok := a.holds.m[recent.UID]; ok {
		t.Errorf("entry of a deleted window kept")
	}
}
