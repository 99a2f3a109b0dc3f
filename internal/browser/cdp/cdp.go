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
//
// CDP itself is spoken through the wire subpackage (typed commands and
// events). The files split the driver by concern: cdp.go (Browser, New,
// options), connect.go (dial, discovery, reconnect), model.go (targets, events,
// Snapshot, Adopt and Bind), windows.go (window lookup, popups), place.go (a
// tab in a named window), open.go (intents, the crash-consistent create),
// close.go (Close and the last-tab placeholder), contexts.go (the pool),
// act.go (actions: Act and its steps), pagesession.go (the session on a page,
// dialogs) and world.go (the page script's isolated world).
package cdp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
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
	// Instance names the browser process the driver speaks to, when its
	// launcher knows it: an id made for one launch and never reused (`tabwarden
	// up` makes one for each Chromium it launches). The ledger's records of
	// another instance are void, kept apart as lost records (browser.LostRecords):
	// their pages went with the browser. Empty: the browser is not known to be
	// new (a Chrome at an endpoint), and the records stand.
	Instance string
	// BlockPorts are ports no page of the browser may reach, on any host, in
	// addition to the DevTools endpoint's own port (boundary.go): tabwarden's
	// own endpoints, or the real DevTools port behind a forwarded endpoint.
	BlockPorts []int
	// Dial, when set, makes the connection instead of the endpoint: a browser
	// tabwarden launched over --remote-debugging-pipe (chromium.Process.Dial).
	// The endpoint then is only a name in logs; nothing listens on a port.
	Dial func(ctx context.Context, onEvent func(wire.Event)) (*wire.Conn, error)
	// DialogTimeout is how long a JavaScript dialog a page opened waits for a
	// dialog step before the driver dismisses it (default browser.DialogTimeout).
	DialogTimeout time.Duration

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

// Browser is the CDP driver. Create it with New; end it with Shutdown.
type Browser struct {
	endpoint string
	opts     Options
	blocked  map[string]bool // control ports no page reaches (boundary.go)
	log      logr.Logger
	events   *eventQueue

	mu        sync.Mutex
	conn      *wire.Conn // current connection; nil while disconnected
	connected bool
	epoch     int64
	version   string
	targets   map[string]*target
	seq       int64
	ledger    *ledger.Ledger
	ctxNames  map[string]string // browserContextId → name (or id when not ours)
	acts      []actEntry
	sessions  map[string]*pageSession // page id → the driver's session for actions (pagesession.go)
	actSeq    int64
	ownCreate map[string]int // url → createTarget calls in flight
	// leaving holds, by an Open's marker url, the url the Open navigates its
	// page to: what the page is reported at until it commits a document
	// (open.go, leaveMarker).
	leaving map[string]*leave
	// phWaiters are the middle clicks of openFrom waiting for their tab, by
	// the nonce url of the link clicked: only that tab carries it.
	phWaiters map[string]chan string
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

var (
	_ browser.Browser     = (*Browser)(nil)
	_ browser.LostRecords = (*Browser)(nil)
)

// New connects to a browser. endpoint is a browser websocket URL
// (ws://host:port/devtools/browser/…), the DevTools HTTP address
// (http://host:port), resolved through /json/version on every (re)connect, or
// the unix socket of `tabwarden cdp-bridge` (unix:/path/to.sock or
// unix:///path/to.sock), which serves a Chromium's --remote-debugging-pipe and
// has no port (only Options.BlockPorts are blocked then). The
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
		blocked:   controlPorts(endpoint, opts.BlockPorts),
		opts:      opts,
		log:       opts.Logger,
		events:    newEventQueue(),
		targets:   map[string]*target{},
		sessions:  map[string]*pageSession{},
		ctxNames:  map[string]string{},
		ownCreate: map[string]int{},
		leaving:   map[string]*leave{},
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
	if n, err := l.SetInstance(opts.Instance); err != nil {
		return nil, err
	} else if n > 0 {
		b.log.Info("The ledger's records are of another browser instance, which is gone with its pages", "records", n, "instance", opts.Instance)
	}
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
			c.Close()
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

// current returns the live connection or ErrNotConnected.
func (b *Browser) current() (*wire.Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil || !b.connected {
		return nil, browser.ErrNotConnected
	}
	return b.conn, nil
}

// call runs a browser-level or session command and maps a dropped connection to
// ErrNotConnected.
func call[R any](ctx context.Context, c *wire.Conn, session string, cmd wire.Command[R]) (R, error) {
	r, err := wire.Call(ctx, c, session, cmd)
	if errors.Is(err, wire.ErrClosed) {
		return r, fmt.Errorf("%s: %w", cmd.Method(), browser.ErrNotConnected)
	}
	return r, err
}

// send is call in two halves: the command goes out now, and wait returns its
// reply. Commands on one session are handled in order, so a command whose
// reply the next one does not need is sent and awaited after it: the two cost
// one round trip to the browser, not two (on a remote browser, one network
// RTT each).
func send[R any](c *wire.Conn, session string, cmd wire.Command[R]) (wait func(context.Context) (R, error)) {
	p, err := wire.Send(c, session, cmd)
	return func(ctx context.Context) (R, error) {
		var r R
		if err == nil {
			r, err = p.Wait(ctx)
		}
		if errors.Is(err, wire.ErrClosed) {
			return r, fmt.Errorf("%s: %w", cmd.Method(), browser.ErrNotConnected)
		}
		return r, err
	}
}

// attach opens a flattened session on a page; detach ends it.
func attach(ctx context.Context, c *wire.Conn, id string) (string, func(), error) {
	r, err := call(ctx, c, "", wire.AttachToTarget{TargetID: id, Flatten: true})
	if err != nil {
		if wire.IsGone(err) {
			return "", nil, fmt.Errorf("page %s: %w", id, browser.ErrNotFound)
		}
		return "", nil, err
	}
	return r.SessionID, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = wire.Call(dctx, c, "", wire.DetachFromTarget{SessionID: r.SessionID})
	}, nil
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

// LostRecord implements browser.LostRecords.
func (b *Browser) LostRecord(key string) (browser.Record, bool) { return b.ledger.LostRecord(key) }

// ForgetLost implements browser.LostRecords.
func (b *Browser) ForgetLost(key string) error { return b.ledger.ForgetLost(key) }

// Records returns the driver's ledger.
func (b *Browser) Records() []browser.Record { return b.ledger.Records() }

// Events implements browser.Browser.
func (b *Browser) Events() <-chan browser.Event { return b.events.out }

// FlushEvents implements browser.EventFlusher: events wait in a queue between
// the connection's reader and Events().
func (b *Browser) FlushEvents(ctx context.Context) error { return b.events.flush(ctx) }

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
