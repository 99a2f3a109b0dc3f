package cdp

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

var errKilled = errors.New("killed by the test")

// pagesOnceLoaded is pagesAtURL once want (and nothing else) is there, or
// what is there after 10 s: an Open returns before its page commits at its url
// (leaveMarker), so the page gets there soon after.
func pagesOnceLoaded(t *testing.T, url string, want ...string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids := pagesAtURL(t, url)
		ok := len(ids) == len(want)
		for _, w := range want {
			ok = ok && contains(ids, w)
		}
		if ok || time.Now().After(deadline) {
			return ids
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pagesAtURL counts the pages Chromium itself lists at url.
func pagesAtURL(t *testing.T, url string) []string {
	t.Helper()
	var ids []string
	for id, p := range chromiumPages(t) {
		if normURL(p.URL) == normURL(url) {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestOpenIsCrashConsistent stops the driver at each step of an Open (before
// the intent is written, after it, after the browser created the page and
// before the record) and opens again under the same key with a fresh driver on
// the same ledger file: every case ends with exactly one page of the driver's,
// recorded under the key, and the user's tab at the same url, opened before
// by a second connection, never claimed.
func TestOpenIsCrashConsistent(t *testing.T) {
	for i, step := range []string{faultBeforeIntent, faultAfterIntent, faultAfterCreate} {
		t.Run(step, func(t *testing.T) {
			ctx := tctx(t)
			path := LedgerFile(filepath.Join(t.TempDir(), "state"), "crash")
			path1 := "/quiet?crash=" + string(rune('a'+i))
			url := site.Path(path1)
			hand, hr := newDriver(t, Options{})
			b0, r0 := newDriver(t, Options{})
			user := userTab(t, r0, hand, hr, "user", path1, fixture.TitleQuiet)
			b0.Shutdown()

			created := ""
			a, _ := newDriver(t, Options{LedgerPath: path, fault: func(s, page string) error {
				if s == step {
					created = page
					return errKilled
				}
				return nil
			}})
			req := browser.OpenRequest{Key: "win", URL: url, NewWindow: true}
			if _, err := a.Open(ctx, req); !errors.Is(err, errKilled) {
				t.Fatalf("open with a kill at %s: %v", step, err)
			}
			a.Shutdown()
			if step == faultAfterCreate {
				if created == "" {
					t.Fatal("no page created before the kill")
				}
				t.Cleanup(func() { userCloses(t, created) })
			}
			l, err := ledger.New(path)
			noErr(t, "read the ledger", err)
			_, intent := l.IntentOf("win")
			if want := step != faultBeforeIntent; intent != want {
				t.Fatalf("after a kill at %s the ledger has an intent: %v, want %v", step, intent, want)
			}

			b, _ := newDriver(t, Options{LedgerPath: path})
			p, err := b.Open(ctx, req)
			noErr(t, "open again after the restart", err)
			t.Cleanup(func() { userCloses(t, p.ID) })
			if created != "" && p.ID != created {
				t.Errorf("the restarted driver opened %s; the page created before the kill was %s", p.ID, created)
			}
			if p.ID == user.ID {
				t.Fatalf("the user's tab %s was claimed", user.ID)
			}
			ids := pagesOnceLoaded(t, url, user.ID, p.ID)
			if len(ids) != 2 || !contains(ids, user.ID) || !contains(ids, p.ID) {
				t.Errorf("pages at %s: %v, want the user's %s and the driver's %s", url, ids, user.ID, p.ID)
			}
			wantRecords(t, b, "after the restart", browser.Record{Key: "win", Page: p.ID, Kind: browser.RecordOpened})
			// Idempotent from here on.
			again, err := b.Open(ctx, req)
			if err != nil || again.ID != p.ID {
				t.Errorf("third open: %+v %v, want %s", again, err, p.ID)
			}
			l, err = ledger.New(path)
			noErr(t, "read the ledger", err)
			if _, ok := l.IntentOf("win"); ok {
				t.Error("the intent outlived its record")
			}
		})
	}
}

// TestInterruptedOpenClaimsOnlyItsNonce: after a kill between an Open's intent
// and its record, the user opens a tab at the same url (no opener) before the
// restart. The restarted driver never claims it: with no page created (a kill
// after the intent) it opens a new one; with its page created (a kill after
// the create) it takes that page by the nonce in its marker url and loads the
// url in it. The user's tab stays open and unrecorded.
func TestInterruptedOpenClaimsOnlyItsNonce(t *testing.T) {
	for i, step := range []string{faultAfterIntent, faultAfterCreate} {
		t.Run(step, func(t *testing.T) {
			ctx := tctx(t)
			path := LedgerFile(filepath.Join(t.TempDir(), "state"), "crash")
			path1 := "/quiet?crash=nonce-" + string(rune('a'+i))
			url := site.Path(path1)
			created := ""
			a, _ := newDriver(t, Options{LedgerPath: path, fault: func(s, page string) error {
				if s == step {
					created = page
					return errKilled
				}
				return nil
			}})
			req := browser.OpenRequest{Key: "win", URL: url, NewWindow: true}
			if _, err := a.Open(ctx, req); !errors.Is(err, errKilled) {
				t.Fatalf("open: %v", err)
			}
			a.Shutdown()
			if created != "" {
				t.Cleanup(func() { userCloses(t, created) })
			}
			hand, hr := newDriver(t, Options{})
			b, r := newDriver(t, Options{LedgerPath: path})
			user := userTab(t, r, hand, hr, "user", path1, fixture.TitleQuiet)

			p, err := b.Open(ctx, req)
			noErr(t, "open after the restart", err)
			t.Cleanup(func() { userCloses(t, p.ID) })
			if p.ID == user.ID {
				t.Fatalf("the interrupted open claimed the user's tab %s at its url", user.ID)
			}
			if created != "" && p.ID != created {
				t.Errorf("the restarted driver opened %s; the page created before the kill was %s", p.ID, created)
			}
			wantRecords(t, b, "after the restart", browser.Record{Key: "win", Page: p.ID, Kind: browser.RecordOpened})
			waitTitle(t, b, p.ID, fixture.TitleQuiet)
			mustBeOpen(t, "the user's tab", user.ID)
			if ids := pagesOnceLoaded(t, url, user.ID, p.ID); len(ids) != 2 || !contains(ids, user.ID) || !contains(ids, p.ID) {
				t.Errorf("pages at %s: %v, want the user's %s and the driver's %s", url, ids, user.ID, p.ID)
			}
			// Closing the window's page leaves the user's tab alone.
			noErr(t, "close", b.Close(ctx, browser.CloseRequest{Key: "win", ID: p.ID, OwnsWindow: true}))
			waitGone(t, "the driver's page", p.ID)
			mustBeOpen(t, "the user's tab after the close", user.ID)
		})
	}
}
