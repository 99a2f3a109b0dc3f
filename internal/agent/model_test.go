package agent

import (
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestSnapshotNeverForgetsNewerRecords: a snapshot taken while the driver
// accepts a record (an Open, an adoption) or drops one (a close) must not
// undo that change in the agent's mirror, or the agent would distrust its own
// page or close a page twice.
func TestSnapshotNeverForgetsNewerRecords(t *testing.T) {
	opened := browser.Record{Key: "uid-a", Page: "p1", Kind: browser.RecordOpened}
	closed := browser.Record{Key: "uid-b", Page: "p2", Kind: browser.RecordOpened}
	m := newModel()
	m.putRecord(closed)

	mark := m.beginSnapshot()
	// The driver takes its snapshot here: it shows p2, not yet p1.
	stale := browser.Snapshot{Records: []browser.Record{closed}}
	m.putRecord(opened)            // an Open the driver accepted after the snapshot
	m.dropRecord(closed.Key, "p2") // a close the driver finished after the snapshot
	m.replace(stale, mark)

	if p, ok := m.pageOfKey("uid-a"); !ok || p != "p1" {
		t.Errorf("the record accepted during the snapshot was lost: %q %v", p, ok)
	}
	if _, ok := m.record("p2"); ok {
		t.Error("the record dropped during the snapshot came back")
	}
	if len(m.recLog) != 0 || m.snapping != 0 {
		t.Errorf("the change log outlives the snapshot: %d ops, %d in flight", len(m.recLog), m.snapping)
	}

	// Without a snapshot in flight nothing is logged; a later snapshot is the truth.
	m.putRecord(browser.Record{Key: "uid-c", Page: "p3", Kind: browser.RecordBound})
	if len(m.recLog) != 0 {
		t.Errorf("logged %d ops with no snapshot in flight", len(m.recLog))
	}
	mark = m.beginSnapshot()
	m.replace(browser.Snapshot{Records: []browser.Record{opened}}, mark)
	if _, ok := m.record("p3"); ok {
		t.Error("a record the driver no longer has survived a snapshot taken after it")
	}
	m.abortSnapshot() // an abort with nothing in flight is harmless
	if m.snapping != 0 {
		t.Errorf("snapping = %d", m.snapping)
	}
}

// TestSpawnsOfFollowsPages: the opener index answers what a scan of every page
// would, through events that learn the opener late, snapshots and removals.
func TestSpawnsOfFollowsPages(t *testing.T) {
	ids := func(ps []browser.Page) map[string]bool {
		out := map[string]bool{}
		for _, p := range ps {
			out[p.ID] = true
		}
		return out
	}
	m := newModel()
	m.put(browser.Page{ID: "opener"})
	m.put(browser.Page{ID: "a", OpenerID: "opener"})
	m.put(browser.Page{ID: "b"})                                        // created; its opener comes later
	m.put(browser.Page{ID: "b", OpenerID: "opener", URL: "https://x/"}) // the opener learned
	m.put(browser.Page{ID: "a", URL: "https://y/"})                     // an event without the opener keeps it
	if got := ids(m.spawnsOf("opener")); len(got) != 2 || !got["a"] || !got["b"] {
		t.Fatalf("spawnsOf(opener) = %v, want a and b", got)
	}
	if p := m.spawnsOf("opener"); p[0].URL == "" {
		t.Errorf("spawnsOf returns the pages as the model knows them, got %+v", p)
	}
	m.remove("a")
	if got := ids(m.spawnsOf("opener")); len(got) != 1 || !got["b"] {
		t.Fatalf("after removing a: %v, want b", got)
	}
	m.replace(browser.Snapshot{Pages: []browser.Page{{ID: "opener"}, {ID: "c", OpenerID: "opener"}}}, m.beginSnapshot())
	if got := ids(m.spawnsOf("opener")); len(got) != 1 || !got["c"] {
		t.Fatalf("after a snapshot: %v, want c only", got)
	}
	if got := m.spawnsOf("nobody"); len(got) != 0 {
		t.Errorf("a page that opened nothing has no spawns, got %v", got)
	}
}
