package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestPersistenceRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "agent")
	path := filepath.Join(dir, "ledger.json")

	l, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Records(); len(got) != 0 {
		t.Fatalf("a missing file is not an empty ledger: %+v", got)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("directory mode %v, want 0700", m)
	}
	l = standard(t, path)
	want := []browser.Record{recB1, recP1, recS1} // sorted by page
	if got := l.Records(); !slices.Equal(got, want) {
		t.Fatalf("records %+v, want %+v", got, want)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("file mode %v, want 0600", m)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version int              `json:"version"`
		Records []browser.Record `json:"records"`
	}
	if err := json.Unmarshal(data, &f); err != nil || f.Version != 1 || !slices.Equal(f.Records, want) {
		t.Fatalf("file %s: %v %+v", data, err, f)
	}

	// A restart reads every record back, with its rules.
	r, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Records(); !slices.Equal(got, want) {
		t.Fatalf("reloaded %+v, want %+v", got, want)
	}
	for _, rec := range want {
		if p, ok := r.PageOf(rec.Key); !ok || p != rec.Page {
			t.Errorf("reloaded PageOf(%s) = %q %v", rec.Key, p, ok)
		}
	}
	checkErr(t, "close opened after reload", r.MayClose("owner", "P1"), nil)
	checkErr(t, "close spawned after reload", r.MayClose("child", "S1"), nil)
	checkErr(t, "close bound after reload", r.MayClose("binder", "B1"), browser.ErrNotOwned)
	checkErr(t, "close by another key after reload", r.MayClose("k", "P1"), browser.ErrNotOwned)
	checkErr(t, "bind taken after reload", r.Bind(browser.BindRequest{Key: "k", ID: "B1"}, "", ""), browser.ErrInUse)
	checkErr(t, "adopt again after reload", r.Adopt(browser.AdoptRequest{Key: "child", ID: "S1", Parent: "owner"}, "P1", ""), nil)

	// Changes after the reload persist too; the file keeps its mode.
	checkErr(t, "closed", r.Closed("owner", "P1"), nil)
	checkErr(t, "release", r.Release("binder", "B1"), nil)
	if m := mode(t, path); m != 0o600 {
		t.Errorf("file mode after rewrite %v, want 0600", m)
	}
	r2, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.Records(); !slices.Equal(got, []browser.Record{recS1}) {
		t.Fatalf("after close and release, reloaded %+v", got)
	}
	// The temporary files of the atomic writes are gone.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "ledger.json" {
			t.Errorf("left in the state directory: %s", e.Name())
		}
	}

	// Without a path nothing is written anywhere.
	m, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	checkErr(t, "in-memory opened", m.Opened("owner", "P1"), nil)
}

func TestLoadSkipsIncompleteRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	data := `{"version":1,"records":[{"key":"","page":"X"},{"key":"k","page":""},{"key":"owner","page":"P1","kind":"opened"}]}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Records(); !slices.Equal(got, []browser.Record{recP1}) {
		t.Fatalf("records %+v", got)
	}
}

func TestCorruptFileIsAClearError(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"not json", "this is not json", "is not a tabwarden ledger"},
		{"truncated", `{"version":1,"records":[{"key":"owner"`, "is not a tabwarden ledger"},
		{"wrong shape", `{"version":1,"records":{"key":"owner"}}`, "is not a tabwarden ledger"},
		{"other version", `{"version":2,"records":[]}`, "version 2"},
		{"no version", `{"records":[]}`, "version 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.json")
			if err := os.WriteFile(path, []byte(c.data), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := New(path)
			if err == nil {
				t.Fatalf("New on %q: %+v, want an error", c.data, l.Records())
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not name the file %s and %q", msg, path, c.want)
			}
			// The file is left for the operator to inspect.
			if got, _ := os.ReadFile(path); string(got) != c.data {
				t.Errorf("file rewritten: %q", got)
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.json")
		if err := os.Mkdir(path, 0o700); err != nil { // a directory where the file should be
			t.Fatal(err)
		}
		if _, err := New(path); err == nil {
			t.Fatal("New on a directory succeeded")
		}
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

// TestWritableByOthersIsRefused: a ledger another user could write would let
// them choose which pages the agent closes.
func TestWritableByOthersIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "ledger.json")
	if _, err := New(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := New(path); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Fatalf("a world-writable state directory: %v, want a refusal that says chmod go-w", err)
	}
}

// TestIntentsAndContextsPersist: an open intent and the named contexts survive
// a reload; a record resolves its key's intent; an intent is refused for a key
// that already has a page.
func TestIntentsAndContextsPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "ledger.json")
	l := standard(t, path)
	in := Intent{Key: "k", URL: "https://example.test/", NewWindow: true, Context: "ns/s", Marker: "about:blank#tw-0123"}
	checkErr(t, "intend", l.Intend(in), nil)
	checkErr(t, "intend for a key with a page", l.Intend(Intent{Key: "owner", URL: "x"}), browser.ErrInUse)
	checkErr(t, "intend without a key", l.Intend(Intent{URL: "x"}), errAny)
	checkErr(t, "set context", l.SetContext("ns/s", "CTX1"), nil)
	checkErr(t, "set context without id", l.SetContext("ns/t", ""), errAny)

	r, err := New(path)
	checkErr(t, "reload", err, nil)
	got, ok := r.IntentOf("k")
	if !ok || got.URL != in.URL || !got.NewWindow || got.Context != in.Context || got.Marker != in.Marker {
		t.Fatalf("intent after reload: %+v %v", got, ok)
	}
	if _, ok := r.IntentOf("owner"); ok {
		t.Error("a refused intent was recorded")
	}
	if id, ok := r.Context("ns/s"); !ok || id != "CTX1" {
		t.Errorf("context after reload: %q %v", id, ok)
	}
	if !r.Recorded("P1") || r.Recorded("P9") {
		t.Error("Recorded")
	}
	checkErr(t, "opened", r.Opened("k", "P9"), nil)
	checkErr(t, "drop context", r.DropContext("ns/s"), nil)

	r2, err := New(path)
	checkErr(t, "reload", err, nil)
	if _, ok := r2.IntentOf("k"); ok {
		t.Error("the intent outlived its record")
	}
	if _, ok := r2.Context("ns/s"); ok {
		t.Error("a dropped context came back")
	}
	checkErr(t, "intend again", r2.Intend(Intent{Key: "j", URL: "u"}), nil)
	checkErr(t, "drop intent", r2.DropIntent("j"), nil)
	if _, ok := r2.IntentOf("j"); ok {
		t.Error("a dropped intent stayed")
	}
}

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
