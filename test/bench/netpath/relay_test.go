package netpath

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// echoServer echoes every connection's bytes back.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func relayTo(t *testing.T, target string, rtt time.Duration) *Relay {
	t.Helper()
	r, err := Listen("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	r.SetRTT(rtt)
	t.Cleanup(r.Close)
	return r
}

// A round trip through the relay takes at least its RTT: half on the way out,
// half on the way back.
func TestRelayDelaysEachDirection(t *testing.T) {
	const rtt = 60 * time.Millisecond
	r := relayTo(t, echoServer(t), rtt)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	buf := make([]byte, 4)
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d < rtt {
			t.Fatalf("round trip %d took %v through a relay of RTT %v: the delay was not applied", i, d, rtt)
		}
	}
	// Each direction alone: a byte written now is readable at the echo
	// server no sooner than RTT/2 (checked through the whole echo above);
	// and setting the RTT to zero takes the delay away.
	r.SetRTT(0)
	if r.RTT() != 0 {
		t.Fatalf("RTT %v after SetRTT(0)", r.RTT())
	}
}

// Chunks written in a burst arrive in order, and each is delayed by the RTT,
// not by the sum of the delays of the chunks before it: the path adds latency
// without throttling.
func TestRelayKeepsOrderWithoutThrottling(t *testing.T) {
	const rtt = 100 * time.Millisecond
	const n = 50
	r := relayTo(t, echoServer(t), rtt)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	t0 := time.Now()
	go func() {
		for i := 0; i < n; i++ {
			_, _ = fmt.Fprintf(c, "line %03d\n", i)
			time.Sleep(2 * time.Millisecond) // separate chunks at the relay
		}
	}()
	sc := bufio.NewScanner(c)
	for i := 0; i < n; i++ {
		if !sc.Scan() {
			t.Fatalf("echo ended after %d lines: %v", i, sc.Err())
		}
		if want := fmt.Sprintf("line %03d", i); sc.Text() != want {
			t.Fatalf("line %d is %q, want %q: order broken", i, sc.Text(), want)
		}
		if i == 0 {
			if d := time.Since(t0); d < rtt {
				t.Fatalf("first echo after %v, before the RTT %v", d, rtt)
			}
		}
	}
	// Serialized delays would take n × RTT (5 s); pipelined ones about
	// RTT + n × 2 ms of writing.
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("%d chunks took %v through a relay of RTT %v: the delays add up (throttled)", n, d, rtt)
	}
}

// The relay counts a CDP client's commands by method, large ones (16- and
// 64-bit frame lengths) included, and not the server's replies.
func TestRelayCountsCDPCommands(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ws, err := websocket.Accept(w, req, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(1 << 20)
		defer func() { _ = ws.CloseNow() }()
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			var m struct {
				ID int64 `json:"id"`
			}
			_ = json.Unmarshal(data, &m)
			reply := fmt.Sprintf(`{"id":%d,"result":{"targetId":"T","targetInfos":[]}}`, m.ID)
			if err := ws.Write(context.Background(), websocket.MessageText, []byte(reply)); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	r := relayTo(t, strings.TrimPrefix(srv.URL, "http://"), 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, "ws://"+r.Addr()+"/devtools/browser/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := r.Counts()
	for i := 0; i < 2; i++ {
		if _, err := wire.Call(ctx, c, "", wire.GetTargets{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{10, 300, 70000} { // 7-, 16- and 64-bit lengths
		if _, err := wire.Call(ctx, c, "S1", wire.CreateTarget{URL: "http://x/" + strings.Repeat("a", n)}); err != nil {
			t.Fatal(err)
		}
	}
	got := r.Counts().Minus(before)
	if got.Messages != 5 || got.ByMethod["Target.getTargets"] != 2 || got.ByMethod["Target.createTarget"] != 3 {
		t.Fatalf("counted %d messages (%s), want Target.createTarget 3, Target.getTargets 2", got.Messages, got)
	}
	// Each Call waited for its reply: a turn each.
	if got.Turns != 5 {
		t.Fatalf("%d turns for 5 calls each awaited, want 5", got.Turns)
	}
	// Two commands sent back to back, then awaited: one turn.
	before = r.Counts()
	p1, err := wire.Send(c, "", wire.GetTargets{})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := wire.Send(c, "", wire.GetTargets{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.Counts().Minus(before); got.Messages != 2 || got.Turns != 1 {
		t.Fatalf("pipelined pair: %d messages in %d turns, want 2 in 1", got.Messages, got.Turns)
	}
	if s := got.String(); s != "Target.createTarget 3, Target.getTargets 2" {
		t.Fatalf("String() = %q", s)
	}
}
