package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

// One Chromium and one fixture site for the whole package.
var (
	chrome *chromium.Process
	site   *fixture.Server
)

// TestMain launches the package's Chromium (never skipped: the driver is only
// proven against a real browser) and serves the fixture site.
func TestMain(m *testing.M) {
	chromiumtest.Main(m, chromium.Options{}, true, func(s chromiumtest.Shared) { chrome, site = s.Chrome, s.Site })
}

// recorder collects a driver's events.
type recorder struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []browser.Event
}

func record(b *Browser) *recorder {
	r := &recorder{}
	r.cond = sync.NewCond(&r.mu)
	go func() {
		for e := range b.Events() {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.cond.Broadcast()
			r.mu.Unlock()
		}
	}()
	return r
}

// wait returns the first event (from index from on) matching pred, or fails.
func (r *recorder) wait(t *testing.T, timeout time.Duration, what string, pred func(browser.Event) bool) browser.Event {
	t.Helper()
	e, ok := r.waitOK(timeout, pred)
	if !ok {
		t.Fatalf("no event %s within %v; got:\n%s", what, timeout, r.dump())
	}
	return e
}

func (r *recorder) waitOK(timeout time.Duration, pred func(browser.Event) bool) (browser.Event, bool) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for _, e := range r.events {
			if pred(e) {
				return e, true
			}
		}
		if time.Now().After(deadline) {
			return browser.Event{}, false
		}
		r.cond.Wait()
	}
}

func (r *recorder) all() []browser.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]browser.Event(nil), r.events...)
}

func (r *recorder) dump() string {
	var b strings.Builder
	for _, e := range r.all() {
		fmt.Fprintf(&b, "  %s epoch=%d %+v\n", e.Type, e.Epoch, e.Page)
	}
	return b.String()
}

func newDriver(t *testing.T, opts Options) (*Browser, *recorder) {
	t.Helper()
	return newDriverAt(t, chrome.WebSocketURL, opts)
}

func newDriverAt(t *testing.T, endpoint string, opts Options) (*Browser, *recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := New(ctx, endpoint, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(b.Shutdown)
	return b, record(b)
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openWindow has b open path in a new window under key, waits until it has
// loaded (its title is title) and closes it under key when the test ends. With b
// the driver under test the page is the driver's own; with a second driver (the
// user's hand) it is the user's window, which the driver under test did not open.
func openWindow(t *testing.T, b *Browser, r *recorder, key, path, title string) browser.Page {
	t.Helper()
	p, err := b.Open(tctx(t), browser.OpenRequest{Key: key, URL: site.Path(path), NewWindow: true})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background(), browser.CloseRequest{Key: key, ID: p.ID, OwnsWindow: true}) })
	waitTitle(t, b, p.ID, title)
	return p
}

// chromiumPage is a page as Chromium itself lists it (/json/list over HTTP),
// seen by no driver: what a user would check.
type chromiumPage struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	URL   string `json:"url"`
	Title string `json:"title"`
}

func chromiumPages(t *testing.T) map[string]chromiumPage {
	t.Helper()
	var list []chromiumPage
	devtoolsHTTP(t, "/json/list", &list)
	out := map[string]chromiumPage{}
	for _, p := range list {
		if p.Type == "page" {
			out[p.ID] = p
		}
	}
	return out
}

func devtoolsHTTP(t *testing.T, path string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(tctx(t), http.MethodGet, chrome.HTTPURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", path, resp.Status, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
}

// userClose asks Chromium to close page id and reports whether it still knew
// the page: a page whose earlier close landed meanwhile is answered 404 (No
// such target id), which is the close the user wanted, not a failure.
func userClose(t *testing.T, id string) bool {
	t.Helper()
	req, err := http.NewRequestWithContext(tctx(t), http.MethodGet, chrome.HTTPURL+"/json/close/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("closing %s: %v", id, err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	body, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound && !isOpen(t, id):
		return false
	case resp.StatusCode != http.StatusOK:
		t.Fatalf("closing %s: %s %s", id, resp.Status, body)
	}
	return true
}

// isOpen reports whether Chromium still lists the page.
func isOpen(t *testing.T, id string) bool {
	t.Helper()
	_, ok := chromiumPages(t)[id]
	return ok
}

// mustBeOpen fails unless Chromium still lists every page.
func mustBeOpen(t *testing.T, what string, ids ...string) {
	t.Helper()
	ps := chromiumPages(t)
	for _, id := range ids {
		if _, ok := ps[id]; !ok {
			t.Fatalf("%s: page %s is gone from Chromium's page list", what, id)
		}
	}
}

// waitGone waits until Chromium no longer lists the page.
func waitGone(t *testing.T, what, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for isOpen(t, id) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: page %s still in Chromium's page list", what, id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// userCloses closes a page the way the user does, through Chromium itself and
// no driver's ledger (the tab's close button), and waits until it is gone.
func userCloses(t *testing.T, id string) {
	t.Helper()
	if !isOpen(t, id) {
		return
	}
	// Chromium drops a close that lands while the page commits a navigation
	// (see closeRetry): the user clicks the tab's close button again.
	for range 10 {
		if !userClose(t, id) {
			return // gone meanwhile: the earlier click took effect
		}
		for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !isOpen(t, id) {
				return
			}
		}
	}
	waitGone(t, "user closes", id)
}

// seen waits until the driver reported page id.
func seen(t *testing.T, r *recorder, id string) {
	t.Helper()
	r.wait(t, 5*time.Second, "page "+id+" seen", func(e browser.Event) bool {
		return e.Page.ID == id && (e.Type == browser.PageCreated || e.Type == browser.PageUpdated)
	})
}

// waitTitle polls snapshots (which re-read target infos) until page id has the
// title; Chrome pushes urls but not titles, so events carry titles only after the
// driver's next refresh.
func waitTitle(t *testing.T, b *Browser, id, title string) browser.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last browser.Page
	for time.Now().Before(deadline) {
		s, err := b.Snapshot(tctx(t))
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		if p, ok := s.Page(id); ok {
			last = p
			if p.Title == title {
				return browser.Event{Type: browser.PageUpdated, Page: p, Epoch: s.Epoch, Time: time.Now()}
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("page %s: no title %q within 10s; last seen %+v", id, title, last)
	return browser.Event{}
}

// windowPages returns the pages of a window in a fresh snapshot.
func windowPages(t *testing.T, b *Browser, w string) []browser.Page {
	t.Helper()
	s, err := b.Snapshot(tctx(t))
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var ps []browser.Page
	for _, p := range s.Pages {
		if p.WindowID == w {
			ps = append(ps, p)
		}
	}
	return ps
}

// evaluate runs an expression in a page, for test assertions only.
func evaluate(t *testing.T, b *Browser, id, expr string) any {
	t.Helper()
	ctx := tctx(t)
	c, err := b.current()
	if err != nil {
		t.Fatal(err)
	}
	sess, detach, err := attach(ctx, c, id)
	if err != nil {
		t.Fatalf("attach %s: %v", id, err)
	}
	defer detach()
	r, err := call(ctx, c, sess, wire.Evaluate{Expression: expr, ReturnByValue: true})
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	var v any
	if len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, &v); err != nil {
			t.Fatalf("evaluate: %v", err)
		}
	}
	return v
}

// proxy is a TCP proxy between a driver and Chromium whose links can be cut.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	refuse bool
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close(); p.cut() }) // best-effort cleanup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			refuse := p.refuse
			p.mu.Unlock()
			if refuse {
				_ = c.Close() // best-effort cleanup
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close() // best-effort cleanup
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); _ = u.Close() }() // best-effort cleanup
			go func() { _, _ = io.Copy(c, u); _ = c.Close() }() // best-effort cleanup
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) setRefuse(v bool) {
	p.mu.Lock()
	p.refuse = v
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close() // best-effort cleanup
	}
	p.conns = nil
}

func isNotConnected(err error) bool { return errors.Is(err, browser.ErrNotConnected) }

// actErr runs an Act and keeps its error.
func actErr(b browser.Browser, ctx context.Context, req browser.ActRequest) error {
	_, err := b.Act(ctx, req)
	return err
}
