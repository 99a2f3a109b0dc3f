package cdp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// The connection: resolving the endpoint, dialling and discovering targets,
// re-reading target infos, and reconnecting with backoff after a drop.

// resolveWS turns the endpoint into a browser websocket URL.
func (b *Browser) resolveWS(ctx context.Context) (string, error) {
	u, err := url.Parse(b.endpoint)
	if err != nil {
		return "", fmt.Errorf("cdp endpoint %q: %w", b.endpoint, err)
	}
	switch u.Scheme {
	case "ws", "wss":
		return b.endpoint, nil
	case "http", "https":
	default:
		return "", fmt.Errorf("cdp endpoint %q: want ws://…, http://… or unix:/path/to.sock", b.endpoint)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(b.endpoint, "/")+"/json/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s/json/version: %s", b.endpoint, resp.Status)
	}
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.WS == "" {
		return "", fmt.Errorf("%s/json/version: no webSocketDebuggerUrl", b.endpoint)
	}
	// Chrome names itself by the Host it was asked under; keep the host we were
	// given (port forwards, proxies).
	ws, err := url.Parse(v.WS)
	if err != nil {
		return "", err
	}
	ws.Host = u.Host
	if u.Scheme == "https" {
		ws.Scheme = "wss"
	}
	return ws.String(), nil
}

// connect dials, discovers targets and makes the connection current. Pages found
// by discovery are not reported one by one: a Connected event says "snapshot now".
func (b *Browser) connect(ctx context.Context) (*wire.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.DialTimeout)
	defer cancel()
	var c *wire.Conn
	ready := make(chan struct{})
	onEvent := func(ev wire.Event) {
		<-ready
		b.onEvent(c, ev)
	}
	wsURL := b.endpoint
	var err error
	if b.opts.Dial != nil {
		if c, err = b.opts.Dial(ctx, onEvent); err != nil {
			return nil, fmt.Errorf("dial %s: %w", b.endpoint, err)
		}
	} else if path, unix, perr := wire.UnixPath(b.endpoint); unix {
		// tabwarden cdp-bridge: Chromium's pipe, served on a socket; no port.
		if perr != nil {
			return nil, perr
		}
		if c, err = wire.DialUnix(ctx, path, onEvent); err != nil {
			return nil, fmt.Errorf("dial %s: %w", b.endpoint, err)
		}
	} else {
		if wsURL, err = b.resolveWS(ctx); err != nil {
			return nil, err
		}
		if c, err = wire.Dial(ctx, wsURL, onEvent); err != nil {
			return nil, fmt.Errorf("dial %s: %w", wsURL, err)
		}
	}
	b.mu.Lock()
	old := b.targets
	b.conn = c
	b.connected = false
	b.targets = map[string]*target{}
	b.sessions = map[string]*pageSession{}
	b.destroyed = map[string][]chan struct{}{}
	b.phWaiters = nil
	b.mu.Unlock()
	close(ready)

	fail := func(err error) (*wire.Conn, error) {
		c.Close()
		b.mu.Lock()
		if b.conn == c {
			b.conn = nil
		}
		b.mu.Unlock()
		return nil, err
	}
	if err := b.guardRequests(ctx, c); err != nil {
		return fail(fmt.Errorf("guarding the browser's control plane from its pages: %w", err))
	}
	ver, err := wire.Call(ctx, c, "", wire.GetVersion{})
	if err != nil {
		return fail(err)
	}
	bcs, err := wire.Call(ctx, c, "", wire.GetBrowserContexts{})
	if err != nil {
		return fail(err)
	}
	// Discovery: targetCreated for every existing target arrives before the reply.
	if _, err := wire.Call(ctx, c, "", wire.SetDiscoverTargets{Discover: true}); err != nil {
		return fail(err)
	}

	b.mu.Lock()
	live := map[string]bool{}
	for _, id := range bcs.BrowserContextIDs {
		live[id] = true
	}
	contexts := b.ledger.Contexts()
	for name, id := range contexts {
		if !live[id] {
			// Gone with the browser it lived in (a restarted Chromium).
			delete(contexts, name)
			if err := b.ledger.DropContext(name); err != nil {
				b.log.Error(err, "forgetting a browser context that is gone", "name", name)
			}
		}
	}
	b.ctxNames = map[string]string{}
	for _, id := range bcs.BrowserContextIDs {
		b.ctxNames[id] = id
	}
	for name, id := range contexts {
		b.ctxNames[id] = name
	}
	// Discovered silently: the consumer re-snapshots on Connected. Ids and windows
	// survive a reconnect to the same browser.
	for id, t := range b.targets {
		t.shown = visibleURL(t.info.URL)
		if o, ok := old[id]; ok {
			t.shown = t.shown || o.shown
			t.windowID, t.popup, t.attributed = o.windowID, o.popup, o.attributed
			if t.marker == "" && o.marker != "" && (t.info.URL == o.marker || t.info.URL == "") {
				t.marker = o.marker // still on its way from an Open's marker
			}
		}
	}
	// The Opens' pages that did not survive the reconnect are no longer on
	// their way anywhere.
	for m, e := range b.leaving {
		if t := b.targets[e.id]; e.id != "" && (t == nil || t.marker != m) {
			delete(b.leaving, m)
		}
	}
	b.version = ver.Product
	b.epoch++
	b.connected = true
	epoch := b.epoch
	var ids []string
	for id, t := range b.targets {
		if t.windowID == "" {
			ids = append(ids, id)
		}
	}
	b.mu.Unlock()
	b.log.Info("connected to browser", "version", ver.Product, "epoch", epoch, "ws", wsURL)
	b.events.push(browser.Event{Type: browser.Connected, Epoch: epoch, Time: time.Now()})
	for _, id := range ids {
		go b.resolveWindow(c, id)
	}
	if b.opts.RefreshInterval > 0 {
		go b.refreshLoop(c)
	}
	return c, nil
}

// refreshLoop re-reads target infos while c lives: Chrome reports a navigation's
// url at once but not the title the page sets afterwards.
func (b *Browser) refreshLoop(c *wire.Conn) {
	t := time.NewTicker(b.opts.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-c.Done():
			return
		case <-b.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = b.refresh(ctx, c)
			cancel()
		}
	}
}

// refresh applies Target.getTargets to the model, reporting changes.
func (b *Browser) refresh(ctx context.Context, c *wire.Conn) error {
	b.mu.Lock()
	seen := make(map[string]int64, len(b.targets))
	for id, t := range b.targets {
		seen[id] = t.updates
	}
	b.mu.Unlock()
	r, err := call(ctx, c, "", wire.GetTargets{})
	if err != nil {
		return err
	}
	for _, ti := range r.TargetInfos {
		b.mu.Lock()
		// Unknown ones are either just gone or about to be reported, and ones that
		// changed meanwhile are newer than this answer: events decide.
		if t, known := b.targets[ti.TargetID]; known && seen[ti.TargetID] == t.updates {
			b.onTargetInfoLocked(c, ti)
		}
		b.mu.Unlock()
	}
	return nil
}

// supervise waits for the connection to drop and reconnects with backoff.
func (b *Browser) supervise(c *wire.Conn) {
	defer close(b.loopDone)
	stopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-b.stop
		cancel()
	}()
	for {
		select {
		case <-c.Done():
		case <-b.stop:
			return
		}
		b.mu.Lock()
		if b.conn == c {
			b.conn = nil
		}
		b.connected = false
		epoch := b.epoch
		// Wake closes waiting for targetDestroyed: they report ErrNotConnected.
		b.mu.Unlock()
		select {
		case <-b.stop:
			return
		default:
		}
		b.log.Info("browser connection lost", "epoch", epoch, "err", c.Err())
		b.events.push(browser.Event{Type: browser.Disconnected, Epoch: epoch, Time: time.Now()})
		backoff := b.opts.MinBackoff
		for {
			jitter := time.Duration(rand.Int64N(int64(backoff)/4 + 1))
			select {
			case <-b.stop:
				return
			case <-time.After(backoff + jitter):
			}
			nc, err := b.connect(stopCtx)
			if err == nil {
				c = nc
				break
			}
			b.log.V(1).Info("reconnect failed", "err", err, "backoff", backoff)
			backoff *= 2
			if backoff > b.opts.MaxBackoff {
				backoff = b.opts.MaxBackoff
			}
		}
	}
}
