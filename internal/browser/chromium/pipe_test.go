package chromium_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
)

// listeningPorts are the TCP ports p's process group listens on.
func listeningPorts(t *testing.T, p *chromium.Process) []int {
	t.Helper()
	ports, err := chromium.ListeningPorts(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// TestPipeLaunchListensOnNoPort: a Chromium tabwarden launches is driven over
// --remote-debugging-pipe: none of its processes listens on any TCP port and
// it writes no DevToolsActivePort, while the driver opens, reads and closes
// pages through the pipe. The same check finds the DevTools port of a Chromium
// launched the old way, so it cannot pass for want of looking.
func TestPipeLaunchListensOnNoPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "<title>over the pipe</title>")
	}))
	defer site.Close()

	ported, err := chromium.Launch(ctx, chromium.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := listeningPorts(t, ported); len(got) == 0 {
		t.Fatalf("a Chromium launched with a DevTools port (%s) shows no listening port: the check is blind", ported.HTTPURL)
	}
	_ = ported.Close() // only the witness of the check

	p, err := chromium.Launch(ctx, chromium.Options{Pipe: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }() // best-effort cleanup
	if p.WebSocketURL != "" || p.HTTPURL != "" {
		t.Fatalf("a pipe launch names a DevTools endpoint: %q %q", p.WebSocketURL, p.HTTPURL)
	}
	b, err := cdp.New(ctx, "pipe", cdp.Options{Dial: p.Dial})
	if err != nil {
		t.Fatalf("driving Chromium over the pipe: %v", err)
	}
	defer b.Shutdown()
	go func() {
		for range b.Events() {
		}
	}()
	page, err := b.Open(ctx, browser.OpenRequest{Key: "k", URL: site.URL + "/", NewWindow: true})
	if err != nil {
		t.Fatalf("open over the pipe: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := b.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		title := ""
		for _, pg := range s.Pages {
			if pg.ID == page.ID {
				title = pg.Title
			}
		}
		if title == "over the pipe" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's title is %q, want %q", title, "over the pipe")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := listeningPorts(t, p); len(got) != 0 {
		t.Fatalf("Chromium launched over a pipe listens on TCP ports %v", got)
	}
	if _, err := os.Stat(filepath.Join(p.UserDataDir, "DevToolsActivePort")); !os.IsNotExist(err) {
		t.Fatalf("DevToolsActivePort exists (err %v): Chromium opened a DevTools port", err)
	}
	if err := b.Close(ctx, browser.CloseRequest{Key: "k", ID: page.ID}); err != nil {
		t.Fatalf("close over the pipe: %v", err)
	}
	if _, err := p.Dial(ctx, nil); err == nil {
		t.Fatal("a second Dial of the pipe succeeded")
	}
}

// TestExecDisablesBoundaryFeatures: the pool's Chromium (`tabwarden
// cdp-bridge`, chromium.Exec, flags from the manifest) runs with
// BoundaryFeatures off whatever its manifest says, merged into the manifest's
// own --disable-features (Chromium honours only the last one).
func TestExecDisablesBoundaryFeatures(t *testing.T) {
	bin, err := chromium.Find()
	if err != nil {
		t.Fatal(err)
	}
	p, err := chromium.Exec(bin, []string{"--headless", "--no-sandbox", "--disable-features=PaintHolding", "--user-data-dir=" + t.TempDir(), "about:blank"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, a := range strings.Split(string(raw), "\x00") {
		if v, ok := strings.CutPrefix(a, "--disable-features="); ok {
			lists = append(lists, v)
		}
	}
	if len(lists) != 1 {
		t.Fatalf("want one --disable-features, got %q", lists)
	}
	for _, f := range append([]string{"PaintHolding"}, chromium.BoundaryFeatures...) {
		if !slices.Contains(strings.Split(lists[0], ","), f) {
			t.Errorf("--disable-features=%s lacks %s", lists[0], f)
		}
	}
}
