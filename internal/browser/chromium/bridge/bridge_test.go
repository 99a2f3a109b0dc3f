package bridge

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// fakeBrowser is the browser end of a pipe: what the bridge writes arrives on
// got; send writes as the browser would.
type fakeBrowser struct {
	t    *testing.T
	w    io.WriteCloser
	got  chan map[string]any
	done chan error
}

func newFake(t *testing.T) (*fakeBrowser, *Bridge) {
	t.Helper()
	toBridgeR, toBridgeW := io.Pipe()   // the browser's fd 4
	toBrowserR, toBrowserW := io.Pipe() // the browser's fd 3
	f := &fakeBrowser{t: t, w: toBridgeW, got: make(chan map[string]any, 100), done: make(chan error, 1)}
	go func() {
		r := bufio.NewReader(toBrowserR)
		for {
			msg, err := readMessage(r)
			if err != nil {
				close(f.got)
				return
			}
			var m map[string]any
			if err := json.Unmarshal(msg, &m); err != nil {
				t.Errorf("the bridge sent the browser a message that is not JSON: %q", msg)
				continue
			}
			f.got <- m
		}
	}()
	b := New(toBridgeR, toBrowserW, logr.Discard())
	go func() { f.done <- b.Run() }()
	t.Cleanup(func() { _, _ = toBridgeW.Close(), toBrowserR.Close() })
	return f, b
}

func (f *fakeBrowser) send(v any) {
	f.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.w.Write(append(b, 0)); err != nil {
		f.t.Fatal(err)
	}
}

// next is the next message the browser got, skipping the bridge's own
// housekeeping unless its method is wanted.
func (f *fakeBrowser) next(want string) map[string]any {
	f.t.Helper()
	for {
		select {
		case m, ok := <-f.got:
			if !ok {
				f.t.Fatal("the bridge closed the browser's pipe")
			}
			if want == "" || m["method"] == want {
				return m
			}
			if m["method"] != "Target.setDiscoverTargets" && m["method"] != "Target.detachFromTarget" {
				f.t.Fatalf("the browser got %v, want %s", m, want)
			}
		case <-time.After(5 * time.Second):
			f.t.Fatalf("the browser got nothing in 5 s (want %q)", want)
		}
	}
}

type testClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, path string) *testClient {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &testClient{t: t, conn: c, r: bufio.NewReader(c)}
}

func (c *testClient) send(msg string) {
	c.t.Helper()
	if _, err := c.conn.Write(append([]byte(msg), 0)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testClient) recv() (map[string]any, error) { return c.recvWithin(5 * time.Second) }

func (c *testClient) recvWithin(d time.Duration) (map[string]any, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	msg, err := readMessage(c.r)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(msg, &m)
}

func (c *testClient) mustRecv() map[string]any {
	c.t.Helper()
	m, err := c.recv()
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// TestIDsRewrittenPerClient: the browser sees the bridge's ids, each client its
// own; a reply meant for a client that went never reaches the next one, even
// when both used the same id; a second concurrent client is refused; and while
// no client is connected every paused request fails, as do the ones the gone
// client left unanswered.
func TestIDsRewrittenPerClient(t *testing.T) {
	f, b := newFake(t)
	sock := filepath.Join(t.TempDir(), "cdp", "cdp.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() { _ = b.Serve(l) }()

	a := dial(t, sock)
	a.send(`{"id":1,"method":"Browser.getVersion","sessionId":"S1","params":{"x":"y"}}`)
	got := f.next("Browser.getVersion")
	first := got["id"].(float64)
	if got["sessionId"] != "S1" || got["params"].(map[string]any)["x"] != "y" {
		t.Fatalf("the command reached the browser changed: %v", got)
	}
	f.send(map[string]any{"id": first, "result": map[string]any{"product": "fake"}})
	if r := a.mustRecv(); r["id"].(float64) != 1 || r["result"].(map[string]any)["product"] != "fake" {
		t.Fatalf("client a got %v, want its id 1 and the result", r)
	}
	// Events pass through while a client is connected; so does a paused request,
	// which the client then owes an answer.
	f.send(map[string]any{"method": "Target.targetCreated", "params": map[string]any{"targetInfo": map[string]any{"targetId": "T"}}})
	if r := a.mustRecv(); r["method"] != "Target.targetCreated" {
		t.Fatalf("client a got %v, want the event", r)
	}
	f.send(map[string]any{"method": "Fetch.requestPaused", "params": map[string]any{"requestId": "owed"}})
	f.send(map[string]any{"method": "Fetch.requestPaused", "params": map[string]any{"requestId": "answered"}})
	a.mustRecv()
	a.mustRecv()
	a.send(`{"id":2,"method":"Fetch.continueRequest","params":{"requestId":"answered"}}`)
	cont := f.next("Fetch.continueRequest")
	f.send(map[string]any{"id": cont["id"], "result": map[string]any{}})
	a.mustRecv()

	// A second client while a is connected: refused, with a reason.
	c := dial(t, sock)
	c.send(`{"id":7,"method":"Browser.getVersion"}`)
	r := c.mustRecv()
	if r["id"].(float64) != 7 || !strings.Contains(r["error"].(map[string]any)["message"].(string), "one client at a time") {
		t.Fatalf("the second client got %v, want an error saying one client at a time", r)
	}
	if _, err := c.recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("the second client's connection stays open: %v", err)
	}

	// a asks something slow and goes before the answer.
	a.send(`{"id":3,"method":"Runtime.evaluate"}`)
	slow := f.next("Runtime.evaluate")
	_ = a.conn.Close()
	// What a left unanswered fails; discovery goes off for the next client.
	owed := f.next("Fetch.failRequest")
	if owed["params"].(map[string]any)["requestId"] != "owed" || owed["params"].(map[string]any)["errorReason"] != "BlockedByClient" {
		t.Fatalf("the bridge sent %v, want the owed request failed", owed)
	}
	f.next("Target.setDiscoverTargets")

	// No client: a paused request fails at once, its session kept; other events vanish.
	f.send(map[string]any{"method": "Target.targetCreated", "params": map[string]any{}})
	f.send(map[string]any{"method": "Fetch.requestPaused", "sessionId": "S9", "params": map[string]any{"requestId": "R9"}})
	fail := f.next("Fetch.failRequest")
	if fail["sessionId"] != "S9" || fail["params"].(map[string]any)["requestId"] != "R9" || fail["params"].(map[string]any)["errorReason"] != "BlockedByClient" {
		t.Fatalf("the bridge sent %v, want R9 failed on S9", fail)
	}
	f.send(map[string]any{"id": fail["id"], "result": map[string]any{}}) // the bridge's own: dropped

	// A new client, reusing a's id 3: the stale reply to a's 3 is not its answer.
	// (a's session is undone before the slot frees: wait for that.)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b.mu.Lock()
		busy := b.busy
		b.mu.Unlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot of the gone client is still held after 5 s")
		}
	}
	d := dial(t, sock)
	d.send(`{"id":3,"method":"Target.getTargets"}`)
	m := f.next("Target.getTargets")
	if m["id"] == slow["id"] {
		t.Fatalf("the browser saw the same id %v for two clients", m["id"])
	}
	f.send(map[string]any{"id": slow["id"], "result": map[string]any{"stale": true}})
	f.send(map[string]any{"id": m["id"], "result": map[string]any{"fresh": true}})
	r = d.mustRecv()
	if r["id"].(float64) != 3 || r["result"].(map[string]any)["fresh"] != true {
		t.Fatalf("the new client got %v, want its own reply (fresh), not the gone client's", r)
	}
	if m, err := d.recvWithin(300 * time.Millisecond); err == nil {
		t.Fatalf("the new client got a second message: %v", m)
	}

	// The browser goes: the bridge's Run ends, and so does the client's connection.
	_ = f.w.Close()
	select {
	case err := <-f.done:
		if err == nil {
			t.Fatal("Run returned nil when the browser's pipe ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end with the browser's pipe")
	}
}

// TestListenRefusesOthersDirectories: the socket's directory is created 0700;
// one the group or others may write is refused; the socket is 0600.
func TestListenRefusesOthersDirectories(t *testing.T) {
	base := t.TempDir()
	sock := filepath.Join(base, "new", "cdp.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Dir(sock), 0o700)
	assertMode(t, sock, 0o600)
	if _, err := Listen(sock); err == nil || !strings.Contains(err.Error(), "served by another process") {
		t.Errorf("a second bridge on a served socket: %v", err)
	}
	_ = l.Close()
	// A stale socket of ours is replaced.
	if l, err = Listen(sock); err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	_ = l.Close()

	shared := filepath.Join(base, "shared")
	mkdirMode(t, shared, 0o777)
	if _, err := Listen(filepath.Join(shared, "cdp.sock")); err == nil || !strings.Contains(err.Error(), "may use") {
		t.Errorf("a world-writable socket directory: %v", err)
	}
	// A directory others may enter and list is refused too: only 0700.
	readable := filepath.Join(base, "readable")
	mkdirMode(t, readable, 0o755)
	if _, err := Listen(filepath.Join(readable, "cdp.sock")); err == nil || !strings.Contains(err.Error(), "may use") {
		t.Errorf("a socket directory others may enter: %v", err)
	}
	// Whatever the umask, the socket is never wider than 0600.
	old := syscall.Umask(0)
	l, err = Listen(filepath.Join(base, "umask0", "cdp.sock"))
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Join(base, "umask0", "cdp.sock"), 0o600)
	assertMode(t, filepath.Join(base, "umask0"), 0o700)
	_ = l.Close()
	// Its subdirectory is the place: what the manifest does with its emptyDir.
	l, err = Listen(filepath.Join(shared, "cdp", "cdp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
}
