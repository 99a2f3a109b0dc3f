package extension

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabwarden/tabwarden/internal/browser"
)

func TestCommandTimeoutAndLateResult(t *testing.T) {
	hold := make(chan struct{})
	_, d, fe, _ := connected(t, extWorld(func(c cmd) reply {
		<-hold
		return reply{result: closeResult{Closed: true}}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx, browser.CloseRequest{Key: "uid-a", ID: "10"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close past its deadline: %v", err)
	}
	close(hold) // the late result is dropped; the connection stays fine
	fe.send(map[string]string{"type": "ping"})
	if m := <-fe.other; m["type"] != "pong" {
		t.Fatalf("got %v", m)
	}
	if !d.Connected() {
		t.Fatal("late result broke the connection")
	}
}

func TestDisconnectFailsPendingAndReconnect(t *testing.T) {
	th, d, fe, token := connected(t, extWorld(func(c cmd) reply {
		return reply{noReply: true} // never answers close
	}))
	errc := make(chan error, 1)
	go func() { errc <- d.Close(context.Background(), browser.CloseRequest{Key: "uid-a", ID: "10"}) }()
	fe.nextCmd("close")
	_ = fe.c.CloseNow() // the service worker dies
	select {
	case err := <-errc:
		if !errors.Is(err, browser.ErrNotConnected) {
			t.Fatalf("pending close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending command not failed on disconnect")
	}
	if ev := nextEvent(t, d); ev.Type != browser.Disconnected || ev.Epoch != fe.epoch {
		t.Fatalf("event %+v", ev)
	}
	noEvent(t, d, 100*time.Millisecond) // in particular no PageRemoved
	if d.Connected() {
		t.Fatal("Connected after drop")
	}
	if _, err := d.Snapshot(context.Background()); !errors.Is(err, browser.ErrNotConnected) {
		t.Fatalf("snapshot while disconnected: %v", err)
	}
	if _, err := d.Open(context.Background(), browser.OpenRequest{Key: "k", URL: "https://x.example/", NewWindow: true}); !errors.Is(err, browser.ErrNotConnected) {
		t.Fatalf("open while disconnected: %v", err)
	}

	// Reconnect: new epoch, Connected, fresh observe; the close is not replayed.
	fe2 := connectExt(t, th, token, extWorld(nil))
	if fe2.epoch != fe.epoch+1 {
		t.Fatalf("epoch %d, want %d", fe2.epoch, fe.epoch+1)
	}
	if ev := nextEvent(t, d); ev.Type != browser.Connected || ev.Epoch != fe2.epoch {
		t.Fatalf("event %+v", ev)
	}
	snap, err := d.Snapshot(context.Background())
	if err != nil || snap.Epoch != fe2.epoch || len(snap.Pages) != 4 || len(snap.Records) != 2 {
		t.Fatalf("snapshot after reconnect %+v %v", snap, err)
	}
	fe2.nextCmd("observe")
	fe2.nextCmd("records")
	select {
	case c := <-fe2.cmds:
		t.Fatalf("command %s replayed or sent after reconnect", c.Op)
	case <-time.After(100 * time.Millisecond):
	}
	// Events carry the new epoch.
	fe2.event("tabRemoved", map[string]any{"tabId": 20, "windowId": 2})
	if ev := nextEvent(t, d); ev.Type != browser.PageRemoved || ev.Epoch != fe2.epoch {
		t.Fatalf("event %+v", ev)
	}
}

func TestHostCloseEndsEverything(t *testing.T) {
	th, d, fe, _ := connected(t, extWorld(func(c cmd) reply { return reply{noReply: true} }))
	errc := make(chan error, 1)
	go func() {
		errc <- d.Adopt(context.Background(), browser.AdoptRequest{Key: "uid-a", ID: "10", Parent: "uid-p"})
	}()
	fe.nextCmd("adopt")
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, browser.ErrNotConnected) {
		t.Fatalf("pending adopt: %v", err)
	}
	fe.closedWith(websocket.StatusGoingAway)
	if ev := <-d.Events(); ev.Type != browser.Disconnected {
		t.Fatalf("event %+v", ev)
	}
	if _, ok := <-d.Events(); ok {
		t.Fatal("events channel still open after Close")
	}
}

func TestIdleConnectionDropped(t *testing.T) {
	th := startHost(t, "", func(o *Options) { o.IdleTimeout = 200 * time.Millisecond })
	token := pair(t, th)
	fe := connectExt(t, th, token, extWorld(nil))
	select {
	case <-fe.done:
	case <-time.After(5 * time.Second):
		t.Fatal("idle connection kept")
	}
	waitFor(t, "disconnect", func() bool { return !th.Driver().Connected() })
}
