package extension

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// The attack: the agent restarts while a command is in flight. The extension (an
// older build) sends the old command's reply on its new connection. Command ids and
// epochs used to restart per process ("c1", epoch 1), so the stale reply was matched
// to the new process's first command. Now ids carry a random per-process prefix and
// the connection's epoch, and results are matched per connection: it matches nothing.
func TestOldSocketReplyNotMatchedAfterRestart(t *testing.T) {
	dir := stateDir(t)
	th1 := startHost(t, dir, nil)
	token := pair(t, th1)
	fe1 := connectExt(t, th1, token, extWorld(nil))
	old := fe1.nextCmd("observe")
	if !strings.HasPrefix(old.ID, th1.idPrefix+".") || len(th1.idPrefix) < 16 {
		t.Fatalf("command id %q has no random per-process prefix", old.ID)
	}
	_ = th1.Close() // best-effort cleanup
	fe1.closedWith(websocket.StatusGoingAway)

	th2 := startHost(t, dir, nil)
	stale := observeResult{Windows: []wireWindow{{ID: 99, Type: "normal"}}, Tabs: []wireTab{{ID: 999, WindowID: 99, URL: "https://stale.example/"}}}
	conn := make(chan *websocket.Conn, 1)
	var firstID string
	var mu sync.Mutex
	fe2 := connectExt(t, th2, token, func(c cmd) reply {
		if c.Op == "observe" {
			mu.Lock()
			firstID = c.ID
			mu.Unlock()
			// The old connection's reply, delivered on the new one, ahead of the answer.
			wc := <-conn
			conn <- wc
			b, _ := json.Marshal(map[string]any{"type": "result", "id": old.ID, "ok": true, "result": stale})
			_ = wc.Write(context.Background(), websocket.MessageText, b)
			time.Sleep(50 * time.Millisecond)
		}
		return extWorld(nil)(c)
	})
	conn <- fe2.c
	if th2.idPrefix == th1.idPrefix {
		t.Fatal("two host processes share a command id prefix")
	}
	snap, err := th2.Driver().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Page("999"); ok || len(snap.Pages) != len(world().Tabs) {
		t.Fatalf("the old connection's reply was taken for the new command: %+v", snap.Pages)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstID == old.ID {
		t.Fatalf("the restarted host reused command id %q", old.ID)
	}
	if !strings.Contains(th2.logs.String(), "result for an unknown or abandoned command") {
		t.Fatal("the stale result was not dropped as unknown")
	}
}

// Body-less POST /v1/pair requests (headers sent, body never) are cut after
// ReadTimeout; connections beyond MaxConns are refused at once; the user's real
// pairing works afterwards. (Before: no body deadline, no cap: all 300 were held.)
func TestSlowPairRequestsAreCut(t *testing.T) {
	const attackers = 300
	readTimeout := 2 * time.Second
	th := startHost(t, "", func(o *Options) { o.ReadTimeout = readTimeout; o.MaxConns = 64 })
	code, _ := th.NewPairingCode()
	head := "POST /v1/pair HTTP/1.1\r\nHost: " + th.Addr() + "\r\nOrigin: " + testOrigin +
		"\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n"
	type outcome struct {
		held time.Duration
		got  string
	}
	results := make([]outcome, attackers)
	var wg sync.WaitGroup
	for i := 0; i < attackers; i++ {
		c, err := net.Dial("tcp", th.Addr())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		dialed := time.Now()
		_, _ = c.Write([]byte(head)) // may fail: the host already refused it
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = c.Close() }() // best effort: the connection is going away either way
			_ = c.SetReadDeadline(time.Now().Add(readTimeout + 10*time.Second))
			b, _ := io.ReadAll(c)
			results[i] = outcome{held: time.Since(dialed), got: string(b)}
		}()
	}
	wg.Wait()
	cut, refused := 0, 0
	for i, r := range results {
		switch {
		case strings.HasPrefix(r.got, "HTTP/1.1 408") && strings.Contains(r.got, "body_timeout"):
			cut++
			if r.held < readTimeout/2 || r.held > readTimeout+5*time.Second {
				t.Errorf("request %d cut after %v, want about %v", i, r.held, readTimeout)
			}
		case r.got == "":
			refused++
			if r.held > readTimeout {
				t.Errorf("request %d refused only after %v", i, r.held)
			}
		default:
			t.Errorf("request %d: %q after %v", i, r.got, r.held)
		}
	}
	t.Logf("%d requests cut after ~%v, %d refused at once", cut, readTimeout, refused)
	if cut+refused != attackers || cut == 0 || cut > 64 || refused < attackers-64 {
		t.Fatalf("cut %d refused %d of %d (cap 64)", cut, refused, attackers)
	}
	waitFor(t, "connections released", func() bool { return th.limitLn.active() <= 1 })
	// The real user pairs.
	pairWith(t, th, testOrigin, code)
}

func TestUnpairOverTheControlSocket(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	fe := connectExt(t, th, token, extWorld(nil))
	d := th.Driver()
	nextEvent(t, d) // Connected
	ctx := context.Background()
	was, err := RequestUnpair(ctx, th.dir)
	if err != nil || !was {
		t.Fatalf("unpair: %v %v", was, err)
	}
	fe.closedWith(CloseUnauthorized)
	if ev := nextEvent(t, d); ev.Type != browser.Disconnected {
		t.Fatalf("event %+v", ev)
	}
	if th.Paired() || d.Connected() {
		t.Fatal("still paired or connected after unpair")
	}
	if _, err := os.Stat(filepath.Join(th.dir, stateFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state file after unpair: %v", err)
	}
	if _, resp, err := dialRaw(t, th, testOrigin, ""); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("connect after unpair: %v %v", err, resp)
	}
	// Idempotent; and a restart finds nothing to load.
	if was, err := RequestUnpair(ctx, th.dir); err != nil || was {
		t.Fatalf("second unpair: %v %v", was, err)
	}
	_ = th.Close() // best-effort cleanup
	th2 := startHost(t, th.dir, nil)
	if th2.Paired() {
		t.Fatal("paired again after a restart")
	}
	// Pairing again works.
	connectExt(t, th2, pair(t, th2), extWorld(nil))
	if _, err := RequestUnpair(ctx, stateDir(t)); err == nil || !strings.Contains(err.Error(), "no tabwarden agent") {
		t.Fatalf("unpair without an agent: %v", err)
	}
}

// The popup's Forget button: the extension says forget on its authenticated
// connection, and the host forgets the pairing too.
func TestForgetFromTheExtension(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	// forget before the handshake completes is no authority: the connection is refused.
	c, _, err := dialRaw(t, th, testOrigin, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = writeJSON(t, c, map[string]string{"type": "forget"})
	expectClose(t, c, CloseUnauthorized)
	if !th.Paired() {
		t.Fatal("an unauthenticated forget unpaired the host")
	}
	fe := connectExt(t, th, token, extWorld(nil))
	fe.send(map[string]string{"type": "forget"})
	fe.closedWith(CloseUnauthorized)
	waitFor(t, "unpaired", func() bool { return !th.Paired() })
	if _, err := os.Stat(filepath.Join(th.dir, stateFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state file after forget: %v", err)
	}
}

// The driver says whether an extension is paired (the agent's
// tabwarden_driver_paired): not before the first pairing, yes after it, not
// after an unpair.
func TestDriverReportsPairing(t *testing.T) {
	th := startHost(t, "", nil)
	d := th.Driver()
	if d.Paired() {
		t.Fatal("a host nobody paired with: driver says paired")
	}
	pair(t, th)
	if !d.Paired() {
		t.Fatal("after pairing: driver says unpaired")
	}
	if was, err := RequestUnpair(context.Background(), th.dir); err != nil || !was {
		t.Fatalf("unpair: %v %v", was, err)
	}
	if d.Paired() {
		t.Fatal("after unpair: driver says paired")
	}
}
