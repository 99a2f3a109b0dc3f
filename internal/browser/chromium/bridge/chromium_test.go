package bridge_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/browser/chromium/bridge"
)

// pollPage is the page the test leaves open across the agent's absence: it
// fetches /data from its own site every 200 ms; once the site answers "probe",
// it stops and fetches the control port's url once (%s), putting in its title
// whether that reached anything, or how long it took to fail.
const pollPage = `<title>polling</title><script>
let n = 0, probing = false;
const tick = setInterval(async () => {
  const r = await fetch('/data?' + (n++)).then((r) => r.text(), () => 'site failed');
  if (r === 'site failed') { clearInterval(tick); document.title = 'site failed'; return; }
  if (r !== 'probe' || probing) return;
  probing = true;
  clearInterval(tick);
  const t0 = performance.now();
  try { await fetch(%q, {mode: 'no-cors'}); document.title = 'control reached'; }
  catch (e) { document.title = 'control failed after ' + Math.round(performance.now() - t0) + ' ms'; }
}, 200);
</script>`

// TestBridgeWithRealChromium: Chromium run by the bridge listens on no TCP
// port; the socket is 0600 in a 0700 directory; a cdp.Browser drives it over
// unix:; a second concurrent client is refused; when the client goes, the
// driver's browser-wide interception of control ports stays on and the bridge
// fails what it pauses, so a page's request to a control port fails at once
// (neither hanging nor going out) while its requests to its own site go on; a
// new client then drives the browser as usual.
func TestBridgeWithRealChromium(t *testing.T) {
	bin, err := chromium.Find()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// control stands for a control plane (the port is one of BlockPorts).
	var controlHits atomic.Int64
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { controlHits.Add(1) }))
	defer control.Close()
	controlPort, err := strconv.Atoi(control.URL[strings.LastIndex(control.URL, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	var dataHits atomic.Int64
	// probeAfter: /data answers "probe" to the hits past this count (0: never).
	var probeAfter atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/poll":
			fmt.Fprintf(w, pollPage, control.URL+"/json/close/X")
		case "/data":
			if n := dataHits.Add(1); probeAfter.Load() > 0 && n > probeAfter.Load() {
				fmt.Fprint(w, "probe")
				return
			}
			fmt.Fprint(w, "ok")
		default:
			fmt.Fprint(w, "<title>plain page</title>")
		}
	}))
	defer site.Close()

	dir := t.TempDir()
	udd := filepath.Join(dir, "profile")
	sock := filepath.Join(dir, "run", "cdp.sock")
	// The driver's flags, but for the port: the bridge adds the pipe.
	args := slices.DeleteFunc(chromium.DefaultArgs(false), func(a string) bool { return strings.HasPrefix(a, "--remote-debugging-port") })
	args = append(args, "--user-data-dir="+udd, "about:blank")
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- bridge.Run(runCtx, bridge.Options{Socket: sock, Binary: bin, Args: args, Logger: testr.New(t)})
	}()
	defer func() {
		stop()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("the bridge, stopped, returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop within 10 s")
		}
	}()

	endpoint := "unix:" + sock
	// A blocked port turns on the driver's browser-wide interception of it (what
	// the pool's agent does with --block-port for its own ports).
	opts := cdp.Options{Logger: testr.New(t).WithName("client"), BlockPorts: []int{controlPort}, DialTimeout: 30 * time.Second}
	var first *cdp.Browser
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if first, err = cdp.New(ctx, endpoint, opts); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection to the bridge at %s: %v", endpoint, err)
		}
	}
	drain(first)

	for path, want := range map[string]os.FileMode{filepath.Dir(sock): 0o700, sock: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
	}
	pgid := browserGroup(t, udd)
	if ports, err := chromium.ListeningPorts(pgid); err != nil || len(ports) != 0 {
		t.Fatalf("Chromium behind the bridge listens on TCP ports %v (%v)", ports, err)
	}

	// The page that polls, opened and polling through the first client.
	poll, err := first.Open(ctx, browser.OpenRequest{Key: "poll", URL: site.URL + "/poll", NewWindow: true})
	if err != nil {
		t.Fatalf("open over the bridge: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); dataHits.Load() < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the page's fetches do not get through while the client is connected (%d)", dataHits.Load())
		}
	}

	// A second client while the first is connected: refused, saying why.
	second, err := cdp.New(ctx, endpoint, cdp.Options{DialTimeout: 5 * time.Second})
	if err == nil {
		second.Shutdown()
		t.Fatal("a second concurrent client was admitted")
	}
	if !strings.Contains(err.Error(), "one client at a time") {
		t.Errorf("the second client's error does not say why: %v", err)
	}

	// The client goes. Nothing answers a paused request now: the bridge fails
	// it. The page's requests to its own site are not paused at all.
	first.Shutdown()
	gone := time.Now()
	hitsAtGone := dataHits.Load()
	// The probe comes with the second of the page's requests after the client
	// went (the first may have left while it was connected): so at least one
	// request of its own site went through with no client.
	probeAfter.Store(hitsAtGone + 1)

	var title string
	var next *cdp.Browser
	// Long enough for the page's next fetch and its probe; the new client
	// reads the outcome.
	time.Sleep(1500 * time.Millisecond)
	if dataHits.Load() < hitsAtGone+2 {
		t.Errorf("%d request(s) of the page reached its own site while no client was connected, want 2", dataHits.Load()-hitsAtGone)
	}
	if next, err = cdp.New(ctx, endpoint, opts); err != nil {
		t.Fatalf("a new client after the first left: %v", err)
	}
	defer next.Shutdown()
	drain(next)
	title = titleOf(ctx, t, next, poll.ID, func(s string) bool { return s != "polling" })
	ms, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(title, "control failed after "), " ms"))
	switch {
	case err != nil:
		t.Errorf("the page's title is %q: want its probe of the control port to have failed", title)
	case ms > 1000:
		t.Errorf("the page's fetch of the control port failed only after %d ms: it hung while no client was connected", ms)
	}
	if n := controlHits.Load(); n != 0 {
		t.Errorf("%d of the page's requests reached the control port", n)
	}
	t.Logf("with no client, the page's fetch of the control port failed in %d ms (title %q), %v after the client went", ms, title, time.Since(gone).Round(time.Millisecond))

	// The new client drives the browser as usual.
	page, err := next.Open(ctx, browser.OpenRequest{Key: "plain", URL: site.URL + "/plain", NewWindow: true})
	if err != nil {
		t.Fatalf("open by the new client: %v", err)
	}
	titleOf(ctx, t, next, page.ID, func(s string) bool { return s == "plain page" })
	if err := next.Close(ctx, browser.CloseRequest{Key: "plain", ID: page.ID}); err != nil {
		t.Fatalf("close by the new client: %v", err)
	}
	if ports, err := chromium.ListeningPorts(pgid); err != nil || len(ports) != 0 {
		t.Fatalf("Chromium behind the bridge listens on TCP ports %v (%v)", ports, err)
	}
}

func drain(b *cdp.Browser) {
	go func() {
		for range b.Events() {
		}
	}()
}

// titleOf waits until the title of page id satisfies ok, and returns it.
func titleOf(ctx context.Context, t *testing.T, b *cdp.Browser, id string, ok func(string) bool) string {
	t.Helper()
	title := ""
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s, err := b.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, pg := range s.Pages {
			if pg.ID == id {
				title, found = pg.Title, true
			}
		}
		if found && ok(title) {
			return title
		}
		if time.Now().After(deadline) {
			t.Fatalf("page %s: title %q (found %v) after 20 s", id, title, found)
		}
	}
}

// browserGroup is the process group of the Chromium whose command line names udd.
func browserGroup(t *testing.T, udd string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "--user-data-dir="+udd) || strings.Contains(string(cmdline), "--type=") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if pgid, err := strconv.Atoi(f[2]); err == nil && pgid == pid {
			return pgid
		}
	}
	t.Fatalf("no Chromium browser process for %s", udd)
	return 0
}
