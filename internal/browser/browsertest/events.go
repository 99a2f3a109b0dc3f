package browsertest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Per page, the driver reports Created before any Updated and nothing after
// Removed, within one epoch.
func testEventOrder(t *testing.T, e *env) {
	_, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", NewWindow: true})
	child := e.spawn(p.ID, true)
	noErr(t, "close", e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: p.ID, OwnsWindow: true}))
	e.w.UserCloseTab(t, child)
	e.w.UserCloseTab(t, user[0])
	ids := []string{user[0], p.ID, child}
	e.eventually("created and removed events of every page", func() error {
		for _, id := range ids {
			var created, removed bool
			for _, ev := range e.log() {
				if ev.Page.ID == id {
					created = created || ev.Type == browser.PageCreated
					removed = removed || ev.Type == browser.PageRemoved
				}
			}
			if !created || !removed {
				return fmt.Errorf("page %s: created %v removed %v", id, created, removed)
			}
		}
		return nil
	})
	for _, id := range ids {
		state := "" // "", created, removed
		for _, ev := range e.log() {
			if ev.Page.ID != id {
				continue
			}
			switch ev.Type {
			case browser.PageCreated:
				if state == "removed" {
					t.Fatalf("page %s: Created after Removed", id)
				}
				state = "created"
			case browser.PageUpdated:
				if state != "created" {
					t.Fatalf("page %s: Updated while %q", id, state)
				}
			case browser.PageRemoved:
				if state != "created" {
					t.Fatalf("page %s: Removed while %q", id, state)
				}
				state = "removed"
			}
		}
	}
}

// A disconnect reports Disconnected and no page gone; the reconnect reports
// Connected in a new epoch, and every page and record is still there.
func testReconnect(t *testing.T, e *env) {
	if capsOf(e.w).NoLinkCut {
		t.Log("the world cannot cut this driver's link (Caps.NoLinkCut)")
		return
	}
	_, user := e.userWindow(1)
	p := e.open(browser.OpenRequest{Key: "k", NewWindow: true})
	before := e.snapshot()
	n := len(e.log())
	e.w.Disconnect(t)
	e.eventually("the driver notices", func() error {
		if e.b.Connected() {
			return errors.New("still connected")
		}
		return nil
	})
	if _, err := e.b.Open(e.ctx(), browser.OpenRequest{Key: "while-down", URL: e.w.URL(), NewWindow: true}); !errors.Is(err, browser.ErrNotConnected) {
		t.Errorf("open while disconnected: %v, want ErrNotConnected", err)
	}
	if err := e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: p.ID, OwnsWindow: true}); !errors.Is(err, browser.ErrNotConnected) {
		t.Errorf("close while disconnected: %v, want ErrNotConnected", err)
	}
	e.w.Reconnect(t)
	e.eventually("the driver reconnects", func() error {
		for _, ev := range e.log()[n:] {
			if ev.Type == browser.Connected {
				return nil
			}
		}
		return errors.New("no Connected event")
	})
	after := e.snapshot()
	if after.Epoch <= before.Epoch {
		t.Errorf("epoch %d after reconnect, %d before", after.Epoch, before.Epoch)
	}
	for _, ev := range e.log()[n:] {
		if ev.Type == browser.PageRemoved && (ev.Page.ID == p.ID || ev.Page.ID == user[0]) {
			t.Fatalf("the reconnect declared page %s gone", ev.Page.ID)
		}
	}
	for _, id := range []string{p.ID, user[0]} {
		if _, ok := after.Page(id); !ok {
			t.Fatalf("page %s missing after reconnect", id)
		}
	}
	e.mustBeOpen("after reconnect", p.ID, user[0])
	e.wantRecords("after reconnect", browser.Record{Key: "k", Page: p.ID, Kind: browser.RecordOpened})
	// The ledger still works: the page is closed under its key.
	noErr(t, "close after reconnect", e.b.Close(e.ctx(), browser.CloseRequest{Key: "k", ID: p.ID, OwnsWindow: true}))
}
