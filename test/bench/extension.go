package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

// --- extension: closing a session's pages through the real extension ---

// extLab is a Chromium with the repository's extension loaded unpacked, the
// agent's extension host (in this process, as `tabwarden agent --driver
// extension` runs it) paired with it, and the bench's own DevTools hand.
type extLab struct {
	site   *fixture.Server
	chrome *chromium.Process
	raw    *rawCDP
	host   *extension.Host
	dir    string
	stop   func()
}

// extensionSection times what the agent's cleanup asks of the extension when a
// session ends: one close per page, all at once (closeSessionPages), each
// decided in the extension's ownership queue and removed concurrently,
// keeping the last-tab rule. The baseline is one chrome.tabs.remove of the
// same number of tabs, evaluated in the extension's service worker (no
// ownership check, no last-tab rule, no dialog handling): the floor of any
// extension. Both close tabs of the same window, which keeps a user's tab.
func extensionSection(ctx context.Context, cfg config, rep *report) error {
	l, err := startExtLab(ctx)
	if err != nil {
		return err
	}
	defer l.stop()
	ns := []int{10}
	reps := 3
	if !cfg.short {
		ns, reps = []int{10, 50}, 5
	}
	userWin, err := l.userWindow(ctx)
	if err != nil {
		return err
	}
	d := l.host.Driver()
	for _, n := range ns {
		logf("extension cleanup of %d page(s): %d repetitions (driver closes, raw chrome.tabs.remove)", n, reps)
		var tw, base sample
		for r := 0; r < reps; r++ {
			// The driver: one Close per page, concurrently.
			ps, err := l.openPages(ctx, userWin, fmt.Sprintf("ext-%d-%d", n, r), n)
			if err != nil {
				return err
			}
			gone := l.raw.expectDestroyed(targets(ps)...)
			t0 := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, len(ps))
			for i, p := range ps {
				wg.Go(func() { errs[i] = d.Close(ctx, browser.CloseRequest{Key: p.key, ID: p.id}) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					return fmt.Errorf("closing page %s: %w", ps[i].id, err)
				}
			}
			last, err := gone.wait(60 * time.Second)
			if err != nil {
				return fmt.Errorf("the driver's closes: %w", err)
			}
			tw = append(tw, ms(last.At.Sub(t0)))

			// The floor: chrome.tabs.remove of as many tabs, in the worker.
			ps, err = l.openPages(ctx, userWin, fmt.Sprintf("ext-raw-%d-%d", n, r), n)
			if err != nil {
				return err
			}
			gone = l.raw.expectDestroyed(targets(ps)...)
			t0 = time.Now()
			if err := l.inWorker(ctx, "chrome.tabs.remove(["+strings.Join(ids(ps), ",")+"]).then(() => true)"); err != nil {
				return err
			}
			last, err = gone.wait(60 * time.Second)
			if err != nil {
				return fmt.Errorf("chrome.tabs.remove: %w", err)
			}
			base = append(base, ms(last.At.Sub(t0)))
			// The records of the removed tabs go with one close each (closed:false).
			for _, p := range ps {
				_ = d.Close(ctx, browser.CloseRequest{Key: p.key, ID: p.id})
			}
		}
		rep.latency(fmt.Sprintf("extension cleanup: %d pages (driver closes, concurrently)", n), tw,
			fmt.Sprintf("chrome.tabs.remove of %d tabs", n), base,
			"first close sent → last page destroyed; the user's tab keeps the window")
	}
	return nil
}

// extPage is a page the driver opened: its key, the driver's id (the tab's
// id) and its DevTools target id (what the bench sees destroyed).
type extPage struct{ key, id, target string }

func ids(ps []extPage) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.id
	}
	return out
}

func targets(ps []extPage) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.target
	}
	return out
}

func startExtLab(ctx context.Context) (*extLab, error) {
	l := &extLab{site: fixture.Serve()}
	var stops []func()
	l.stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (*extLab, error) {
		l.stop()
		return nil, fmt.Errorf("extension bench: %w", err)
	}
	stops = append(stops, l.site.Close)
	var err error
	l.chrome, err = chromiumtest.LaunchContext(ctx, chromium.Options{Extensions: []string{filepath.Join(testenv.Root(), "extension")}, StartTimeout: 60 * time.Second})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() { _ = l.chrome.Close() })
	if l.raw, err = dialCDP(ctx, l.chrome.WebSocketURL); err != nil {
		return fail(err)
	}
	stops = append(stops, l.raw.close)
	if l.dir, err = os.MkdirTemp("", "twbench-ext-"); err != nil {
		return fail(err)
	}
	stops = append(stops, func() { _ = os.RemoveAll(l.dir) })
	if l.host, err = extension.New(extension.Options{Addr: "127.0.0.1:0", StateDir: l.dir, Logger: logr.Discard()}); err != nil {
		return fail(err)
	}
	hostCtx, cancel := context.WithCancel(ctx)
	stops = append(stops, cancel)
	if err := l.host.Start(hostCtx); err != nil {
		return fail(err)
	}
	if err := l.pair(ctx); err != nil {
		return fail(err)
	}
	return l, nil
}

// pair pairs the extension with the host as a user does, minus the typing: a
// pairing code from the agent's control socket (`tabwarden pair`), handed to
// the worker by the extension's own popup page, as its Pair button does.
func (l *extLab) pair(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	p, err := extension.RequestPairing(ctx, l.dir)
	if err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(p.Addr)
	if err != nil {
		return err
	}
	popup, err := l.raw.createTarget(ctx, "chrome-extension://"+extension.DefaultExtensionID+"/popup.html", false)
	if err != nil {
		return err
	}
	defer func() { _ = l.raw.closeTarget(context.Background(), popup) }()
	a, err := wire.Call(ctx, l.raw.c, "", wire.AttachToTarget{TargetID: popup, Flatten: true})
	if err != nil {
		return err
	}
	code, _ := json.Marshal(p.Code)
	expr := fmt.Sprintf(`chrome.runtime.sendMessage({type: "pair", code: %s, port: %s}).then((r) => JSON.stringify(r))`, code, strconv.Quote(port))
	var answer string
	if err := poll(30*time.Second, func() (bool, error) {
		r, err := wire.Call(ctx, l.raw.c, a.SessionID, wire.Evaluate{Expression: expr, ReturnByValue: true, AwaitPromise: true})
		if err != nil || r.ExceptionDetails != nil {
			return false, nil // the popup page is still loading its bindings
		}
		answer = string(r.Result.Value)
		return true, nil
	}); err != nil {
		return fmt.Errorf("pairing through the popup page: %w", err)
	}
	if err := poll(30*time.Second, func() (bool, error) { return l.host.Driver().Connected(), nil }); err != nil {
		return fmt.Errorf("the extension never connected after pairing (popup said %s): %w", answer, err)
	}
	return nil
}

// userWindow opens a window with one user tab (the window a session's pages
// share with the user) and returns the driver's id of that window.
func (l *extLab) userWindow(ctx context.Context) (string, error) {
	u := l.site.Path("/form?bench-user")
	if _, err := l.raw.createTarget(ctx, u, true); err != nil {
		return "", err
	}
	var win string
	err := poll(30*time.Second, func() (bool, error) {
		snap, err := l.host.Driver().Snapshot(ctx)
		if err != nil {
			return false, nil
		}
		for _, p := range snap.Pages {
			if p.URL == u {
				win = p.WindowID
				return true, nil
			}
		}
		return false, nil
	})
	return win, err
}

// openPages opens n pages into window through the driver and waits until each loaded.
func (l *extLab) openPages(ctx context.Context, window, tag string, n int) ([]extPage, error) {
	ps := make([]extPage, n)
	urls := make([]string, n)
	for i := range n {
		key := fmt.Sprintf("%s-%d", tag, i)
		urls[i] = l.site.Path("/landing?" + key)
		p, err := l.host.Driver().Open(ctx, browser.OpenRequest{Key: key, URL: urls[i], WindowID: window})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", key, err)
		}
		ps[i] = extPage{key: key, id: p.ID}
	}
	// Each page loaded (Chromium shows its url) is known by its target id.
	err := poll(60*time.Second, func() (bool, error) {
		ts, err := wire.Call(ctx, l.raw.c, "", wire.GetTargets{})
		if err != nil {
			return false, err
		}
		byURL := map[string]string{}
		for _, t := range ts.TargetInfos {
			byURL[t.URL] = t.TargetID
		}
		for i, u := range urls {
			if ps[i].target = byURL[u]; ps[i].target == "" {
				return false, nil
			}
		}
		return true, nil
	})
	return ps, err
}

// inWorker evaluates expr (a promise) in the extension's service worker.
func (l *extLab) inWorker(ctx context.Context, expr string) error {
	ts, err := wire.Call(ctx, l.raw.c, "", wire.GetTargets{})
	if err != nil {
		return err
	}
	sw := ""
	for _, t := range ts.TargetInfos {
		if t.Type == "service_worker" && strings.HasPrefix(t.URL, "chrome-extension://"+extension.DefaultExtensionID+"/") {
			sw = t.TargetID
		}
	}
	if sw == "" {
		return fmt.Errorf("the extension's service worker is not running")
	}
	a, err := wire.Call(ctx, l.raw.c, "", wire.AttachToTarget{TargetID: sw, Flatten: true})
	if err != nil {
		return err
	}
	defer func() {
		_, _ = wire.Call(context.Background(), l.raw.c, "", wire.DetachFromTarget{SessionID: a.SessionID})
	}()
	r, err := wire.Call(ctx, l.raw.c, a.SessionID, wire.Evaluate{Expression: expr, ReturnByValue: true, AwaitPromise: true})
	if err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("in the service worker: %s: %v", expr, r.ExceptionDetails)
	}
	return nil
}
