package ledger

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestInstance: records of another browser instance are void. They become lost
// records (which the agent reads as pages gone with a browser restart), persist
// as such, and give the closed and spawned pages of the old browser no
// authority in the new one; the same instance, or none named, keeps them.
func TestInstance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "ledger.json")
	l := standard(t, path)
	if err := l.Intend(Intent{Key: "pending", URL: "https://example.com", Marker: "about:blank#m"}); err != nil {
		t.Fatal(err)
	}
	if err := l.SetContext("ns/s", "CTX1"); err != nil {
		t.Fatal(err)
	}
	// No instance named (a Chrome at an endpoint): the records stand.
	if n, err := l.SetInstance(""); err != nil || n != 0 || len(l.Records()) != 3 {
		t.Fatalf("SetInstance(\"\"): %d, %v; records %v", n, err, l.Records())
	}
	// The first launch named: the records of before are of another browser.
	if n, err := l.SetInstance("A"); err != nil || n != 3 {
		t.Fatalf("SetInstance(A): %d, %v, want 3 voided", n, err)
	}
	if rs := l.Records(); len(rs) != 0 {
		t.Fatalf("records after an instance change: %v, want none", rs)
	}
	for key, want := range map[string]browser.Record{"owner": recP1, "child": recS1, "binder": recB1} {
		if r, ok := l.LostRecord(key); !ok || r != want {
			t.Errorf("LostRecord(%s) = %v, %v; want %v", key, r, ok, want)
		}
	}
	if _, ok := l.IntentOf("pending"); ok {
		t.Error("an intent of the other browser survived the instance change")
	}
	if len(l.Contexts()) != 0 {
		t.Errorf("contexts of the other browser survived: %v", l.Contexts())
	}
	// The old pages' ids mean nothing now: no authority from them.
	checkErr(t, "MayClose P1", l.MayClose("owner", "P1"), browser.ErrNotOwned)
	checkErr(t, "adopt a spawn of old P1", l.Adopt(browser.AdoptRequest{Key: "k", ID: "X", Parent: "owner"}, "P1", ""), browser.ErrNotObserved)

	// Persisted: a driver restarted with the same instance reads the same.
	if err := l.ForgetLost("binder"); err != nil {
		t.Fatal(err)
	}
	l2, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Instance() != "A" {
		t.Fatalf("instance after reload: %q, want A", l2.Instance())
	}
	if n, err := l2.SetInstance("A"); err != nil || n != 0 {
		t.Fatalf("SetInstance(A) again: %d, %v; want nothing voided", n, err)
	}
	if _, ok := l2.LostRecord("owner"); !ok {
		t.Fatal("lost record of owner not persisted")
	}
	if _, ok := l2.LostRecord("binder"); ok {
		t.Fatal("a forgotten lost record came back")
	}
	// A new page of the key supersedes its lost one.
	if err := l2.Opened("owner", "P9"); err != nil {
		t.Fatal(err)
	}
	if _, ok := l2.LostRecord("owner"); ok {
		t.Fatal("owner's lost record outlived its new page")
	}
	// Another restart: the new page is lost, and the older lost one stays.
	if n, err := l2.SetInstance("B"); err != nil || n != 1 {
		t.Fatalf("SetInstance(B): %d, %v, want 1", n, err)
	}
	if r, ok := l2.LostRecord("owner"); !ok || r.Page != "P9" {
		t.Fatalf("LostRecord(owner) after the second restart: %v, %v; want P9", r, ok)
	}
	if _, ok := l2.LostRecord("child"); !ok {
		t.Fatal("child's lost record went with the second restart")
	}
	if err := l2.Opened("owner", "P1"); errors.Is(err, browser.ErrInUse) {
		t.Fatalf("a page id of an old browser blocks the new one: %v", err)
	}
}
