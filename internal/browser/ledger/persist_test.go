package ledger

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

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
