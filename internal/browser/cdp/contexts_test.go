package cdp

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestDisposeContextClosesItsPagesOnly: disposing a pool context closes every
// page in it (a tab and a page in a window of its own) and returns once the
// driver has seen them go, naming each to gone as it goes; another context's
// page stays. The pages' records
// stay until each is closed, which is then a no-op that drops the record, also
// by a driver restarted in between (the agent's cleanup after a crash).
func TestDisposeContextClosesItsPagesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	b, _ := newDriver(t, Options{Pool: true, LedgerPath: path})
	ctx := tctx(t)
	t.Cleanup(func() { _ = b.DisposeContext(context.Background(), "E", nil) })
	open := func(key, c string, newWindow bool) browser.Page {
		p, err := b.Open(ctx, browser.OpenRequest{Key: key, URL: site.Path("/landing?" + key), Context: c, NewWindow: newWindow})
		if err != nil {
			t.Fatalf("open %s in %s: %v", key, c, err)
		}
		return p
	}
	d1, d2, e1 := open("d1", "D", true), open("d2", "D", false), open("e1", "E", true)
	// gone names each page of the context once, when the driver no longer has it.
	went := map[string]int{}
	if err := b.DisposeContext(ctx, "D", func(page string) {
		went[page]++
		if b.has(page) {
			t.Errorf("gone(%s) called while the driver still has the page", page)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(went) != 2 || went[d1.ID] != 1 || went[d2.ID] != 1 {
		t.Errorf("gone called for %v, want %s and %s once each", went, d1.ID, d2.ID)
	}
	s, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []browser.Page{d1, d2} {
		if _, ok := s.Page(p.ID); ok {
			t.Errorf("page %s of the disposed context is still seen after DisposeContext returned", p.ID)
		}
	}
	if _, ok := s.Page(e1.ID); !ok {
		t.Error("E's page went with D's context")
	}
	if got := b.PoolContexts(); len(got) != 1 || got[0] != "E" {
		t.Errorf("pool contexts after disposing D: %v, want [E]", got)
	}
	if n := len(s.Records); n != 3 {
		t.Errorf("records after the disposal: %d (%+v), want 3: each is dropped by its window's own close", n, s.Records)
	}

	// A restart between the disposal and the closes: the new driver's closes
	// of the gone pages succeed and drop their records.
	b.Shutdown()
	b2, _ := newDriver(t, Options{Pool: true, LedgerPath: path})
	for _, p := range []struct{ key, id string }{{"d1", d1.ID}, {"d2", d2.ID}} {
		if err := b2.Close(ctx, browser.CloseRequest{Key: p.key, ID: p.id, OwnsWindow: p.key == "d1"}); err != nil {
			t.Errorf("close %s after the disposal and a restart: %v", p.key, err)
		}
	}
	if err := b2.DisposeContext(ctx, "D", nil); err != nil {
		t.Errorf("disposing D again: %v", err)
	}
	s, err = b2.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Records) != 1 || s.Records[0].Key != "e1" {
		t.Errorf("records: %+v, want only e1's", s.Records)
	}
	if _, ok := s.Page(e1.ID); !ok {
		t.Error("E's page is gone")
	}
	t.Cleanup(func() { _ = b2.DisposeContext(context.Background(), "E", nil) })
}
