package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
)

// blindDriver hides the fake's browser.SpawnReporter, as a wrapper does.
type blindDriver struct{ browser.Browser }

// TestSpawnSettleOf: a mutating step leaves nothing to settle when a driver
// that reports spawns saw none, the spawns it announced otherwise, and a blind
// settle when the driver cannot tell, could not watch the step, or the step
// failed.
func TestSpawnSettleOf(t *testing.T) {
	reporter := &Agent{opts: Options{Browser: fake.New()}}
	blind := &Agent{opts: Options{Browser: blindDriver{fake.New()}}}
	for _, tc := range []struct {
		name string
		a    *Agent
		out  browser.ActResult
		err  error
		want spawnSettle
	}{
		{"nothing announced", reporter, browser.ActResult{}, nil, spawnSettle{base: 2}},
		{"two announced", reporter, browser.ActResult{Spawns: 2}, nil, spawnSettle{announced: 2, base: 2}},
		{"not watched", reporter, browser.ActResult{SpawnsUnknown: true}, nil, spawnSettle{blind: true, base: 2}},
		{"failed", reporter, browser.ActResult{}, errors.New("boom"), spawnSettle{blind: true, base: 2}},
		{"driver cannot tell", blind, browser.ActResult{}, nil, spawnSettle{blind: true, base: 2}},
	} {
		if got := tc.a.spawnSettleOf(tc.out, tc.err, 2); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if (spawnSettle{}).needed() || (spawnSettle{}).kind() != settleNone {
		t.Error("a step that announced nothing needs no settle")
	}
}

// TestSettleWaitsForTheAnnouncedSpawns: an announced spawn is waited for
// until it is adopted into the session (noted), then settle returns; one
// already adopted is not waited for.
func TestSettleWaitsForTheAnnouncedSpawns(t *testing.T) {
	a := &Agent{opts: Options{Browser: fake.New(), SpawnWait: time.Minute}, barrier: make(chan chan struct{}),
		spawnWatch: spawnWatch{m: map[string]*[]twv1.SpawnedWindow{}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the adopter's side of the barrier
		for {
			select {
			case done := <-a.barrier:
				close(done)
			case <-ctx.Done():
				return
			}
		}
	}()
	l := a.spawnWatch.start("ns", "s")
	settled := make(chan struct{})
	go func() {
		a.settle(ctx, l, spawnSettle{announced: 1})
		close(settled)
	}()
	select {
	case <-settled:
		t.Fatal("settle returned before the announced spawn was adopted")
	default:
	}
	a.spawnWatch.note("ns", "s", "page-1", twv1.SpawnedWindow{Name: "s-spawn-1"})
	select {
	case <-settled:
	case <-time.After(30 * time.Second):
		t.Fatal("settle did not return once the spawn was adopted")
	}
	// Already adopted: returns at once (the barrier is not even asked).
	a.settle(context.Background(), l, spawnSettle{announced: 1})
}

// TestSpawnURLsWaitForTheFirstNavigation: a spawn adopted before its page had
// a url (a window.open popup: created, then navigated) is listed with the url
// the driver reports next; one that stays on about:blank is listed as such
// once spawnURLWait is over (one wait for all of them); a page gone meanwhile, and a window whose page is
// not known, are listed without one; a url known at adoption stays.
func TestSpawnURLsWaitForTheFirstNavigation(t *testing.T) {
	a := &Agent{model: newModel(), spawnWatch: spawnWatch{m: map[string]*[]twv1.SpawnedWindow{}}}
	l := a.spawnWatch.start("ns", "s")
	for _, p := range []browser.Page{{ID: "navigates"}, {ID: "blank", URL: "about:blank"}, {ID: "blank-too", URL: "about:blank"}, {ID: "goes"}, {ID: "known", URL: "https://b.example/"}} {
		a.model.put(p)
		a.spawnWatch.note("ns", "s", p.ID, twv1.SpawnedWindow{Name: "w-" + p.ID, URL: p.URL})
	}
	a.spawnWatch.note("ns", "s", "", twv1.SpawnedWindow{Name: "w-unknown"})
	go func() {
		time.Sleep(50 * time.Millisecond)
		a.model.put(browser.Page{ID: "navigates", URL: "about:blank"})
		a.model.put(browser.Page{ID: "navigates", URL: "https://a.example/compose"})
		a.model.remove("goes")
	}()
	start := time.Now()
	got := a.withSpawnURLs(context.Background(), "ns", a.spawnWatch.snapshot(l))
	want := []twv1.SpawnedWindow{
		{Name: "w-navigates", URL: "https://a.example/compose"},
		{Name: "w-blank", URL: "about:blank"},
		{Name: "w-blank-too", URL: "about:blank"},
		{Name: "w-goes"},
		{Name: "w-known", URL: "https://b.example/"},
		{Name: "w-unknown"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("spawn %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A page can keep its spawns blank on purpose: two of them (or 64) cost
	// the result one spawnURLWait, not one each.
	if d := time.Since(start); d >= 2*spawnURLWait {
		t.Errorf("waited %v for two blank spawns: spawnURLWait (%v) is the bound in all", d, spawnURLWait)
	}
	a.spawnWatch.stop("ns", "s", l)
	if p := a.spawnWatch.page("ns", "w-navigates"); p != "" {
		t.Errorf("the page of a spawn outlived its action: %q", p)
	}
}
