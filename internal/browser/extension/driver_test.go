package extension

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
)

func i64(n int64) *int64 { return &n }

// world is what the fake extension's observe reports.
func world() observeResult {
	return observeResult{
		Windows: []wireWindow{{ID: 1, Type: "normal", Focused: false}, {ID: 2, Type: "normal", Focused: true}, {ID: 3, Type: "popup"}},
		Tabs: []wireTab{
			{ID: 11, WindowID: 1, URL: "https://mail.example/", Title: "Mail", Index: 1},
			{ID: 10, WindowID: 1, URL: "https://contacts.example/", Title: "Contacts", Index: 0},
			{ID: 20, WindowID: 2, URL: "about:blank", Index: 0},
			{ID: 30, WindowID: 3, OpenerTabID: i64(10), URL: "https://mail.example/compose", Title: "Compose", Index: 0},
		},
	}
}

// worldRecords is what the fake extension's records reports: the contacts page
// opened for uid-a, its compose popup adopted under uid-c.
func worldRecords() map[string][]Record {
	return map[string][]Record{"records": {
		{Owner: "uid-a", TabID: 10, WindowID: 1, Kind: "opened"},
		{Owner: "uid-c", TabID: 30, WindowID: 3, CreatedWindow: true, Kind: "spawned", Parent: "uid-a"},
	}}
}

// extWorld answers observe with world(), records with worldRecords(), and
// delegates other ops to more.
func extWorld(more func(cmd) reply) func(cmd) reply {
	return func(c cmd) reply {
		if c.Op == "observe" {
			return reply{result: world()}
		}
		if c.Op == "records" {
			return reply{result: worldRecords()}
		}
		if more != nil {
			return more(c)
		}
		return reply{result: map[string]any{}}
	}
}

// connected pairs, connects the fake extension and consumes the Connected event and
// the initial sync.
func connected(t *testing.T, handler func(cmd) reply) (*testHost, *Driver, *fakeExt, string) {
	t.Helper()
	th := startHost(t, "", nil)
	token := pair(t, th)
	fe := connectExt(t, th, token, handler)
	d := th.Driver()
	if ev := nextEvent(t, d); ev.Type != browser.Connected || ev.Epoch != fe.epoch {
		t.Fatalf("first event %+v, want Connected", ev)
	}
	if _, err := d.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	return th, d, fe, token
}

func TestSnapshotAfterObserve(t *testing.T) {
	_, d, fe, _ := connected(t, extWorld(nil))
	fe.nextCmd("observe")
	fe.nextCmd("records") // the ledger's mirror is fetched with the first sync
	snap, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantWindows := []browser.Window{{ID: "1"}, {ID: "2"}, {ID: "3", Popup: true}}
	wantPages := []browser.Page{
		{ID: "10", WindowID: "1", URL: "https://contacts.example/", Title: "Contacts"},
		{ID: "11", WindowID: "1", URL: "https://mail.example/", Title: "Mail"},
		{ID: "20", WindowID: "2", URL: "about:blank"},
		{ID: "30", WindowID: "3", OpenerID: "10", URL: "https://mail.example/compose", Title: "Compose", Popup: true},
	}
	wantRecords := []browser.Record{
		{Key: "uid-a", Page: "10", Kind: browser.RecordOpened},
		{Key: "uid-c", Page: "30", Kind: browser.RecordSpawned, Parent: "uid-a"},
	}
	if snap.Epoch != fe.epoch || snap.Version != "tabwarden-extension/0.1.0" ||
		!reflect.DeepEqual(snap.Windows, wantWindows) || !reflect.DeepEqual(snap.Pages, wantPages) ||
		!reflect.DeepEqual(snap.Records, wantRecords) {
		t.Fatalf("snapshot %+v", snap)
	}
	// Cached: no second observe while connected.
	if _, err := d.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-fe.cmds:
		t.Fatalf("unexpected command %s", c.Op)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestCommandFramesFollowTheProtocol(t *testing.T) {
	_, _, fe, _ := connected(t, extWorld(nil))
	c := fe.nextCmd("observe")
	if c.ID == "" || string(c.Args) != "{}" {
		t.Fatalf("observe frame %+v args %s", c, c.Args)
	}
	if c2 := fe.nextCmd("records"); c2.ID == c.ID || string(c2.Args) != "{}" {
		t.Fatalf("records frame %+v args %s", c2, c2.Args)
	}
	fe.send(map[string]string{"type": "ping"})
	if m := <-fe.other; !reflect.DeepEqual(m, map[string]any{"type": "pong"}) {
		t.Fatalf("pong %v", m)
	}
}

func TestEventsBecomeBrowserEvents(t *testing.T) {
	_, d, fe, _ := connected(t, extWorld(nil))
	// A spawned compose popup: its window, then its tab with an opener.
	fe.event("windowCreated", map[string]any{"window": wireWindow{ID: 4, Type: "popup"}})
	fe.event("tabCreated", map[string]any{"tab": wireTab{ID: 40, WindowID: 4, OpenerTabID: i64(11), URL: "https://mail.example/c2"}})
	ev := nextEvent(t, d)
	want := browser.Page{ID: "40", WindowID: "4", OpenerID: "11", URL: "https://mail.example/c2", Popup: true}
	if ev.Type != browser.PageCreated || ev.Page != want || ev.Epoch != fe.epoch || ev.Time.IsZero() {
		t.Fatalf("event %+v", ev)
	}
	// A tab from the extension's own open carries "owner": still just Created.
	fe.event("tabCreated", map[string]any{"owner": "uid-1", "tab": wireTab{ID: 21, WindowID: 2, URL: "https://x.example/", Index: 1}})
	if ev := nextEvent(t, d); ev.Type != browser.PageCreated || ev.Page.ID != "21" || ev.Page.Popup || ev.Page.OpenerID != "" {
		t.Fatalf("event %+v", ev)
	}
	// Updated; the opener survives an update that omits it.
	fe.event("tabUpdated", map[string]any{"tab": wireTab{ID: 40, WindowID: 4, URL: "https://mail.example/c2", Title: "New message"}})
	want.Title = "New message"
	if ev := nextEvent(t, d); ev.Type != browser.PageUpdated || ev.Page != want {
		t.Fatalf("event %+v", ev)
	}
	// An update that changes nothing is not an event.
	fe.event("tabUpdated", map[string]any{"tab": wireTab{ID: 40, WindowID: 4, URL: "https://mail.example/c2", Title: "New message"}})
	// A tab leaving chrome://newtab is first seen as an update: Created.
	fe.event("tabUpdated", map[string]any{"tab": wireTab{ID: 22, WindowID: 2, URL: "https://typed.example/", Index: 2}})
	if ev := nextEvent(t, d); ev.Type != browser.PageCreated || ev.Page.ID != "22" {
		t.Fatalf("event %+v", ev)
	}
	// Removing a tab never reported (a chrome:// page) is not an event.
	fe.event("tabRemoved", map[string]any{"tabId": 999, "windowId": 2})
	fe.event("tabRemoved", map[string]any{"tabId": 21, "windowId": 2})
	if ev := nextEvent(t, d); ev.Type != browser.PageRemoved || ev.Page.ID != "21" || ev.Page.WindowID != "2" {
		t.Fatalf("event %+v", ev)
	}
	// A window closing takes its remaining tabs.
	fe.event("windowRemoved", map[string]any{"windowId": 4})
	if ev := nextEvent(t, d); ev.Type != browser.PageRemoved || ev.Page.ID != "40" || !ev.Page.Popup {
		t.Fatalf("event %+v", ev)
	}
	// A popup window reported after its tab corrects the tab.
	fe.event("tabCreated", map[string]any{"tab": wireTab{ID: 50, WindowID: 5, OpenerTabID: i64(10), URL: "https://oauth.example/"}})
	if ev := nextEvent(t, d); ev.Type != browser.PageCreated || ev.Page.Popup {
		t.Fatalf("event %+v", ev)
	}
	fe.event("windowCreated", map[string]any{"window": wireWindow{ID: 5, Type: "popup"}})
	if ev := nextEvent(t, d); ev.Type != browser.PageUpdated || ev.Page.ID != "50" || !ev.Page.Popup {
		t.Fatalf("event %+v", ev)
	}
	noEvent(t, d, 50*time.Millisecond)
	snap, _ := d.Snapshot(context.Background())
	ids := []string{}
	for _, p := range snap.Pages {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, ",") != "10,11,20,22,30,50" {
		t.Fatalf("pages after events: %v", ids)
	}
}

// Events that arrive before the first observe answer are applied on top of it.
func TestEventsBeforeSyncAreReplayed(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	release := make(chan struct{})
	fe := connectExt(t, th, token, func(c cmd) reply {
		if c.Op == "observe" {
			<-release
			return reply{result: world()}
		}
		return reply{result: map[string]any{}}
	})
	d := th.Driver()
	nextEvent(t, d) // Connected
	fe.nextCmd("observe")
	fe.event("tabCreated", map[string]any{"tab": wireTab{ID: 60, WindowID: 1, URL: "https://new.example/", Index: 2}})
	fe.event("tabRemoved", map[string]any{"tabId": 20, "windowId": 2})
	time.Sleep(50 * time.Millisecond)
	noEvent(t, d, 10*time.Millisecond)
	close(release)
	if ev := nextEvent(t, d); ev.Type != browser.PageCreated || ev.Page.ID != "60" {
		t.Fatalf("event %+v", ev)
	}
	if ev := nextEvent(t, d); ev.Type != browser.PageRemoved || ev.Page.ID != "20" {
		t.Fatalf("event %+v", ev)
	}
	snap, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Page("60"); !ok {
		t.Fatal("replayed tab missing")
	}
	if _, ok := snap.Page("20"); ok {
		t.Fatal("removed tab still there")
	}
}
