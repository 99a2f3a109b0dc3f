package extension

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Defaults of Options.
const (
	DefaultAddr           = "127.0.0.1:47321"
	DefaultMaxFrameBytes  = 2 << 20
	DefaultMaxBodyBytes   = 1 << 10
	DefaultHelloTimeout   = 5 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultCommandTimeout = 30 * time.Second
	DefaultReadTimeout    = 5 * time.Second
	DefaultMaxConns       = 64

	// DefaultExtensionID is the id Chrome gives tabwarden's extension: it is derived
	// from the public key in extension/manifest.json ("key"), so every unpacked load
	// of that directory, on any machine, has this id. The host pins it.
	DefaultExtensionID = "ccmkkgpkcdffojcckjbbmekkmffccmkl"
	// ExtensionIDEnv overrides DefaultExtensionID when Options.ExtensionID is empty
	// (for developers who load a build with another key).
	ExtensionIDEnv = "TABWARDEN_EXTENSION_ID"
)

// Options configure a Host.
type Options struct {
	// Addr is the TCP listen address; default 127.0.0.1:47321. Only loopback IP
	// literals (or localhost, meaning 127.0.0.1) are accepted. Port 0 picks one.
	Addr string
	// StateDir holds the pairing state (paired origin and sha256 of the token, mode
	// 0600) and the control socket `tabwarden pair` talks to. Required; created with
	// mode 0700 (an existing directory is tightened to 0700).
	StateDir string
	Logger   logr.Logger
	// MaxFrameBytes bounds one WebSocket message (default 2 MiB: an act's screenshot is up
	// to 768 KiB, 1 MiB in base64); a larger one closes
	// the connection with 1009.
	MaxFrameBytes int64
	// MaxBodyBytes bounds the body of POST /v1/pair (default 1 KiB).
	MaxBodyBytes int64
	// HelloTimeout is how long a new connection may take to send hello (default 5 s).
	HelloTimeout time.Duration
	// IdleTimeout drops a connection that sends nothing for this long (default 60 s;
	// the extension sends a frame at least every 20 s).
	IdleTimeout time.Duration
	// CommandTimeout bounds a command whose context has no deadline (default 30 s).
	CommandTimeout time.Duration
	// ReadTimeout bounds reading a request's headers, and the whole body of POST
	// /v1/pair; it is also how long an idle keep-alive connection is kept (default 5 s).
	ReadTimeout time.Duration
	// MaxConns caps the TCP connections served at once (default 64); more are closed
	// as soon as they are accepted.
	MaxConns int
	// ExtensionID is the only extension that may pair and connect: its origin
	// chrome-extension://<ExtensionID>. Default: $TABWARDEN_EXTENSION_ID, else
	// DefaultExtensionID (the id of extension/ with its manifest key).
	ExtensionID string
	// Now is the clock for pairing codes (default time.Now).
	Now func() time.Time
}

// Host is the loopback server the extension connects to, and the browser.Browser
// driven through it. Create it with New, then Start or Serve.
type Host struct {
	opts      Options
	log       logr.Logger
	now       func() time.Time
	listenIP  netip.Addr
	statePath string
	sockPath  string

	mu       sync.Mutex
	started  bool
	closed   bool
	port     int
	state    *pairState // nil while unpaired
	code     *pendingCode
	burned   bool     // the last code was burned by wrong guesses (until a new one is minted)
	sess     *session // the live extension connection, if any
	epoch    int64    // starts at a random value per process
	idPrefix string   // random per process: command ids never repeat across restarts
	nextCmd  uint64
	model    model
	events   chan browser.Event
	dropped  int // events dropped because nobody consumed them
	tcpLn    net.Listener
	limitLn  *limitListener
	origin   string // chrome-extension://<ExtensionID>
	httpSrv  *http.Server
	ctlSrv   *http.Server
	serveErr chan error
	ctlUID   int // the only uid the control socket serves
	// handshaking counts connections that have not said hello yet.
	handshaking int
	driver      *Driver
}

const (
	stateFileName  = "extension-pairing.json"
	socketFileName = "agent.sock"
)

// New validates the options, prepares the state directory and loads an existing
// pairing. It does not listen yet.
func New(opts Options) (*Host, error) {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	ip, err := loopbackListenIP(opts.Addr)
	if err != nil {
		return nil, err
	}
	if opts.StateDir == "" {
		return nil, errors.New("extension host: a state directory is required (it stores the pairing)")
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.HelloTimeout <= 0 {
		opts.HelloTimeout = DefaultHelloTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = DefaultCommandTimeout
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.ExtensionID == "" {
		opts.ExtensionID = os.Getenv(ExtensionIDEnv)
	}
	if opts.ExtensionID == "" {
		opts.ExtensionID = DefaultExtensionID
	}
	if !validExtensionOrigin("chrome-extension://" + opts.ExtensionID) {
		return nil, fmt.Errorf("extension host: extension id %q: want 32 letters a-p, as chrome://extensions shows it", opts.ExtensionID)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	dir, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("extension host: state directory: %w", err)
	}
	opts.StateDir = dir
	h := &Host{
		opts:      opts,
		log:       opts.Logger.WithName("extension-host"),
		now:       opts.Now,
		listenIP:  ip,
		statePath: filepath.Join(dir, stateFileName),
		sockPath:  filepath.Join(dir, socketFileName),
		ctlUID:    os.Getuid(),
		events:    make(chan browser.Event, 4096),
		model:     newModel(),
		epoch:     randomEpochStart() - 1,
		idPrefix:  hex.EncodeToString(randomBytes(8)),
		origin:    "chrome-extension://" + opts.ExtensionID,
	}
	h.driver = &Driver{h: h}
	if err := h.prepareStateDir(); err != nil {
		return nil, err
	}
	st, err := loadState(h.statePath, h.log)
	if err != nil {
		return nil, err
	}
	h.state = st
	if st != nil {
		h.log.Info("pairing loaded", "origin", st.Origin, "pairedAt", st.PairedAt)
		if st.Origin != h.origin {
			h.log.Info("the paired extension is not the pinned one: it cannot connect until the pinned extension pairs",
				"paired", st.Origin, "pinned", h.origin)
		}
	}
	return h, nil
}

// loopbackListenIP accepts host:port where host is a loopback IP literal or
// localhost (bound as 127.0.0.1); anything else is refused.
func loopbackListenIP(addr string) (netip.Addr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("extension host: listen address %q: %w", addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return netip.Addr{}, fmt.Errorf("extension host: listen address %q: bad port", addr)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" || !ip.Unmap().IsLoopback() {
		return netip.Addr{}, fmt.Errorf("extension host: refusing to listen on %q: the extension host serves this machine only; "+
			"use a loopback address such as %s", addr, DefaultAddr)
	}
	return ip.Unmap(), nil
}

func (h *Host) prepareStateDir() error {
	dir := h.opts.StateDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("extension host: state directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("extension host: state directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("extension host: state directory %s is not a directory", dir)
	}
	if err := checkOwner(fi); err != nil {
		return fmt.Errorf("extension host: state directory %s: %w", dir, err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("extension host: state directory %s must be private (0700): %w", dir, err)
		}
		h.log.Info("tightened state directory to 0700", "dir", dir, "was", fi.Mode().Perm().String())
	}
	return nil
}

// Start listens on the loopback address and on the control socket and serves in the
// background until ctx ends or Close is called.
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	if h.started || h.closed {
		h.mu.Unlock()
		return errors.New("extension host: already started")
	}
	h.started = true
	h.mu.Unlock()

	_, port, _ := net.SplitHostPort(h.opts.Addr)
	ln, err := net.Listen("tcp", net.JoinHostPort(h.listenIP.String(), port))
	if err != nil {
		return fmt.Errorf("extension host: listen: %w", err)
	}
	ctlLn, err := h.listenControl()
	if err != nil {
		_ = ln.Close() // best-effort cleanup
		return err
	}
	errorLog := log.New(logWriter{h.log.V(1)}, "", 0)
	limited := newLimitListener(ln, h.opts.MaxConns, h.log)
	h.mu.Lock()
	h.tcpLn = ln
	h.limitLn = limited
	h.port = ln.Addr().(*net.TCPAddr).Port
	h.httpSrv = &http.Server{
		Handler: h,
		// Headers within ReadTimeout; /v1/pair also bounds its body (handlePair); the
		// WebSocket has its own hello and idle deadlines.
		ReadHeaderTimeout: h.opts.ReadTimeout,
		IdleTimeout:       h.opts.ReadTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          errorLog,
	}
	h.ctlSrv = &http.Server{
		Handler:           http.HandlerFunc(h.serveControl),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          errorLog,
	}
	h.serveErr = make(chan error, 2)
	httpSrv, ctlSrv := h.httpSrv, h.ctlSrv
	h.mu.Unlock()

	go func() {
		if err := httpSrv.Serve(limited); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.serveErr <- fmt.Errorf("extension host: %w", err)
		}
	}()
	go func() {
		if err := ctlSrv.Serve(ctlLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.serveErr <- fmt.Errorf("extension host control socket: %w", err)
		}
	}()
	context.AfterFunc(ctx, func() { _ = h.Close() })
	h.log.Info("extension host listening", "addr", ln.Addr().String(), "control", h.sockPath, "paired", h.Paired(), "extension", h.origin)
	return nil
}

// Serve is Start, then blocks until ctx ends (nil) or serving fails (the error).
func (h *Host) Serve(ctx context.Context) error {
	if err := h.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return h.Close()
	case err := <-h.serveErr:
		_ = h.Close()
		return err
	}
}

// Close stops serving, drops the extension connection (pending commands fail with
// browser.ErrNotConnected), removes the control socket and closes Events().
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	if s := h.sess; s != nil {
		h.detachLocked(s)
		go func() { _ = s.c.Close(1001, "agent shutting down") }() // best effort: the connection is going away either way
	}
	h.closed = true
	close(h.events)
	httpSrv, ctlSrv := h.httpSrv, h.ctlSrv
	h.mu.Unlock()
	var errs []error
	if httpSrv != nil {
		errs = append(errs, httpSrv.Close())
	}
	if ctlSrv != nil {
		errs = append(errs, ctlSrv.Close())
	}
	return errors.Join(errs...)
}

// Addr is the address the host listens on (after Start), e.g. 127.0.0.1:47321.
func (h *Host) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tcpLn == nil {
		return ""
	}
	return h.tcpLn.Addr().String()
}

// Paired reports whether an extension is paired.
func (h *Host) Paired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state != nil
}

// ExtensionOrigin is the only origin that may pair and connect:
// chrome-extension://<Options.ExtensionID>.
func (h *Host) ExtensionOrigin() string { return h.origin }

// PairedOrigin is the chrome-extension:// origin that paired, or "".
func (h *Host) PairedOrigin() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == nil {
		return ""
	}
	return h.state.Origin
}

// --- request checks -------------------------------------------------------------

var extensionOriginRE = regexp.MustCompile(`^chrome-extension://[a-p]{32}$`)

// validExtensionOrigin: exactly chrome-extension://<32 chars a-p>, nothing more.
func validExtensionOrigin(origin string) bool { return extensionOriginRE.MatchString(origin) }

// peerIsLoopback reports whether a RemoteAddr (ip:port) is a loopback address.
func peerIsLoopback(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := ap.Addr()
	return ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// hostAllowed: the Host header must name this listener exactly (DNS-rebinding
// defence): 127.0.0.1:<port> (the listen IP) or localhost:<port>.
func (h *Host) hostAllowed(host string) bool {
	h.mu.Lock()
	port := strconv.Itoa(h.port)
	h.mu.Unlock()
	return host == net.JoinHostPort(h.listenIP.String(), port) || strings.EqualFold(host, "localhost:"+port)
}

// deny answers a refused request without CORS headers and without detail beyond
// the reason.
func deny(w http.ResponseWriter, status int, reason string) { denyWhy(w, status, reason, "") }

// denyWhy is deny with a message for the user (no secrets in it).
func denyWhy(w http.ResponseWriter, status int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body := map[string]string{"error": reason}
	if message != "" {
		body["message"] = message
	}
	_ = json.NewEncoder(w).Encode(body)
}

// ServeHTTP applies the checks every request passes, then routes.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !peerIsLoopback(r.RemoteAddr) {
		h.log.V(1).Info("refused request: non-loopback peer", "remote", r.RemoteAddr)
		deny(w, http.StatusForbidden, "loopback_only")
		return
	}
	if !h.hostAllowed(r.Host) {
		h.log.V(1).Info("refused request: Host header", "remote", r.RemoteAddr, "host", clip(r.Host, 128))
		deny(w, http.StatusMisdirectedRequest, "bad_host")
		return
	}
	// Only the pinned extension: a web page, another extension, or a copy of ours
	// built with another key can neither pair nor connect.
	origins := r.Header.Values("Origin")
	if len(origins) != 1 || origins[0] != h.origin {
		h.log.V(1).Info("refused request: origin", "remote", r.RemoteAddr, "origin", clip(strings.Join(origins, ","), 128), "path", clip(r.URL.Path, 128))
		deny(w, http.StatusForbidden, "origin_not_allowed")
		return
	}
	origin := origins[0]
	switch r.URL.Path {
	case "/v1/pair":
		h.handlePair(w, r, origin)
	case "/v1/connect":
		h.handleConnect(w, r, origin)
	default:
		deny(w, http.StatusNotFound, "not_found")
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// logWriter adapts net/http's error log to logr.
type logWriter struct{ l logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

// limitListener serves at most max connections at once; a connection beyond that is
// closed as soon as it is accepted (the client sees the refusal at once instead of
// waiting in the backlog), so held-open requests cannot pile up without bound.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	log     logr.Logger
	refused atomic.Int64
}

func newLimitListener(ln net.Listener, max int, log logr.Logger) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), log: log}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			if n := l.refused.Add(1); n == 1 || n%1000 == 0 {
				l.log.Info("refusing connections beyond the limit", "max", cap(l.sem), "refused", n)
			}
			_ = c.Close() // best effort: the connection is going away either way
		}
	}
}

// active is the number of connections being served.
func (l *limitListener) active() int { return len(l.sem) }

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
