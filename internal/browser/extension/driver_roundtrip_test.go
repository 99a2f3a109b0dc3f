package extension

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
)

func TestOpenRoundTrip(t *testing.T) {
	var mu sync.Mutex
	var args []openArgs
	next := int64(100)
	_, d, fe, _ := connected(t, extWorld(func(c cmd) reply {
		if c.Op != "open" {
			return reply{err: &wireError{Reason: "unknown_op", Message: c.Op}}
		}
		var a openArgs
		_ = json.Unmarshal(c.Args, &a)
		mu.Lock()
		defer mu.Unlock()
		args = append(args, a)
		if a.WindowID != nil && *a.WindowID == 77 {
			return reply{err: &wireError{Reason: "not_found", Message: "window 77 not found"}}
		}
		next++
		wid := int64(9)
		if a.WindowID != nil {
			wid = *a.WindowID
		}
		return reply{result: openResult{TabID: next, WindowID: wid, CreatedWindow: a.NewWindow}}
	}))
	ctx := context.Background()

	p, err := d.Open(ctx, browser.OpenRequest{Key: "uid-a", URL: "https://a.example/", WindowID: "1"})
	if err != nil || p != (browser.Page{ID: "101", WindowID: "1", URL: "https://a.example/"}) {
		t.Fatalf("open in window 1: %+v %v", p, err)
	}
	if ev := nextEvent(t, d); ev.Type != browser.PageCreated || ev.Page.ID != "101" {
		t.Fatalf("event %+v", ev)
	}
	// The extension's own tabCreated for it afterwards is not a second Created.
	fe.event("tabCreated", map[string]any{"owner": "uid-a", "tab": wireTab{ID: 101, WindowID: 1, URL: "https://a.example/", Index: 2}})
	if _, err := d.Open(ctx, browser.OpenRequest{Key: "uid-b", URL: "https://b.example/", NewWindow: true}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, d); ev.Type != browser.PageCreated || ev.Page.ID != "102" {
		t.Fatalf("event %+v", ev)
	}
	// No window named: the focused normal window (2).
	if p, err := d.Open(ctx, browser.OpenRequest{Key: "uid-c", URL: "https://c.example/"}); err != nil || p.WindowID != "2" {
		t.Fatalf("open without window: %+v %v", p, err)
	}
	if _, err := d.Open(ctx, browser.OpenRequest{Key: "uid-d", URL: "https://d.example/", WindowID: "77"}); !errors.Is(err, browser.ErrNotFound) {
		t.Fatalf("open in a missing window: %v", err)
	}
	if _, err := d.Open(ctx, browser.OpenRequest{Key: "uid-e", URL: "https://e.example/", WindowID: "w-1"}); !errors.Is(err, browser.ErrNotFound) {
		t.Fatalf("open in a malformed window id: %v", err)
	}
	if _, err := d.Open(ctx, browser.OpenRequest{URL: "https://e.example/"}); err == nil {
		t.Fatal("open without a key")
	}
	mu.Lock()
	defer mu.Unlock()
	raw, _ := json.Marshal(args)
	want := `[{"owner":"uid-a","url":"https://a.example/","windowId":1},` +
		`{"owner":"uid-b","url":"https://b.example/","newWindow":true},` +
		`{"owner":"uid-c","url":"https://c.example/","windowId":2},` +
		`{"owner":"uid-d","url":"https://d.example/","windowId":77}]`
	if string(raw) != want {
		t.Fatalf("open args\n got %s\nwant %s", raw, want)
	}
}

func TestCloseAndAdoptRoundTrip(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	_, d, _, _ := connected(t, extWorld(func(c cmd) reply {
		mu.Lock()
		sent = append(sent, c.Op+" "+string(c.Args))
		mu.Unlock()
		var a adoptArgs
		_ = json.Unmarshal(c.Args, &a)
		switch {
		case c.Op == "close" && a.Owner != "uid-a":
			return reply{err: &wireError{Reason: "not_owned", Message: "tab is not recorded under that owner"}}
		case c.Op == "close" && a.TabID == 11:
			return reply{result: closeResult{Closed: true}}
		case c.Op == "close":
			return reply{result: closeResult{Closed: false}}
		case c.Op == "adopt" && a.TabID == 404:
			return reply{err: &wireError{Reason: "not_found", Message: "tab 404 not found"}}
		case c.Op == "adopt" && a.TabID == 20:
			return reply{err: &wireError{Reason: "not_observed", Message: "tab 20 has no opener this extension saw"}}
		case c.Op == "adopt" && a.TabID == 10:
			return reply{err: &wireError{Reason: "in_use", Message: "tab 10 is recorded under another owner"}}
		case c.Op == "adopt":
			return reply{result: tabResult{TabID: a.TabID, WindowID: 3, CreatedWindow: true}}
		}
		return reply{err: &wireError{Reason: "unknown_op"}}
	}))
	ctx := context.Background()
	if err := d.Adopt(ctx, browser.AdoptRequest{Key: "uid-a", ID: "30", Parent: "uid-p"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Adopt(ctx, browser.AdoptRequest{Key: "uid-a", ID: "404", Parent: "uid-p"}); !errors.Is(err, browser.ErrNotFound) {
		t.Fatalf("adopt gone tab: %v", err)
	}
	if err := d.Adopt(ctx, browser.AdoptRequest{Key: "uid-b", ID: "20", Parent: "uid-p"}); !errors.Is(err, browser.ErrNotObserved) {
		t.Fatalf("adopt a tab nobody saw spawned: %v", err)
	}
	if err := d.Adopt(ctx, browser.AdoptRequest{Key: "uid-b", ID: "10", Parent: "uid-p"}); !errors.Is(err, browser.ErrInUse) {
		t.Fatalf("adopt another owner's tab: %v", err)
	}
	if err := d.Adopt(ctx, browser.AdoptRequest{Key: "uid-b", ID: "20"}); err == nil {
		t.Fatal("adopt without a parent was sent")
	}
	if err := d.Close(ctx, browser.CloseRequest{Key: "uid-b", ID: "10"}); !errors.Is(err, browser.ErrNotOwned) {
		t.Fatalf("close someone else's tab: %v", err)
	}
	var ce *CommandError
	if err := d.Close(ctx, browser.CloseRequest{Key: "uid-b", ID: "10"}); !errors.As(err, &ce) || ce.Reason != "not_owned" {
		t.Fatalf("error type: %v", err)
	}
	if err := d.Close(ctx, browser.CloseRequest{Key: "uid-a", ID: "11"}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, d); ev.Type != browser.PageRemoved || ev.Page.ID != "11" || ev.Page.WindowID != "1" {
		t.Fatalf("event %+v", ev)
	}
	// Already gone: not an error.
	if err := d.Close(ctx, browser.CloseRequest{Key: "uid-a", ID: "12345"}); err != nil {
		t.Fatal(err)
	}
	// No key owns anything: a live tab is refused, a gone one is not an error.
	if err := d.Close(ctx, browser.CloseRequest{ID: "10"}); !errors.Is(err, browser.ErrNotOwned) {
		t.Fatalf("close of a live tab without a key: %v, want ErrNotOwned", err)
	}
	if err := d.Close(ctx, browser.CloseRequest{ID: "11"}); err != nil {
		t.Fatalf("close of a gone tab without a key: %v", err)
	}
	snap, _ := d.Snapshot(ctx)
	if _, ok := snap.Page("11"); ok {
		t.Fatal("closed tab still in the snapshot")
	}
	if r, ok := snap.RecordOf("30"); !ok || r != (browser.Record{Key: "uid-a", Page: "30", Kind: browser.RecordSpawned, Parent: "uid-p"}) {
		t.Fatalf("the adopted tab's record in the snapshot: %+v %v", r, ok)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`adopt {"owner":"uid-a","tabId":30,"parent":"uid-p"}`, `adopt {"owner":"uid-a","tabId":404,"parent":"uid-p"}`,
		`adopt {"owner":"uid-b","tabId":20,"parent":"uid-p"}`, `adopt {"owner":"uid-b","tabId":10,"parent":"uid-p"}`,
		`close {"owner":"uid-b","tabId":10}`, `close {"owner":"uid-b","tabId":10}`,
		`close {"owner":"uid-a","tabId":11}`, `close {"owner":"uid-a","tabId":12345}`,
	}
	if !reflect.DeepEqual(sent, want) {
		t.Fatalf("commands\n got %q\nwant %q", sent, want)
	}
}

// The host's mirror of the extension's ledger follows every command that changes it,
// so Snapshot reports records without asking the extension again.
func TestSnapshotRecordsFollowCommands(t *testing.T) {
	_, d, fe, _ := connected(t, extWorld(func(c cmd) reply {
		var a adoptArgs
		_ = json.Unmarshal(c.Args, &a)
		switch c.Op {
		case "open":
			return reply{result: openResult{TabID: 50, WindowID: 2}}
		case "adopt":
			return reply{result: tabResult{TabID: a.TabID, WindowID: 1}}
		case "bind":
			if a.TabID == 10 {
				return reply{err: &wireError{Reason: "in_use", Message: "tab 10 is recorded under uid-a"}}
			}
			return reply{result: tabResult{TabID: a.TabID, WindowID: 2}}
		case "release":
			return reply{result: map[string]bool{"released": true}}
		case "close":
			return reply{result: closeResult{Closed: true}}
		case "cleanup":
			return reply{result: map[string][]int64{"closed": {}}}
		}
		return reply{err: &wireError{Reason: "unknown_op"}}
	}))
	ctx := context.Background()
	fe.nextCmd("observe")
	fe.nextCmd("records")
	recs := func() map[string]browser.Record {
		t.Helper()
		snap, err := d.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]browser.Record{}
		for _, r := range snap.Records {
			out[r.Page] = r
		}
		return out
	}
	if _, err := d.Open(ctx, browser.OpenRequest{Key: "uid-o", URL: "https://o.example/", WindowID: "2"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Adopt(ctx, browser.AdoptRequest{Key: "uid-s", ID: "11", Parent: "uid-a"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Bind(ctx, browser.BindRequest{Key: "uid-b", ID: "20"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Bind(ctx, browser.BindRequest{Key: "uid-x", ID: "10"}); !errors.Is(err, browser.ErrInUse) {
		t.Fatalf("bind another owner's tab: %v", err)
	}
	want := map[string]browser.Record{
		"10": {Key: "uid-a", Page: "10", Kind: browser.RecordOpened},
		"11": {Key: "uid-s", Page: "11", Kind: browser.RecordSpawned, Parent: "uid-a"},
		"20": {Key: "uid-b", Page: "20", Kind: browser.RecordBound},
		"30": {Key: "uid-c", Page: "30", Kind: browser.RecordSpawned, Parent: "uid-a"},
		"50": {Key: "uid-o", Page: "50", Kind: browser.RecordOpened},
	}
	if got := recs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
	// Release of another key's record leaves it; of its own, drops it.
	if err := d.Release(ctx, browser.ReleaseRequest{Key: "uid-x", ID: "20"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := recs()["20"]; !ok {
		t.Fatal("another key's release dropped the record from the mirror")
	}
	if err := d.Release(ctx, browser.ReleaseRequest{Key: "uid-b", ID: "20"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(ctx, browser.CloseRequest{Key: "uid-o", ID: "50"}); err != nil {
		t.Fatal(err)
	}
	// Cleanup drops the owner's owned records, not a binding (none here) nor others.
	if _, err := d.Cleanup(ctx, "uid-s"); err != nil {
		t.Fatal(err)
	}
	delete(want, "20")
	delete(want, "50")
	delete(want, "11")
	if got := recs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("records after release, close, cleanup\n got %v\nwant %v", got, want)
	}
	for _, op := range []string{"open", "adopt", "bind", "bind", "release", "release", "close", "cleanup"} {
		fe.nextCmd(op)
	}
	select {
	case c := <-fe.cmds:
		t.Fatalf("Snapshot sent %s: the mirror should answer", c.Op)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestPublishSessionsCleanupRecords(t *testing.T) {
	got := make(chan cmd, 10)
	var synced atomic.Bool
	_, d, _, _ := connected(t, func(c cmd) reply {
		if c.Op == "observe" {
			return reply{result: world()}
		}
		if c.Op == "records" && !synced.Swap(true) {
			return reply{result: map[string][]Record{"records": {}}} // the first sync's
		}
		got <- c
		switch c.Op {
		case "cleanup":
			return reply{result: map[string][]int64{"closed": {11, 20}}}
		case "records":
			return reply{result: map[string][]Record{"records": {{Owner: "uid-a", TabID: 11, WindowID: 1, Kind: "opened"}}}}
		}
		return reply{result: map[string]any{}}
	})
	ctx := context.Background()
	err := d.PublishSessions(ctx, []SessionInfo{{Namespace: "ns", Name: "s1", Thread: "t", Purpose: "p", Phase: "Active",
		Windows: []SessionWindow{{Name: "w1", TabID: "11", Source: "Open", Disposition: "Temporary", Phase: "Open"},
			{Name: "w2", TabID: "12", Source: "Spawned", Phase: "Open", Unacknowledged: true}}}, {Name: "s2"}})
	if err != nil {
		t.Fatal(err)
	}
	c := <-got
	want := `{"sessions":[{"namespace":"ns","name":"s1","thread":"t","purpose":"p","phase":"Active","windows":[` +
		`{"name":"w1","tabId":"11","source":"Open","disposition":"Temporary","phase":"Open","unacknowledged":false},` +
		`{"name":"w2","tabId":"12","source":"Spawned","disposition":"","phase":"Open","unacknowledged":true}]},` +
		`{"namespace":"","name":"s2","thread":"","purpose":"","phase":"","windows":[]}]}`
	if c.Op != "sessions" || string(c.Args) != want {
		t.Fatalf("sessions command %s %s", c.Op, c.Args)
	}
	if err := d.PublishSessions(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if c := <-got; string(c.Args) != `{"sessions":[]}` {
		t.Fatalf("empty sessions %s", c.Args)
	}
	closed, err := d.Cleanup(ctx, "uid-a")
	if err != nil || !reflect.DeepEqual(closed, []string{"11", "20"}) {
		t.Fatalf("cleanup %v %v", closed, err)
	}
	if c := <-got; c.Op != "cleanup" || string(c.Args) != `{"owner":"uid-a"}` {
		t.Fatalf("cleanup command %s", c.Args)
	}
	recs, err := d.Records(ctx)
	if err != nil || len(recs) != 1 || recs[0].Owner != "uid-a" || recs[0].Kind != "opened" {
		t.Fatalf("records %v %v", recs, err)
	}
}
