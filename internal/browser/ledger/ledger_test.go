package ledger

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// errAny stands for "some error, none of the browser sentinels": a malformed request.
var errAny = errors.New("any error")

func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: %v, want success", what, err)
	case want == errAny && err == nil:
		t.Fatalf("%s: success, want an error", what)
	case want != nil && want != errAny && !errors.Is(err, want):
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

// standard returns a ledger holding one record of every kind:
//
//	P1 opened under "owner", S1 spawned from P1 under "child" (parent "owner"),
//	B1 bound under "binder".
func standard(t *testing.T, path string) *Ledger {
	t.Helper()
	l, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Opened("owner", "P1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Adopt(browser.AdoptRequest{Key: "child", ID: "S1", Parent: "owner"}, "P1", ""); err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(browser.BindRequest{Key: "binder", ID: "B1"}, "", ""); err != nil {
		t.Fatal(err)
	}
	return l
}

var (
	recP1 = browser.Record{Key: "owner", Page: "P1", Kind: browser.RecordOpened}
	recS1 = browser.Record{Key: "child", Page: "S1", Kind: browser.RecordSpawned, Parent: "owner"}
	recB1 = browser.Record{Key: "binder", Page: "B1", Kind: browser.RecordBound}
)

// TestRules runs one operation against the standard ledger and checks its result
// and the records it leaves: a refused operation changes nothing.
func TestRules(t *testing.T) {
	type tc struct {
		name string
		op   func(l *Ledger) error
		want error
		// after is the record of page afterwards (nil: none). Only checked when
		// page is set; refused operations must leave all records as they were.
		page  string
		after *browser.Record
	}
	rec := func(r browser.Record) *browser.Record { return &r }
	opened := func(key, page string) func(*Ledger) error {
		return func(l *Ledger) error { return l.Opened(key, page) }
	}
	adopt := func(key, id, parent, opener, attributed string) func(*Ledger) error {
		return func(l *Ledger) error {
			return l.Adopt(browser.AdoptRequest{Key: key, ID: id, Parent: parent}, opener, attributed)
		}
	}
	bind := func(key, id string) func(*Ledger) error {
		return func(l *Ledger) error { return l.Bind(browser.BindRequest{Key: key, ID: id}, "", "") }
	}
	bindObserved := func(key, id, opener, attributed string) func(*Ledger) error {
		return func(l *Ledger) error { return l.Bind(browser.BindRequest{Key: key, ID: id}, opener, attributed) }
	}
	release := func(key, id string) func(*Ledger) error {
		return func(l *Ledger) error { return l.Release(key, id) }
	}
	closed := func(key, id string) func(*Ledger) error {
		return func(l *Ledger) error { return l.Closed(key, id) }
	}
	mayClose := func(key, id string) func(*Ledger) error {
		return func(l *Ledger) error { return l.MayClose(key, id) }
	}
	mayAct := func(key, id string) func(*Ledger) error {
		return func(l *Ledger) error { return l.MayAct(key, id) }
	}
	N := browser.ErrNotOwned
	cases := []tc{
		// Opened
		{name: "opened/new key new page", op: opened("k", "P9"), page: "P9",
			after: rec(browser.Record{Key: "k", Page: "P9", Kind: browser.RecordOpened})},
		{name: "opened/again same key", op: opened("owner", "P1"), page: "P1", after: rec(recP1)},
		{name: "opened/page of another key", op: opened("k", "P1"), want: browser.ErrInUse},
		{name: "opened/spawned page of another key", op: opened("k", "S1"), want: browser.ErrInUse},
		{name: "opened/bound tab", op: opened("k", "B1"), want: browser.ErrInUse},
		{name: "opened/key already has a page", op: opened("owner", "P9"), want: browser.ErrInUse},
		{name: "opened/no key", op: opened("", "P9"), want: errAny},
		{name: "opened/no page", op: opened("k", ""), want: errAny},

		// Adopt
		{name: "adopt/opener recorded under parent", op: adopt("k", "S9", "owner", "P1", ""), page: "S9",
			after: rec(browser.Record{Key: "k", Page: "S9", Kind: browser.RecordSpawned, Parent: "owner"})},
		{name: "adopt/spawn of a spawn", op: adopt("k", "S9", "child", "S1", ""), page: "S9",
			after: rec(browser.Record{Key: "k", Page: "S9", Kind: browser.RecordSpawned, Parent: "child"})},
		{name: "adopt/the user's spawn of a bound tab", op: adopt("k", "S9", "binder", "B1", ""), want: browser.ErrNotObserved},
		{name: "adopt/spawn of a bound tab caused by an act", op: adopt("k", "S9", "act", "B1", "act"), page: "S9",
			after: rec(browser.Record{Key: "k", Page: "S9", Kind: browser.RecordSpawned, Parent: "act"})},
		{name: "adopt/spawn of a bound tab attributed to another act", op: adopt("k", "S9", "act", "B1", "other-act"), want: browser.ErrNotObserved},
		{name: "adopt/attributed to the parent's act", op: adopt("k", "S9", "act", "", "act"), page: "S9",
			after: rec(browser.Record{Key: "k", Page: "S9", Kind: browser.RecordSpawned, Parent: "act"})},
		{name: "adopt/opener recorded under another key", op: adopt("k", "S9", "binder", "P1", ""), want: browser.ErrNotObserved},
		{name: "adopt/grandparent is not the parent", op: adopt("k", "S9", "owner", "S1", ""), want: browser.ErrNotObserved},
		{name: "adopt/opener not recorded", op: adopt("k", "S9", "owner", "U1", ""), want: browser.ErrNotObserved},
		{name: "adopt/made-up parent", op: adopt("k", "S9", "made-up", "", ""), want: browser.ErrNotObserved},
		{name: "adopt/attributed to another act", op: adopt("k", "S9", "act", "", "other-act"), want: browser.ErrNotObserved},
		{name: "adopt/an opener beats attribution", op: adopt("k", "S9", "act", "U1", "act"), want: browser.ErrNotObserved},
		{name: "adopt/again same key", op: adopt("child", "S1", "owner", "P1", ""), page: "S1", after: rec(recS1)},
		{name: "adopt/spawned page under another key", op: adopt("k", "S1", "owner", "P1", ""), want: browser.ErrInUse},
		{name: "adopt/opened page", op: adopt("k", "P1", "owner", "", "owner"), want: browser.ErrInUse},
		{name: "adopt/opened page by its owner", op: adopt("owner", "P1", "owner", "", "owner"), want: browser.ErrInUse},
		{name: "adopt/bound tab", op: adopt("k", "B1", "binder", "", "binder"), want: browser.ErrInUse},
		{name: "adopt/bound tab by its binder", op: adopt("binder", "B1", "binder", "", "binder"), want: browser.ErrInUse},
		{name: "adopt/key already has a page", op: adopt("binder", "S9", "owner", "P1", ""), want: browser.ErrInUse},
		{name: "adopt/no key", op: adopt("", "S9", "owner", "P1", ""), want: errAny},
		{name: "adopt/no parent", op: adopt("k", "S9", "", "", ""), want: errAny},

		// Bind
		{name: "bind/free tab", op: bind("k", "U1"), page: "U1",
			after: rec(browser.Record{Key: "k", Page: "U1", Kind: browser.RecordBound})},
		{name: "bind/again same key", op: bind("binder", "B1"), page: "B1", after: rec(recB1)},
		{name: "bind/tab bound by another key", op: bind("k", "B1"), want: browser.ErrInUse},
		{name: "bind/opened page", op: bind("k", "P1"), want: browser.ErrInUse},
		{name: "bind/spawned page", op: bind("k", "S1"), want: browser.ErrInUse},
		{name: "bind/spawn of a recorded page, not adopted yet", op: bindObserved("k", "S9", "P1", ""), want: browser.ErrInUse},
		{name: "bind/page that appeared during an action", op: bindObserved("k", "S9", "", "act-1"), want: browser.ErrInUse},
		{name: "bind/the user's spawn of a bound tab", op: bindObserved("k", "U9", "B1", ""), page: "U9",
			after: rec(browser.Record{Key: "k", Page: "U9", Kind: browser.RecordBound})},
		{name: "bind/an act's spawn of a bound tab, not adopted yet", op: bindObserved("k", "S9", "B1", "act-1"), want: browser.ErrInUse},
		{name: "bind/spawn of an unrecorded page", op: bindObserved("k", "U9", "U1", ""), page: "U9",
			after: rec(browser.Record{Key: "k", Page: "U9", Kind: browser.RecordBound})},
		{name: "bind/key already has a page", op: bind("binder", "U1"), want: browser.ErrInUse},
		// A keyless binding would let an Act without an Owner through.
		{name: "bind/no key", op: bind("", "U1"), want: errAny},
		{name: "bind/no page", op: bind("k", ""), want: errAny},

		// Release and Closed
		{name: "release/bound tab", op: release("binder", "B1"), page: "B1"},
		{name: "release/opened page", op: release("owner", "P1"), page: "P1"},
		{name: "release/spawned page", op: release("child", "S1"), page: "S1"},
		{name: "release/another key's tab", op: release("k", "B1"), page: "B1", after: rec(recB1)},
		{name: "release/another key's page", op: release("binder", "P1"), page: "P1", after: rec(recP1)},
		{name: "release/unknown page", op: release("k", "U1"), page: "U1"},
		{name: "closed/owner", op: closed("owner", "P1"), page: "P1"},
		{name: "closed/another key", op: closed("k", "P1"), page: "P1", after: rec(recP1)},

		// MayClose: opened or spawned under the key, nothing else.
		{name: "mayclose/opened", op: mayClose("owner", "P1"), page: "P1", after: rec(recP1)},
		{name: "mayclose/spawned", op: mayClose("child", "S1"), page: "S1", after: rec(recS1)},
		{name: "mayclose/bound by the key", op: mayClose("binder", "B1"), want: N},
		{name: "mayclose/another key", op: mayClose("binder", "P1"), want: N},
		{name: "mayclose/parent closing the spawn", op: mayClose("owner", "S1"), want: N},
		{name: "mayclose/no key", op: mayClose("", "P1"), want: N},
		{name: "mayclose/unrecorded page", op: mayClose("owner", "U1"), want: N},
		{name: "mayclose/unrecorded page no key", op: mayClose("", "U1"), want: N},

		// MayAct: recorded under the owner, any kind.
		{name: "mayact/opened", op: mayAct("owner", "P1"), page: "P1", after: rec(recP1)},
		{name: "mayact/spawned", op: mayAct("child", "S1"), page: "S1", after: rec(recS1)},
		{name: "mayact/bound", op: mayAct("binder", "B1"), page: "B1", after: rec(recB1)},
		{name: "mayact/another key", op: mayAct("binder", "P1"), want: N},
		{name: "mayact/parent on the spawn", op: mayAct("owner", "S1"), want: N},
		{name: "mayact/no owner", op: mayAct("", "P1"), want: N},
		{name: "mayact/unrecorded page", op: mayAct("owner", "U1"), want: N},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := standard(t, "")
			before := l.Records()
			err := c.op(l)
			checkErr(t, c.name, err, c.want)
			if c.want != nil {
				if got := l.Records(); !slices.Equal(got, before) {
					t.Fatalf("a refused operation changed the records:\n got %+v\nwant %+v", got, before)
				}
				return
			}
			if c.page == "" {
				return
			}
			got, ok := l.Get(c.page)
			switch {
			case c.after == nil && ok:
				t.Fatalf("page %s still recorded: %+v", c.page, got)
			case c.after != nil && (!ok || got != *c.after):
				t.Fatalf("page %s: record %+v (%v), want %+v", c.page, got, ok, *c.after)
			case c.after != nil:
				if p, ok := l.PageOf(c.after.Key); !ok || p != c.page {
					t.Fatalf("PageOf(%s) = %q %v, want %s", c.after.Key, p, ok, c.page)
				}
			case c.after == nil:
				// The key that held the page is free again, and the others untouched.
				for _, r := range before {
					if r.Page == c.page {
						if p, ok := l.PageOf(r.Key); ok {
							t.Fatalf("key %s still maps to %s", r.Key, p)
						}
					} else if g, ok := l.Get(r.Page); !ok || g != r {
						t.Fatalf("record of %s: %+v %v, want %+v untouched", r.Page, g, ok, r)
					}
				}
			}
		})
	}
}

// TestSequences checks rules that take more than one step.
func TestSequences(t *testing.T) {
	t.Run("released tab can be bound by another key", func(t *testing.T) {
		l := standard(t, "")
		checkErr(t, "bind taken", l.Bind(browser.BindRequest{Key: "k", ID: "B1"}, "", ""), browser.ErrInUse)
		checkErr(t, "release", l.Release("binder", "B1"), nil)
		checkErr(t, "release again", l.Release("binder", "B1"), nil)
		checkErr(t, "bind freed", l.Bind(browser.BindRequest{Key: "k", ID: "B1"}, "", ""), nil)
		checkErr(t, "old binder acts", l.MayAct("binder", "B1"), browser.ErrNotOwned)
		checkErr(t, "new binder acts", l.MayAct("k", "B1"), nil)
	})
	t.Run("released page is not closable and can be bound", func(t *testing.T) {
		l := standard(t, "")
		checkErr(t, "release", l.Release("owner", "P1"), nil)
		checkErr(t, "close after release", l.MayClose("owner", "P1"), browser.ErrNotOwned)
		checkErr(t, "act after release", l.MayAct("owner", "P1"), browser.ErrNotOwned)
		checkErr(t, "bind by another", l.Bind(browser.BindRequest{Key: "k", ID: "P1"}, "", ""), nil)
		checkErr(t, "close by binder", l.MayClose("k", "P1"), browser.ErrNotOwned)
	})
	t.Run("a key's page closed frees the key", func(t *testing.T) {
		l := standard(t, "")
		checkErr(t, "opened other", l.Opened("owner", "P2"), browser.ErrInUse)
		checkErr(t, "closed", l.Closed("owner", "P1"), nil)
		checkErr(t, "opened other", l.Opened("owner", "P2"), nil)
		// The spawn of P1 keeps its record: it is its own key's page.
		if r, ok := l.Get("S1"); !ok || r != recS1 {
			t.Fatalf("S1: %+v %v", r, ok)
		}
	})
	t.Run("spawn of a released opener is not observed", func(t *testing.T) {
		l := standard(t, "")
		checkErr(t, "release", l.Release("owner", "P1"), nil)
		checkErr(t, "adopt", l.Adopt(browser.AdoptRequest{Key: "k", ID: "S9", Parent: "owner"}, "P1", ""), browser.ErrNotObserved)
	})
}

// TestConcurrentUse hammers one persisted ledger from many goroutines (run with
// -race): every page ends up with exactly one record, the file matches memory.
func TestConcurrentUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8
	const rounds = 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := map[string][]string{} // contested page → keys that bound it
	errs := make(chan error, workers*rounds*8)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				own := fmt.Sprintf("w%d-r%d", w, i)
				page := "P-" + own
				if err := l.Opened(own, page); err != nil {
					errs <- err
				}
				if err := l.Adopt(browser.AdoptRequest{Key: own + "-child", ID: "S-" + own, Parent: own}, page, ""); err != nil {
					errs <- err
				}
				if err := l.MayClose(own, page); err != nil {
					errs <- err
				}
				if err := l.MayAct(own+"-child", "S-"+own); err != nil {
					errs <- err
				}
				// Everyone races for the same tab of this round.
				contested := fmt.Sprintf("T%d", i)
				switch err := l.Bind(browser.BindRequest{Key: own + "-bind", ID: contested}, "", ""); {
				case err == nil:
					mu.Lock()
					winners[contested] = append(winners[contested], own)
					mu.Unlock()
				case !errors.Is(err, browser.ErrInUse):
					errs <- err
				}
				_ = l.Records()
				_, _ = l.Get(contested)
				_, _ = l.PageOf(own)
				if i%2 == 0 {
					if err := l.Closed(own, page); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range rounds {
		contested := fmt.Sprintf("T%d", i)
		if ws := winners[contested]; len(ws) != 1 {
			t.Errorf("tab %s bound by %d keys: %v", contested, len(ws), ws)
		}
	}
	got := l.Records()
	// Per worker: odd rounds keep P and S, even rounds only S; plus one bound tab per round.
	if want := workers*(rounds/2*2+(rounds-rounds/2)) + rounds; len(got) != want {
		t.Errorf("%d records, want %d", len(got), want)
	}
	r, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if reloaded := r.Records(); !slices.Equal(reloaded, got) {
		t.Errorf("the file has %d records, memory %d", len(reloaded), len(got))
	}
}
