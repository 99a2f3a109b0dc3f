package cdp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

func TestSnapshotSeesPages(t *testing.T) {
	b, r := newDriver(t, Options{})
	p := openWindow(t, b, r, "quiet", "/quiet", fixture.TitleQuiet)
	s, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Epoch != 1 || !strings.Contains(s.Version, "Chrom") {
		t.Errorf("epoch %d version %q", s.Epoch, s.Version)
	}
	got, ok := s.Page(p.ID)
	if !ok {
		t.Fatalf("snapshot lacks %s: %+v", p.ID, s.Pages)
	}
	if got.URL != site.Path("/quiet") || got.Title != fixture.TitleQuiet || got.WindowID == "" || got.Popup || got.OpenerID != "" {
		t.Errorf("page %+v", got)
	}
	found := false
	for _, w := range s.Windows {
		found = found || w.ID == got.WindowID
	}
	if !found {
		t.Errorf("window %s not in %+v", got.WindowID, s.Windows)
	}
	if rec, ok := s.RecordOf(p.ID); !ok || rec != (browser.Record{Key: "quiet", Page: p.ID, Kind: browser.RecordOpened}) {
		t.Errorf("record of the opened page: %+v %v", rec, ok)
	}
	for _, pg := range s.Pages {
		if strings.HasPrefix(pg.URL, "devtools://") || strings.HasPrefix(pg.URL, "chrome-extension://") {
			t.Errorf("snapshot has %s", pg.URL)
		}
	}
	if !b.Connected() {
		t.Error("not connected")
	}
}

func TestOpenBackgroundTabAndNewWindow(t *testing.T) {
	b, _ := newDriver(t, Options{})
	ctx := tctx(t)

	// A new window, idempotent by key.
	start := time.Now()
	w, err := b.Open(ctx, browser.OpenRequest{Key: "win-1", URL: site.Path("/landing"), NewWindow: true})
	t.Logf("Open new window: reply in %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "win-1", ID: w.ID, OwnsWindow: true})
	})
	if w.WindowID == "" || w.Popup {
		t.Errorf("new window page %+v", w)
	}
	again, err := b.Open(ctx, browser.OpenRequest{Key: "win-1", URL: site.Path("/landing"), NewWindow: true})
	if err != nil || again.ID != w.ID {
		t.Fatalf("second open with the same key: %+v %v (want %s)", again, err, w.ID)
	}
	waitTitle(t, b, w.ID, fixture.TitleLanding)

	// A background tab: it lands in the browser's last active window; the tab
	// that was active there stays active (visible) and the new one is hidden.
	start = time.Now()
	tab, err := b.Open(ctx, browser.OpenRequest{Key: "tab-1", URL: site.Path("/quiet")})
	t.Logf("Open background tab: reply in %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "tab-1", ID: tab.ID}) })
	if tab.WindowID == "" || tab.WindowID == w.WindowID {
		t.Errorf("background tab in window %q (new window is %s)", tab.WindowID, w.WindowID)
	}
	waitTitle(t, b, tab.ID, fixture.TitleQuiet)
	if v := evaluate(t, b, tab.ID, "document.visibilityState"); v != "hidden" {
		t.Errorf("background tab visibilityState = %v, want hidden", v)
	}
	others := windowPages(t, b, tab.WindowID)
	if len(others) < 2 {
		t.Fatalf("window %s has %d pages", tab.WindowID, len(others))
	}
	visible := 0
	for _, p := range others {
		if p.ID != tab.ID && evaluate(t, b, p.ID, "document.visibilityState") == "visible" {
			visible++
		}
	}
	if visible != 1 {
		t.Errorf("%d other tabs of the window are visible, want the 1 that was active", visible)
	}
	// The new window does not take the browser's "last active" place either: a
	// background tab opened after it still lands in the old window.
	tab2, err := b.Open(ctx, browser.OpenRequest{Key: "tab-2", URL: "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: "tab-2", ID: tab2.ID}) })
	if tab2.WindowID != tab.WindowID {
		t.Errorf("second background tab in %s, first in %s", tab2.WindowID, tab.WindowID)
	}

	// Opening into a window that does not exist fails, and records nothing.
	if _, err := b.Open(ctx, browser.OpenRequest{Key: "tab-3", URL: "about:blank", WindowID: "424242"}); !errors.Is(err, browser.ErrNotFound) {
		t.Errorf("open into a missing window: %v, want ErrNotFound", err)
	}
	if _, ok := b.ledger.PageOf("tab-3"); ok {
		t.Error("a failed open left a record")
	}
	// After the page is closed, the key opens a new one.
	if err := b.Close(ctx, browser.CloseRequest{Key: "win-1", ID: w.ID, OwnsWindow: true}); err != nil {
		t.Fatal(err)
	}
	w2, err := b.Open(ctx, browser.OpenRequest{Key: "win-1", URL: site.Path("/landing"), NewWindow: true})
	if err != nil || w2.ID == w.ID {
		t.Fatalf("reopen after close: %+v %v", w2, err)
	}
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "win-1", ID: w2.ID, OwnsWindow: true})
	})
}

func TestDisconnectAndReconnect(t *testing.T) {
	host := strings.TrimPrefix(chrome.HTTPURL, "http://")
	px := newProxy(t, host)
	b, r := newDriverAt(t, "http://"+px.addr(), Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	p := openWindow(t, b, r, "quiet", "/quiet", fixture.TitleQuiet)
	before, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	n := len(r.all())

	px.setRefuse(true)
	px.cut()
	r.wait(t, 5*time.Second, "disconnected", func(e browser.Event) bool { return e.Type == browser.Disconnected && e.Epoch == 1 })
	if b.Connected() {
		t.Error("Connected() after the link was cut")
	}
	if _, err := b.Snapshot(tctx(t)); !isNotConnected(err) {
		t.Errorf("Snapshot while disconnected: %v", err)
	}
	if _, err := b.Open(tctx(t), browser.OpenRequest{Key: "other", URL: "about:blank"}); !isNotConnected(err) {
		t.Errorf("Open while disconnected: %v", err)
	}
	if err := b.Close(tctx(t), browser.CloseRequest{Key: "quiet", ID: p.ID}); !isNotConnected(err) {
		t.Errorf("Close while disconnected: %v", err)
	}
	if _, err := b.Act(tctx(t), browser.ActRequest{Key: "act", Owner: "quiet", Page: p.ID, ClickSelector: "#noop"}); !isNotConnected(err) {
		t.Errorf("Act while disconnected: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // a few refused reconnects

	px.setRefuse(false)
	e := r.wait(t, 10*time.Second, "reconnected", func(e browser.Event) bool { return e.Type == browser.Connected && e.Epoch >= 2 })
	if !b.Connected() {
		t.Error("not Connected() after the Connected event")
	}
	for _, e := range r.all()[n:] {
		if e.Type == browser.PageRemoved {
			t.Errorf("page reported removed across a reconnect: %+v", e.Page)
		}
	}
	after, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != e.Epoch || after.Epoch <= before.Epoch {
		t.Errorf("epochs: before %d, event %d, after %d", before.Epoch, e.Epoch, after.Epoch)
	}
	for _, bp := range before.Pages {
		ap, ok := after.Page(bp.ID)
		if !ok {
			t.Errorf("page %s lost across the reconnect", bp.ID)
			continue
		}
		if ap.WindowID != bp.WindowID || ap.URL != bp.URL {
			t.Errorf("page changed across the reconnect: %+v → %+v", bp, ap)
		}
	}
	// The driver works again: events flow and pages close.
	if err := b.Close(tctx(t), browser.CloseRequest{Key: "quiet", ID: p.ID, OwnsWindow: true}); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 5*time.Second, "removed after reconnect", func(e browser.Event) bool {
		return e.Type == browser.PageRemoved && e.Page.ID == p.ID && e.Epoch == after.Epoch
	})
}

func TestActErrors(t *testing.T) {
	b, r := newDriver(t, Options{})
	q := openWindow(t, b, r, "quiet", "/quiet", fixture.TitleQuiet)
	if _, err := b.Act(tctx(t), browser.ActRequest{Key: "k", Owner: "quiet", Page: q.ID, ClickSelector: "#missing"}); err == nil || errors.Is(err, browser.ErrNotOwned) {
		t.Errorf("click on a missing element: %v", err)
	}
	if _, err := b.Act(tctx(t), browser.ActRequest{Key: "k", Owner: "quiet", Page: "NOSUCH", ClickSelector: "#noop"}); !errors.Is(err, browser.ErrNotFound) {
		t.Errorf("click on a missing page: %v, want ErrNotFound", err)
	}
	act(t, b, "k", "quiet", q.ID, "#noop")
	if v := evaluate(t, b, q.ID, "document.getElementById('noop').textContent"); v != "clicked" {
		t.Errorf("button text %v after the click", v)
	}
}
