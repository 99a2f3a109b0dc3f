// Package cdp is the browser driver for a Chrome or Chromium reached over the
// Chrome DevTools Protocol (a remote or headless browser).
//
// It holds one browser-level websocket, discovers page targets with
// Target.setDiscoverTargets (never browser-level auto-attach, which pauses new
// pages), and keeps an in-memory model of the pages: opener, url, title, browser
// context and window. Events are emitted from the model as Chrome reports changes.
//
// What the consumer must know:
//
//   - PageCreated is emitted the moment Chrome reports the target. A spawned page
//     then has no URL yet (Chrome never sends it in targetCreated) and no window:
//     the window is looked up asynchronously (Browser.getWindowForTarget) and a
//     PageUpdated follows with WindowID and Popup filled in, and another with the
//     URL. Treat every Updated as the page's full current state.
//   - Chrome pushes url changes (targetInfoChanged at navigation commit, with the
//     url as a provisional title) but not the <title> a page sets afterwards. The
//     driver re-reads Target.getTargets every Options.RefreshInterval (1 s) and on
//     every Snapshot, and reports title changes as PageUpdated then.
//   - Popup is derived, because CDP does not report a window's type: a page that
//     has an opener and is the first page seen in its window is a popup (it lives
//     in a standalone window created for it). A target=_blank tab shares its
//     opener's window and is not a popup.
//   - Open never focuses: Target.createTarget{background:true}. CDP cannot name
//     the window of a new tab; Chrome puts a background tab in the last active
//     normal window of the browser context. When OpenRequest.WindowID names a
//     window, the tab is opened from a page of OpenRequest.Anchors that the
//     driver owns in that window (place.go); when there is none, the page is
//     still opened by createTarget and the returned Page carries the real
//     WindowID and, when it differs, Misplaced says why.
//   - Close waits for Target.targetDestroyed. Closing the last page of a window
//     the caller does not own first opens an about:blank tab in that same window:
//     the driver middle-clicks an injected about:blank link in the page being
//     closed (a background tab in the page's own window, no opener), and falls
//     back to Target.createTarget when that fails; the placeholder's window is
//     verified, and when it cannot be placed in the window the close is refused
//     rather than closing the user's window. Closes are serialized per window.
//   - With Options.Pool, OpenRequest.Context names a browser context (created on
//     first use with disposeOnDetach:false so that a dropped websocket does not
//     close its pages; DisposeContext ends it). The name → browserContextId map
//     is kept in the ledger file, so a restarted driver reuses a session's
//     context (and its cookies).
//   - Open is crash-consistent: an intent (key, url, context, and the ids of
//     every page that exists) is written to the ledger before
//     Target.createTarget and replaced by the record when the reply comes; a
//     later Open of a key with an intent adopts the one page that matches it
//     and did not exist then, creates the page when none does, and refuses when
//     several do.
//   - When the websocket drops, Connected() turns false, a Disconnected event is
//     emitted, calls return browser.ErrNotConnected, and no page is reported
//     removed. On reconnect targets are re-discovered silently and a Connected
//     event with the next epoch is emitted: re-snapshot then.
package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
)

// LedgerFile is where an agent keeps the ledger of one profile's CDP driver in
// its state directory.
func LedgerFile(stateDir, profile string) string {
	return filepath.Join(stateDir, "cdp-ledger-"+profile+".json")
}

// Options configures the driver.
type Options struct {
	// Pool gives every OpenRequest.Context its own browser context.
	Pool bool
	// Logger receives diagnostics; the zero value discards them.
	Logger logr.Logger
	// MinBackoff and MaxBackoff bound the reconnect backoff (defaults 100 ms and 5 s).
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds one connection attempt (default 10 s).
	DialTimeout time.Duration
	// RefreshInterval is how often target infos are re-read (Target.getTargets) to
	// catch title changes, which Chrome does not push (default 1 s; negative: never).
	RefreshInterval time.Duration
	// LedgerPath is the file the driver keeps its ownership records in, so that a
	// restarted agent can still close the pages it opened or adopted (and only
	// those). Empty: in memory only, lost with the process.
	LedgerPath string

	// fault, in tests, is called at each step of an Open (see the fault*
	// constants) with the page created so far; an error stops the Open right
	// there, as if the process had been killed: nothing after it is written.
	fault func(step, page string) error
}

// Steps of an Open where a test can stop the driver.
const (
	faultBeforeIntent = "before-intent" // nothing recorded, nothing created
	faultAfterIntent  = "after-intent"  // the intent is recorded, nothing created
	faultAfterCreate  = "after-create"  // the browser created the page; no record
)

func (b *Browser) faultAt(step, page string) error {
	if b.opts.fault == nil {
		return nil
	}
	return b.opts.fault(step, page)
}

// target is one page target in the model.
type target struct {
	info       targetInfo
	windowID   string // "" until known
	popup      bool
	attributed string
	shown      bool // reported to the consumer at least once
	seq        int64
	updates    int64 // target infos applied from events, to keep refreshes from going back in time
}

type targetInfo struct {
	TargetID         string `json:"targetId"`
	Type             string `json:"type"`
	Title            string `json:"title"`
	URL              string `json:"url"`
	OpenerID         string `json:"openerId,omitempty"`
	BrowserContextID string `json:"browserContextId,omitempty"`
	Subtype          string `json:"subtype,omitempty"`
}

type actEntry struct {
	key string
	id  int64
}

// Browser is the CDP driver. Create it with New; end it with Shutdown.
type Browser struct {
	endpoint string
	opts     Options
	log      logr.Logger
	events   *eventQueue

	mu        sync.Mutex
	conn      *conn // current connection; nil while disconnected
	connected bool
	epoch     int64
	version   string
	targets   map[string]*target
	seq       int64
	ledger    *ledger.Ledger
	ctxNames  map[string]string // browserContextId → name (or id when not ours)
	acts      []actEntry
	sessions  map[string]*pageSession // page id → the driver's session for actions (act.go)
	actSeq    int64
	ownCreate map[string]int // url → createTarget calls in flight
	phWaiters []chan string  // placeholder clicks waiting for their about:blank page
	destroyed map[string][]chan struct{}
	winLocks  map[string]*sync.Mutex
	keyLocks  map[string]*sync.Mutex
	ctxLock   sync.Mutex // serializes context creation
	phLock    sync.Mutex // serializes placeholder creation
	misplaced sync.Map   // key → why its tab is outside the window asked for (place.go)

	stop     chan struct{}
	stopOnce sync.Once
	loopDone chan struct{}
}

var _ browser.Browser = (*Browser)(nil)

// New connects to a browser. endpoint is a browser websocket URL
// (ws://host:port/devtools/browser/…) or the DevTools HTTP address
// (http://host:port), resolved through /json/version on every (re)connect. The
// first connection must succeed; later drops are reconnected with backoff until
// Shutdown.
func New(ctx context.Context, endpoint string, opts Options) (*Browser, error) {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = 5 * time.Second
		if opts.MaxBackoff < opts.MinBackoff {
			opts.MaxBackoff = opts.MinBackoff
		}
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = time.Second
	}
	b := &Browser{
		endpoint:  endpoint,
		opts:      opts,
		log:       opts.Logger,
		events:    newEventQueue(),
		targets:   map[string]*target{},
		sessions:  map[string]*pageSession{},
		ctxNames:  map[string]string{},
		ownCreate: map[string]int{},
		destroyed: map[string][]chan struct{}{},
		winLocks:  map[string]*sync.Mutex{},
		keyLocks:  map[string]*sync.Mutex{},
		stop:      make(chan struct{}),
		loopDone:  make(chan struct{}),
	}
	l, err := ledger.New(opts.LedgerPath)
	if err != nil {
		return nil, err
	}
	b.ledger = l
	c, err := b.connect(ctx)
	if err != nil {
		b.events.close()
		return nil, err
	}
	go b.supervise(c)
	return b, nil
}

// Shutdown drops the connection and stops reconnecting. Pages stay open.
func (b *Browser) Shutdown() {
	b.stopOnce.Do(func() {
		close(b.stop)
		b.mu.Lock()
		c := b.conn
		b.mu.Unlock()
		if c != nil {
			c.close()
		}
		<-b.loopDone
		b.events.close()
	})
}

// Epoch is the number of the current connection (1 for the first).
func (b *Browser) Epoch() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.epoch
}

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
		return "", fmt.Errorf("cdp endpoint %q: want ws://… or http://…", b.endpoint)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(b.endpoint, "/")+"/json/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
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
func (b *Browser) connect(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.DialTimeout)
	defer cancel()
	wsURL, err := b.resolveWS(ctx)
	if err != nil {
		return nil, err
	}
	var c *conn
	ready := make(chan struct{})
	c, err = dial(ctx, wsURL, func(method, session string, params json.RawMessage) {
		<-ready
		b.onEvent(c, method, session, params)
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", wsURL, err)
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

	fail := func(err error) (*conn, error) {
		c.close()
		b.mu.Lock()
		if b.conn == c {
			b.conn = nil
		}
		b.mu.Unlock()
		return nil, err
	}
	var ver struct {
		Product string `json:"product"`
	}
	if err := c.call(ctx, "", "Browser.getVersion", nil, &ver); err != nil {
		return fail(err)
	}
	var bcs struct {
		IDs []string `json:"browserContextIds"`
	}
	if err := c.call(ctx, "", "Target.getBrowserContexts", nil, &bcs); err != nil {
		return fail(err)
	}
	// Discovery: targetCreated for every existing target arrives before the reply.
	if err := c.call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}, nil); err != nil {
		return fail(err)
	}

	b.mu.Lock()
	live := map[string]bool{}
	for _, id := range bcs.IDs {
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
	for _, id := range bcs.IDs {
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
func (b *Browser) refreshLoop(c *conn) {
	t := time.NewTicker(b.opts.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
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
func (b *Browser) refresh(ctx context.Context, c *conn) error {
	b.mu.Lock()
	seen := make(map[string]int64, len(b.targets))
	for id, t := range b.targets {
		seen[id] = t.updates
	}
	b.mu.Unlock()
	var r struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := call(ctx, c, "", "Target.getTargets", nil, &r); err != nil {
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
func (b *Browser) supervise(c *conn) {
	defer close(b.loopDone)
	stopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-b.stop
		cancel()
	}()
	for {
		select {
		case <-c.closed:
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
		b.log.Info("browser connection lost", "epoch", epoch, "err", c.err)
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

// current returns the live connection or ErrNotConnected.
func (b *Browser) current() (*conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil || !b.connected {
		return nil, browser.ErrNotConnected
	}
	return b.conn, nil
}

// call runs a browser-level or session command and maps a dropped connection to
// ErrNotConnected.
func call(ctx context.Context, c *conn, session, method string, params, out any) error {
	err := c.call(ctx, session, method, params, out)
	if errors.Is(err, errConnClosed) {
		return fmt.Errorf("%s: %w", method, browser.ErrNotConnected)
	}
	return err
}

// --- events from the browser ---

func visibleURL(u string) bool {
	return !strings.HasPrefix(u, "devtools://") && !strings.HasPrefix(u, "chrome-extension://")
}

func isPage(ti targetInfo) bool { return ti.Type == "page" && ti.Subtype == "" }

func (b *Browser) onEvent(c *conn, method, session string, params json.RawMessage) {
	switch method {
	case "Target.targetCreated", "Target.targetInfoChanged":
		var ev struct {
			TargetInfo targetInfo `json:"targetInfo"`
		}
		if json.Unmarshal(params, &ev) != nil {
			return
		}
		b.mu.Lock()
		if t, ok := b.targets[ev.TargetInfo.TargetID]; ok {
			t.updates++
		}
		b.onTargetInfoLocked(c, ev.TargetInfo)
		b.mu.Unlock()
	case "Target.targetDestroyed":
		var ev struct {
			TargetID string `json:"targetId"`
		}
		if json.Unmarshal(params, &ev) != nil {
			return
		}
		b.onDestroyed(c, ev.TargetID)
	case "Target.detachedFromTarget":
		var ev struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(params, &ev) != nil {
			return
		}
		b.dropSession(c, ev.SessionID)
	case "Page.javascriptDialogOpening":
		b.onDialog(c, session, params)
	case "Page.javascriptDialogClosed":
		b.onDialogClosed(c, session)
	}
}

func normURL(u string) string {
	if u == "" {
		return "about:blank"
	}
	return strings.TrimSuffix(u, "/")
}

func (b *Browser) onTargetInfoLocked(c *conn, ti targetInfo) {
	if b.conn != c {
		return
	}
	t, known := b.targets[ti.TargetID]
	if !isPage(ti) {
		if known { // e.g. a prerender activation changed it; treat as gone
			b.removeLocked(ti.TargetID)
		}
		return
	}
	if !known {
		b.seq++
		t = &target{info: ti, seq: b.seq}
		b.targets[ti.TargetID] = t
		if ti.OpenerID == "" {
			u := normURL(ti.URL)
			switch {
			case u == "about:blank" && len(b.phWaiters) > 0:
				ch := b.phWaiters[0]
				b.phWaiters = b.phWaiters[1:]
				ch <- ti.TargetID
			case b.ownCreate[u] > 0:
				b.ownCreate[u]--
				if b.ownCreate[u] == 0 {
					delete(b.ownCreate, u)
				}
			case len(b.acts) > 0:
				t.attributed = b.acts[len(b.acts)-1].key
			}
		}
		if b.connected && visibleURL(ti.URL) {
			t.shown = true
			b.emitLocked(browser.PageCreated, t)
		}
		if b.connected {
			go b.resolveWindow(c, ti.TargetID)
		}
		return
	}
	changed := t.info.URL != ti.URL || t.info.Title != ti.Title || t.info.OpenerID != ti.OpenerID ||
		t.info.BrowserContextID != ti.BrowserContextID
	t.info = ti
	if !changed || !b.connected {
		return
	}
	if !t.shown && !visibleURL(ti.URL) {
		return
	}
	typ := browser.PageUpdated
	if !t.shown {
		typ = browser.PageCreated
	}
	t.shown = true
	b.emitLocked(typ, t)
}

func (b *Browser) onDestroyed(c *conn, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != c {
		return
	}
	b.removeLocked(id)
}

func (b *Browser) removeLocked(id string) {
	t, ok := b.targets[id]
	if !ok {
		return
	}
	delete(b.targets, id)
	delete(b.sessions, id)
	if b.connected && t.shown {
		b.emitLocked(browser.PageRemoved, t)
	}
	for _, ch := range b.destroyed[id] {
		close(ch)
	}
	delete(b.destroyed, id)
}

func (b *Browser) emitLocked(typ browser.EventType, t *target) {
	b.events.push(browser.Event{Type: typ, Page: b.pageLocked(t), Epoch: b.epoch, Time: time.Now()})
}

func (b *Browser) pageLocked(t *target) browser.Page {
	return browser.Page{
		ID:         t.info.TargetID,
		WindowID:   t.windowID,
		OpenerID:   t.info.OpenerID,
		URL:        t.info.URL,
		Title:      t.info.Title,
		Popup:      t.popup,
		Context:    b.ctxNames[t.info.BrowserContextID],
		Attributed: t.attributed,
	}
}

// windowFor asks Chrome which window holds a target. It retries briefly: a
// popup's target exists a moment before its window does.
func windowFor(ctx context.Context, c *conn, id string) (string, error) {
	var lastErr error
	for i, d := 0, 5*time.Millisecond; i < 8; i, d = i+1, d*2 {
		var w struct {
			WindowID int64 `json:"windowId"`
		}
		err := call(ctx, c, "", "Browser.getWindowForTarget", map[string]any{"targetId": id}, &w)
		if err == nil {
			return strconv.FormatInt(w.WindowID, 10), nil
		}
		lastErr = err
		if errors.Is(err, browser.ErrNotConnected) || ctx.Err() != nil {
			return "", err
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "", lastErr
}

// resolveWindow fills in a page's window (and popup flag) and reports it.
func (b *Browser) resolveWindow(c *conn, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.mu.Lock()
	t, ok := b.targets[id]
	opener := ""
	if ok {
		if t.windowID != "" {
			b.mu.Unlock()
			return
		}
		if o, ok := b.targets[t.info.OpenerID]; ok && o.windowID == "" {
			opener = o.info.TargetID
		}
	}
	b.mu.Unlock()
	if !ok {
		return
	}
	// The opener's window first: the popup rule compares with it.
	if opener != "" {
		if w, err := windowFor(ctx, c, opener); err == nil {
			b.setWindow(c, opener, w)
		}
	}
	w, err := windowFor(ctx, c, id)
	if err != nil {
		if !isGone(err) {
			b.log.V(1).Info("window lookup failed", "target", id, "err", err)
		}
		return
	}
	b.setWindow(c, id, w)
}

func (b *Browser) setWindow(c *conn, id, w string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.targets[id]
	if !ok || b.conn != c || t.windowID == w {
		return
	}
	first := t.windowID == ""
	t.windowID = w
	if first {
		others := false
		for oid, o := range b.targets {
			if oid != id && o.windowID == w {
				others = true
				break
			}
		}
		t.popup = t.info.OpenerID != "" && !others
	}
	if b.connected && t.shown {
		b.emitLocked(browser.PageUpdated, t)
	}
}

// resolveAll looks up the windows of all pages whose window is unknown.
func (b *Browser) resolveAll(ctx context.Context, c *conn) error {
	b.mu.Lock()
	var ids []string
	for id, t := range b.targets {
		if t.windowID == "" {
			ids = append(ids, id)
		}
	}
	b.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 16)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			w, err := windowFor(ctx, c, id)
			if err != nil {
				if !isGone(err) {
					errs[i] = err
				}
				return
			}
			b.setWindow(c, id, w)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, browser.ErrNotConnected) {
			return err
		}
	}
	return nil
}

// --- browser.Browser ---

// Snapshot implements browser.Browser. devtools:// and chrome-extension:// pages
// are left out unless they were reported earlier as something else.
func (b *Browser) Snapshot(ctx context.Context) (browser.Snapshot, error) {
	c, err := b.current()
	if err != nil {
		return browser.Snapshot{}, err
	}
	if err := b.refresh(ctx, c); err != nil {
		return browser.Snapshot{}, err
	}
	if err := b.resolveAll(ctx, c); err != nil {
		return browser.Snapshot{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != c || !b.connected {
		return browser.Snapshot{}, browser.ErrNotConnected
	}
	ts := make([]*target, 0, len(b.targets))
	for _, t := range b.targets {
		if t.shown || visibleURL(t.info.URL) {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(x, y *target) int { return int(x.seq - y.seq) })
	s := browser.Snapshot{Epoch: b.epoch, Version: b.version, Records: b.ledger.Records()}
	seen := map[string]int{}
	for _, t := range ts {
		s.Pages = append(s.Pages, b.pageLocked(t))
		if t.windowID == "" {
			continue
		}
		if i, ok := seen[t.windowID]; ok {
			s.Windows[i].Popup = s.Windows[i].Popup || t.popup
			continue
		}
		seen[t.windowID] = len(s.Windows)
		s.Windows = append(s.Windows, browser.Window{ID: t.windowID, Popup: t.popup})
	}
	return s, nil
}

func lockFor(m map[string]*sync.Mutex, mu *sync.Mutex, k string) *sync.Mutex {
	mu.Lock()
	defer mu.Unlock()
	l, ok := m[k]
	if !ok {
		l = &sync.Mutex{}
		m[k] = l
	}
	return l
}

// ensureContext returns the browserContextId for a pool context name. The
// name → id map is kept in the ledger, so a restarted driver reuses the
// session's context (and its cookies) rather than creating another.
func (b *Browser) ensureContext(ctx context.Context, c *conn, name string) (string, error) {
	b.ctxLock.Lock()
	defer b.ctxLock.Unlock()
	if id, ok := b.ledger.Context(name); ok {
		return id, nil
	}
	var r struct {
		ID string `json:"browserContextId"`
	}
	if err := call(ctx, c, "", "Target.createBrowserContext", map[string]any{"disposeOnDetach": false}, &r); err != nil {
		return "", fmt.Errorf("create browser context %q: %w", name, err)
	}
	if err := b.ledger.SetContext(name, r.ID); err != nil {
		// Unrecorded, it would outlive the session: end it now.
		_ = call(ctx, c, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": r.ID}, nil)
		return "", err
	}
	b.mu.Lock()
	b.ctxNames[r.ID] = name
	b.mu.Unlock()
	b.log.V(1).Info("created browser context", "name", name, "id", r.ID)
	return r.ID, nil
}

// DisposeContext closes a pool context and all its pages. Unknown names are not an error.
func (b *Browser) DisposeContext(ctx context.Context, name string) error {
	c, err := b.current()
	if err != nil {
		return err
	}
	b.ctxLock.Lock()
	defer b.ctxLock.Unlock()
	id, ok := b.ledger.Context(name)
	if !ok {
		return nil
	}
	if err := call(ctx, c, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": id}, nil); err != nil && !isGone(err) {
		return err
	}
	return b.ledger.DropContext(name)
}

// PoolContexts returns the names of the pool contexts the driver has recorded.
func (b *Browser) PoolContexts() []string {
	var out []string
	for name := range b.ledger.Contexts() {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Open implements browser.Browser.
func (b *Browser) Open(ctx context.Context, req browser.OpenRequest) (browser.Page, error) {
	c, err := b.current()
	if err != nil {
		return browser.Page{}, err
	}
	if req.Key == "" {
		return browser.Page{}, errors.New("open: a key is required: the page is recorded under it")
	}
	l := lockFor(b.keyLocks, &b.mu, req.Key)
	l.Lock()
	defer l.Unlock()
	if id, ok := b.ledger.PageOf(req.Key); ok {
		b.mu.Lock()
		if t, ok := b.targets[id]; ok {
			p := b.pageLocked(t)
			b.mu.Unlock()
			p, err := b.withWindow(ctx, c, p)
			return b.noteMisplaced(req, p, ""), err
		}
		b.mu.Unlock()
		// The page the key opened is gone: the record has served.
		if err := b.ledger.Closed(req.Key, id); err != nil {
			return browser.Page{}, err
		}
	}
	if req.WindowID != "" && !req.NewWindow {
		if err := b.resolveAll(ctx, c); err != nil {
			return browser.Page{}, err
		}
		b.mu.Lock()
		found := false
		for _, t := range b.targets {
			found = found || t.windowID == req.WindowID
		}
		b.mu.Unlock()
		if !found {
			return browser.Page{}, fmt.Errorf("window %s: %w", req.WindowID, browser.ErrNotFound)
		}
	}
	params := map[string]any{"url": req.URL, "background": true}
	if req.NewWindow {
		params["newWindow"] = true
	}
	if req.Context != "" {
		if !b.opts.Pool {
			return browser.Page{}, fmt.Errorf("open in context %q: the driver was not started with Pool", req.Context)
		}
		id, err := b.ensureContext(ctx, c, req.Context)
		if err != nil {
			return browser.Page{}, err
		}
		params["browserContextId"] = id
	}
	// Window choice (place.go): a tab for a named window opens from a page the
	// session owns there; createTarget (crash-consistent) otherwise.
	var id, misplaced string
	if req.WindowID != "" && !req.NewWindow {
		if id, misplaced, err = b.openInWindow(ctx, c, req); err != nil {
			return browser.Page{}, err
		}
	}
	if id == "" {
		if id, err = b.createRecorded(ctx, c, req, params); err != nil {
			return browser.Page{}, err
		}
	}
	b.mu.Lock()
	t, ok := b.targets[id]
	var p browser.Page
	if ok {
		p = b.pageLocked(t)
	} else {
		p = browser.Page{ID: id, URL: req.URL}
	}
	b.mu.Unlock()
	p, err = b.withWindow(ctx, c, p)
	if err != nil {
		return p, err
	}
	return b.noteMisplaced(req, p, misplaced), nil
}

// createRecorded creates the page of an Open and records it under the key,
// crash-consistently: an intent (the key, the url, and every page id that
// exists) is written to the ledger before Target.createTarget and replaced by
// the record when the reply comes. A key that still has an intent (a driver
// stopped between the create and the record) first resolves it from what the
// browser shows: exactly one page without an opener, recorded under no key, at
// the intent's url, in the intent's context, that did not exist when the
// intent was written, is the page it created and is recorded; none means
// nothing was created, and the page is created now; several are refused
// rather than guessed between.
func (b *Browser) createRecorded(ctx context.Context, c *conn, req browser.OpenRequest, params map[string]any) (string, error) {
	if in, ok := b.ledger.IntentOf(req.Key); ok {
		id, err := b.resolveIntent(ctx, c, in)
		if err != nil {
			return "", err
		}
		if id != "" {
			b.log.Info("adopted the page an interrupted open created", "key", req.Key, "page", id, "url", in.URL)
			return id, b.ledger.Opened(req.Key, id)
		}
	}
	if err := b.faultAt(faultBeforeIntent, ""); err != nil {
		return "", err
	}
	infos, err := b.pageInfos(ctx, c)
	if err != nil {
		return "", err
	}
	existing := make([]string, 0, len(infos))
	for _, ti := range infos {
		existing = append(existing, ti.TargetID)
	}
	in := ledger.Intent{Key: req.Key, URL: req.URL, NewWindow: req.NewWindow, Context: req.Context, Existing: existing}
	if err := b.ledger.Intend(in); err != nil {
		return "", err
	}
	if err := b.faultAt(faultAfterIntent, ""); err != nil {
		return "", err
	}
	id, err := b.createTarget(ctx, c, params)
	if err != nil {
		// The intent stays: a create whose reply was lost may still have made
		// the page, and the next Open resolves it.
		return "", err
	}
	if err := b.faultAt(faultAfterCreate, id); err != nil {
		return "", err
	}
	if err := b.ledger.Opened(req.Key, id); err != nil {
		return "", err
	}
	return id, nil
}

// pageInfos returns every page target the browser reports now, in every context.
func (b *Browser) pageInfos(ctx context.Context, c *conn) ([]targetInfo, error) {
	var r struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := call(ctx, c, "", "Target.getTargets", nil, &r); err != nil {
		return nil, err
	}
	out := r.TargetInfos[:0]
	for _, ti := range r.TargetInfos {
		if isPage(ti) {
			out = append(out, ti)
		}
	}
	return out, nil
}

// resolveIntent finds the page an interrupted open created: "" when there is
// none (create it now), an error when several pages could be it.
func (b *Browser) resolveIntent(ctx context.Context, c *conn, in ledger.Intent) (string, error) {
	infos, err := b.pageInfos(ctx, c)
	if err != nil {
		return "", err
	}
	ctxID, pooled := "", in.Context != ""
	if pooled {
		id, ok := b.ledger.Context(in.Context)
		if !ok {
			return "", nil // the context is gone, and every page of it
		}
		ctxID = id
	}
	pool := b.ledger.Contexts()
	ours := map[string]bool{}
	for _, id := range pool {
		ours[id] = true
	}
	var found []string
	for _, ti := range infos {
		switch {
		case ti.OpenerID != "",
			slices.Contains(in.Existing, ti.TargetID),
			normURL(ti.URL) != normURL(in.URL),
			b.ledger.Recorded(ti.TargetID),
			pooled && ti.BrowserContextID != ctxID,
			!pooled && ours[ti.BrowserContextID]:
			continue
		}
		found = append(found, ti.TargetID)
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("open %s under %s: an interrupted open may have created any of pages %s (none recorded, all new since): refusing to guess; close the ones that are not this window's and retry", in.URL, in.Key, strings.Join(found, ", "))
}

func (b *Browser) createTarget(ctx context.Context, c *conn, params map[string]any) (string, error) {
	u := normURL(fmt.Sprint(params["url"]))
	b.mu.Lock()
	b.ownCreate[u]++
	b.mu.Unlock()
	var r struct {
		TargetID string `json:"targetId"`
	}
	err := call(ctx, c, "", "Target.createTarget", params, &r)
	if err != nil {
		// The created page (if any) was not seen: forget the marker.
		b.mu.Lock()
		if b.ownCreate[u] > 0 {
			b.ownCreate[u]--
			if b.ownCreate[u] == 0 {
				delete(b.ownCreate, u)
			}
		}
		b.mu.Unlock()
		return "", err
	}
	return r.TargetID, nil
}

// withWindow fills in a page's window when it is not known yet.
func (b *Browser) withWindow(ctx context.Context, c *conn, p browser.Page) (browser.Page, error) {
	if p.WindowID != "" {
		return p, nil
	}
	w, err := windowFor(ctx, c, p.ID)
	if err != nil {
		if errors.Is(err, browser.ErrNotConnected) {
			return p, err
		}
		return p, nil
	}
	b.setWindow(c, p.ID, w)
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.targets[p.ID]; ok {
		return b.pageLocked(t), nil
	}
	p.WindowID = w
	return p, nil
}

// Close implements browser.Browser with the last-tab rule.
func (b *Browser) Close(ctx context.Context, req browser.CloseRequest) error {
	c, err := b.current()
	if err != nil {
		return err
	}
	if !b.has(req.ID) {
		return b.ledger.Closed(req.Key, req.ID)
	}
	if err := b.ledger.MayClose(req.Key, req.ID); err != nil {
		return err
	}
	if req.OwnsWindow {
		return b.closeOwned(ctx, c, req)
	}
	w, err := windowFor(ctx, c, req.ID)
	if err != nil {
		if isGone(err) {
			return b.ledger.Closed(req.Key, req.ID)
		}
		return err
	}
	l := lockFor(b.winLocks, &b.mu, w)
	l.Lock()
	defer l.Unlock()
	if !b.has(req.ID) {
		return b.ledger.Closed(req.Key, req.ID)
	}
	if err := b.resolveAll(ctx, c); err != nil {
		return err
	}
	b.mu.Lock()
	last := true
	for id, t := range b.targets {
		if id != req.ID && t.windowID == w {
			last = false
			break
		}
	}
	ctxID, popup := "", false
	if t, ok := b.targets[req.ID]; ok {
		ctxID, popup = t.info.BrowserContextID, t.popup
	}
	b.mu.Unlock()
	// A popup window was created for its page and cannot hold other tabs: it is
	// never the user's window, whatever the caller says.
	if last && !popup {
		if err := b.placeholder(ctx, c, req.ID, w, ctxID); err != nil {
			return fmt.Errorf("close %s: last tab of window %s: %w", req.ID, w, err)
		}
	}
	return b.closeOwned(ctx, c, req)
}

// closeOwned closes a page whose ownership was checked and drops its record.
func (b *Browser) closeOwned(ctx context.Context, c *conn, req browser.CloseRequest) error {
	if err := b.closeTarget(ctx, c, req.ID); err != nil {
		return err
	}
	return b.ledger.Closed(req.Key, req.ID)
}

func (b *Browser) has(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.targets[id]
	return ok
}

// closeTarget closes a page and waits for targetDestroyed.
func (b *Browser) closeTarget(ctx context.Context, c *conn, id string) error {
	b.mu.Lock()
	if _, ok := b.targets[id]; !ok {
		b.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	b.destroyed[id] = append(b.destroyed[id], done)
	b.mu.Unlock()
	err := call(ctx, c, "", "Target.closeTarget", map[string]any{"targetId": id}, nil)
	if err != nil && !isGone(err) {
		return err
	}
	select {
	case <-done:
		return nil
	case <-c.closed:
		return fmt.Errorf("close %s: %w", id, browser.ErrNotConnected)
	case <-ctx.Done():
		return fmt.Errorf("close %s: waiting for the page to go: %w", id, ctx.Err())
	}
}

// placeholder opens an about:blank tab in window w, next to page id which is
// about to close, and verifies where it landed.
func (b *Browser) placeholder(ctx context.Context, c *conn, id, w, ctxID string) error {
	b.phLock.Lock()
	defer b.phLock.Unlock()

	// 1. A middle click on an about:blank link inside the page: Chrome opens a
	// background tab in the page's own window, without an opener.
	pid, err := b.openFrom(ctx, c, id)
	if err == nil {
		pw, werr := windowFor(ctx, c, pid)
		if werr == nil && pw == w {
			b.setWindow(c, pid, pw)
			return nil
		}
		b.log.Info("placeholder tab landed in another window", "want", w, "got", pw, "err", werr)
		_ = b.closeTarget(ctx, c, pid)
	} else {
		b.log.V(1).Info("placeholder by click failed; trying createTarget", "page", id, "err", err)
	}
	if errors.Is(err, browser.ErrNotConnected) {
		return err
	}
	// 2. createTarget: lands in the context's last active window, which may be w.
	params := map[string]any{"url": "about:blank", "background": true}
	if ctxID != "" && b.isNonDefault(ctxID) {
		params["browserContextId"] = ctxID
	}
	pid, err = b.createTarget(ctx, c, params)
	if err != nil {
		return err
	}
	pw, err := windowFor(ctx, c, pid)
	if err == nil && pw == w {
		b.setWindow(c, pid, pw)
		return nil
	}
	_ = b.closeTarget(ctx, c, pid)
	return fmt.Errorf("cannot open an about:blank tab in window %s (landed in %s), refusing to close its last tab", w, pw)
}

func (b *Browser) isNonDefault(ctxID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.ctxNames[ctxID]
	return ok
}

// attach opens a flattened session on a page; detach ends it.
func attach(ctx context.Context, c *conn, id string) (string, func(), error) {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := call(ctx, c, "", "Target.attachToTarget", map[string]any{"targetId": id, "flatten": true}, &r); err != nil {
		if isGone(err) {
			return "", nil, fmt.Errorf("page %s: %w", id, browser.ErrNotFound)
		}
		return "", nil, err
	}
	return r.SessionID, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.call(dctx, "", "Target.detachFromTarget", map[string]any{"sessionId": r.SessionID}, nil)
	}, nil
}

// Adopt implements browser.Browser: the page's opener, as Chrome reported it in
// targetCreated, must be recorded under req.Parent, or the page must have
// appeared without an opener while an Act keyed req.Parent ran.
func (b *Browser) Adopt(_ context.Context, req browser.AdoptRequest) error {
	opener, attributed, err := b.observed(req.ID)
	if err != nil {
		return fmt.Errorf("adopt page %s: %w", req.ID, err)
	}
	return b.ledger.Adopt(req, opener, attributed)
}

// Bind implements browser.Browser.
func (b *Browser) Bind(_ context.Context, req browser.BindRequest) error {
	opener, attributed, err := b.observed(req.ID)
	if err != nil {
		return fmt.Errorf("bind tab %s: %w", req.ID, err)
	}
	return b.ledger.Bind(req, opener, attributed)
}

// observed is what the driver itself saw of a page's origin: its opener, and
// the key of the Act it appeared during (opener-less pages only).
func (b *Browser) observed(id string) (opener, attributed string, err error) {
	if _, err := b.current(); err != nil {
		return "", "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.targets[id]
	if !ok {
		return "", "", browser.ErrNotFound
	}
	return t.info.OpenerID, t.attributed, nil
}

// Release implements browser.Browser.
func (b *Browser) Release(_ context.Context, req browser.ReleaseRequest) error {
	return b.ledger.Release(req.Key, req.ID)
}

// Records returns the driver's ledger.
func (b *Browser) Records() []browser.Record { return b.ledger.Records() }

// Events implements browser.Browser.
func (b *Browser) Events() <-chan browser.Event { return b.events.out }

// Connected implements browser.Browser.
func (b *Browser) Connected() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conn != nil && b.connected
}

// Version is the browser's product string, e.g. "Chrome/156.0.8078.114".
func (b *Browser) Version() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.version
}
