package extension

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestHelloRules(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	var challengedEpochs []float64
	// dial opens a raw connection to th (the shared host) with the extension's origin.
	dial := func(t *testing.T) *websocket.Conn {
		t.Helper()
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// refused sends first as the first frame and expects the host to close unauthorized.
	refused := func(t *testing.T, first any) {
		t.Helper()
		c := dial(t)
		_ = writeJSON(t, c, first)
		expectClose(t, c, CloseUnauthorized)
	}

	t.Run("no nonce", func(t *testing.T) {
		refused(t, map[string]string{"type": "hello", "version": "0.1.0", "kid": extKeyID(token)})
	})
	t.Run("short nonce", func(t *testing.T) {
		refused(t, map[string]string{"type": "hello", "nonce": "abc", "kid": extKeyID(token)})
	})
	t.Run("the old protocol: the token itself in hello", func(t *testing.T) {
		refused(t, map[string]string{"type": "hello", "token": token, "version": "0.1.0"})
	})
	t.Run("wrong key", func(t *testing.T) {
		c := dial(t)
		wrong := token[:len(token)-2] + "AA"
		_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID(wrong), "version": "0.1.0"})
		expectClose(t, c, CloseUnauthorized) // no challenge: nothing to learn
	})
	t.Run("right key id, wrong proof", func(t *testing.T) {
		// A peer that saw an earlier hello knows the key id; it still cannot prove the key.
		c := dial(t)
		ch, _, err := challenged(t, c, token)
		if err != nil {
			t.Fatal(err)
		}
		challengedEpochs = append(challengedEpochs, ch["epoch"].(float64))
		_ = writeJSON(t, c, map[string]string{"type": "auth", "proof": hmacB64(extKey("guess"), "tabwarden-ext-v1\n"+ch["nonce"].(string))})
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("replayed auth", func(t *testing.T) {
		// A full, valid exchange is recorded; its auth is replayed on a new connection.
		c, _, _ := dialRaw(t, th, testOrigin, "")
		ch, nonceE, err := challenged(t, c, token)
		if err != nil {
			t.Fatal(err)
		}
		challengedEpochs = append(challengedEpochs, ch["epoch"].(float64))
		recorded := hmacB64(extKey(token), "tabwarden-ext-v1\n"+ch["nonce"].(string)+"\n"+nonceE)
		_ = c.CloseNow() // best effort: the connection is going away either way
		c2, _, _ := dialRaw(t, th, testOrigin, "")
		ch2, _, err := challenged(t, c2, token)
		if err != nil {
			t.Fatal(err)
		}
		if ch2["nonce"] == ch["nonce"] {
			t.Fatal("the host repeated its nonce")
		}
		challengedEpochs = append(challengedEpochs, ch2["epoch"].(float64))
		_ = writeJSON(t, c2, map[string]string{"type": "auth", "proof": recorded})
		expectClose(t, c2, CloseUnauthorized)
	})
	t.Run("not a hello first", func(t *testing.T) {
		refused(t, map[string]any{"type": "command", "id": "1", "op": "observe", "kid": extKeyID(token)})
	})
	t.Run("binary hello", func(t *testing.T) {
		c := dial(t)
		b, _ := json.Marshal(map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID(token)})
		_ = c.Write(context.Background(), websocket.MessageBinary, b)
		expectClose(t, c, CloseUnauthorized)
	})
	t.Run("silent", func(t *testing.T) {
		th := startHost(t, "", func(o *Options) { o.HelloTimeout = 300 * time.Millisecond })
		pair(t, th)
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		expectClose(t, c, websocket.StatusPolicyViolation)
		if time.Since(start) > 3*time.Second {
			t.Fatal("hello timeout not enforced")
		}
	})
	t.Run("silent after the challenge", func(t *testing.T) {
		th := startHost(t, "", func(o *Options) { o.HelloTimeout = 300 * time.Millisecond })
		token := pair(t, th)
		c, _, err := dialRaw(t, th, testOrigin, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := challenged(t, c, token); err != nil {
			t.Fatal(err)
		}
		expectClose(t, c, websocket.StatusPolicyViolation)
	})
	t.Run("oversized hello", func(t *testing.T) {
		c := dial(t)
		big := strings.Repeat("x", DefaultMaxFrameBytes+1)
		_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": big})
		expectClose(t, c, websocket.StatusMessageTooBig)
	})
	if th.Driver().Connected() {
		t.Fatal("a refused connection counts as connected")
	}
	fe := connectExt(t, th, token, nil)
	for _, e := range challengedEpochs {
		if float64(fe.epoch) <= e {
			t.Fatalf("epoch %d after refused attempts that were challenged with %v", fe.epoch, challengedEpochs)
		}
	}
	if fe.epoch == 1 {
		t.Fatal("epochs start at 1: they must start at a random value per process")
	}
}

func TestSecondConnectionRefusedFirstStays(t *testing.T) {
	th := startHost(t, "", nil)
	token := pair(t, th)
	fe := connectExt(t, th, token, func(c cmd) reply {
		return reply{result: observeResult{Windows: []wireWindow{{ID: 1, Type: "normal"}}, Tabs: []wireTab{{ID: 7, WindowID: 1, URL: "https://a.example/"}}}}
	})
	d := th.Driver()
	if ev := nextEvent(t, d); ev.Type != "Connected" || ev.Epoch != fe.epoch {
		t.Fatalf("event %+v", ev)
	}
	c, _, err := dialRaw(t, th, testOrigin, "")
	if err != nil {
		t.Fatal(err)
	}
	ch, _, err := challenged(t, c, token)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.CloseNow() // best effort: the connection is going away either way
	c, _, _ = dialRaw(t, th, testOrigin, "")
	if _, err := authenticate(t, c, token); err != nil {
		t.Fatal(err)
	}
	expectClose(t, c, CloseAlreadyConnected)
	// A second connection with a wrong key learns nothing about the first: 4401.
	c, _, _ = dialRaw(t, th, testOrigin, "")
	_ = writeJSON(t, c, map[string]string{"type": "hello", "nonce": testNonce(), "kid": extKeyID("nope")})
	expectClose(t, c, CloseUnauthorized)
	// The first is untouched.
	if !d.Connected() {
		t.Fatal("first connection dropped")
	}
	if ch["epoch"].(float64) <= float64(fe.epoch) {
		t.Fatalf("a later handshake was challenged with epoch %v, not after %d", ch["epoch"], fe.epoch)
	}
	snap, err := d.Snapshot(context.Background())
	if err != nil || len(snap.Pages) != 1 || snap.Epoch != fe.epoch {
		t.Fatalf("snapshot through the first connection: %+v %v", snap, err)
	}
	fe.send(map[string]string{"type": "ping"})
	if m := <-fe.other; m["type"] != "pong" {
		t.Fatalf("got %v", m)
	}
	noEvent(t, d, 100*time.Millisecond)
}
