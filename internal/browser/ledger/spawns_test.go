package ledger

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestReleasedSpawnIsNeverAdoptedAgain: a spawned page released as a Keep
// deliverable is the user's; its opener still recorded does not make it a new
// spawn (a reconnect's resync, or the cleanup of its opener's window, would
// otherwise adopt it again and close it with the session). The rule survives a
// restart; a page closed is not remembered.
func TestReleasedSpawnIsNeverAdoptedAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Opened("opener", "P"))
	must(l.Adopt(browser.AdoptRequest{Key: "keep", ID: "K", Parent: "opener"}, "P", ""))
	must(l.Adopt(browser.AdoptRequest{Key: "temp", ID: "T", Parent: "opener"}, "P", ""))
	must(l.Release("keep", "K"))
	must(l.Closed("temp", "T"))
	if err := l.Adopt(browser.AdoptRequest{Key: "again", ID: "K", Parent: "opener"}, "P", ""); !errors.Is(err, browser.ErrNotObserved) {
		t.Fatalf("adopting a released Keep page again: %v, want ErrNotObserved", err)
	}
	l2, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Adopt(browser.AdoptRequest{Key: "again", ID: "K", Parent: "opener"}, "P", ""); !errors.Is(err, browser.ErrNotObserved) {
		t.Fatalf("after a restart, adopting a released Keep page again: %v, want ErrNotObserved", err)
	}
	// A closed page's id is not kept (the adopt here only proves the rule is about releases).
	must(l2.Adopt(browser.AdoptRequest{Key: "temp2", ID: "T", Parent: "opener"}, "P", ""))
}

// TestSpawnOfAClosedPageIsAdoptedUnderItsOwner: a page spawned by an owned page
// just before that page closed is adopted under the closed page's owner, and
// under no one else; a released (bound or Keep) page gives its spawns no such
// claim, and only the last maxClosed closes are remembered.
func TestSpawnOfAClosedPageIsAdoptedUnderItsOwner(t *testing.T) {
	l, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Opened("window-a", "A"))
	must(l.Closed("window-a", "A"))
	if err := l.Adopt(browser.AdoptRequest{Key: "thief", ID: "S", Parent: "window-b"}, "A", ""); !errors.Is(err, browser.ErrNotObserved) {
		t.Fatalf("adopting the spawn of a closed page under another parent: %v, want ErrNotObserved", err)
	}
	must(l.Adopt(browser.AdoptRequest{Key: "spawn", ID: "S", Parent: "window-a"}, "A", ""))
	must(l.MayClose("spawn", "S"))

	// A bound tab released is the user's: what it spawns is never claimed through it.
	must(l.Bind(browser.BindRequest{Key: "binder", ID: "U"}, "", ""))
	must(l.Release("binder", "U"))
	must(l.Closed("binder", "U")) // no record: nothing to remember
	if err := l.Adopt(browser.AdoptRequest{Key: "b-spawn", ID: "V", Parent: "binder"}, "U", ""); !errors.Is(err, browser.ErrNotObserved) {
		t.Fatalf("adopting the spawn of a released bound tab: %v, want ErrNotObserved", err)
	}

	// Bounded: the oldest closes are forgotten.
	for i := range maxClosed {
		k, p := fmt.Sprintf("w%d", i), fmt.Sprintf("p%d", i)
		must(l.Opened(k, p))
		must(l.Closed(k, p))
	}
	if n := len(l.closed); n != maxClosed || len(l.closedOrder) != maxClosed {
		t.Fatalf("remembered %d closes (%d in order), want %d", n, len(l.closedOrder), maxClosed)
	}
	if err := l.Adopt(browser.AdoptRequest{Key: "late", ID: "L", Parent: "window-a"}, "A", ""); !errors.Is(err, browser.ErrNotObserved) {
		t.Fatalf("adopting under a close forgotten long ago: %v, want ErrNotObserved", err)
	}
}
