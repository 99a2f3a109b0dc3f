package cdp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
)

// decoy is a control-plane port stand-in: a TCP listener on loopback that
// records every connection a client made to it and every byte it sent, and
// answers HTTP permissively (CORS *, any method), so that a pageRoute that needs an
// answer to go on (a preflight, a websocket upgrade) is not stopped by the decoy
// itself. Reaching it at all, with anything, is the failure.
type decoy struct {
	ln       net.Listener
	port     int
	accepted atomic.Int64 // TCP connections
	spoke    atomic.Int64 // connections that sent at least one byte
	mu       sync.Mutex
	requests []string // "METHOD path" of each HTTP request
}

func newDecoy(t *testing.T) *decoy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &decoy{port: ln.Addr().(*net.TCPAddr).Port}
	d.ln = &countingListener{Listener: ln, d: d}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.requests = append(d.requests, r.Method+" "+r.URL.RequestURI())
		d.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Methods", "*")
		w.Header().Set("Access-Control-Allow-Headers", "*")
		w.Header().Set("Content-Type", "application/javascript")
		fmt.Fprint(w, "/* reached */")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(d.ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return d
}

func (d *decoy) reached() bool { return d.accepted.Load() > 0 }

func (d *decoy) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("%d connection(s), %d with bytes, requests %q", d.accepted.Load(), d.spoke.Load(), d.requests)
}

type countingListener struct {
	net.Listener
	d *decoy
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.d.accepted.Add(1)
		c = &countingConn{Conn: c, d: l.d}
	}
	return c, err
}

type countingConn struct {
	net.Conn
	d    *decoy
	once sync.Once
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.once.Do(func() { c.d.spoke.Add(1) })
	}
	return n, err
}

// pageRoute is one way a page can send something to a port: its page's html
// (target is http://127.0.0.1:<port>/hit/<name>), the response headers that
// page needs, and its service worker's script when it registers one.
type pageRoute struct {
	name    string
	headers map[string]string
	html    string // %[1]s: the target url (a JS string literal is %[2]s), %[3]s: the port
	sw      string // the service worker script, same verbs
	// gap, when set, is why this route still reaches a blocked port: a known
	// gap (docs/design.md, Known gaps), logged, not failed.
	gap string
}

const (
	gapWebSocket = "the Fetch domain does not see websockets; the DevTools endpoint refuses a page's Origin, tabwarden's own ports see a GET they answer without effect"
	gapTURN      = "WebRTC's TURN client connects from the browser process past the Fetch domain and sends STUN bytes (not HTTP)"
)

var pageRoutes = []pageRoute{
	{name: "fetch-no-cors", html: `<script>fetch(%[2]s, {mode: "no-cors"}).catch(() => {})</script>`},
	{name: "websocket", html: `<script>new WebSocket(%[2]s.replace("http:", "ws:"))</script>`, gap: gapWebSocket},
	{name: "eventsource", html: `<script>new EventSource(%[2]s)</script>`},
	{name: "xhr", html: `<script>const x = new XMLHttpRequest(); x.open("POST", %[2]s); x.send("x")</script>`},
	{name: "dedicated-worker-fetch", html: `<script>new Worker(URL.createObjectURL(new Blob(["fetch(" + JSON.stringify(%[2]s) + ", {mode: 'no-cors'})"], {type: "text/javascript"})))</script>`},
	{name: "dedicated-worker-importScripts", html: `<script>new Worker(URL.createObjectURL(new Blob(["importScripts(" + JSON.stringify(%[2]s) + ")"], {type: "text/javascript"})))</script>`},
	{name: "dedicated-worker-websocket", html: `<script>new Worker(URL.createObjectURL(new Blob(["new WebSocket(" + JSON.stringify(%[2]s.replace("http:", "ws:")) + ")"], {type: "text/javascript"})))</script>`, gap: gapWebSocket},
	{name: "shared-worker-fetch", html: `<script>new SharedWorker(URL.createObjectURL(new Blob(["fetch(" + JSON.stringify(%[2]s) + ", {mode: 'no-cors'})"], {type: "text/javascript"})))</script>`},
	{name: "service-worker-fetch", html: `<script>navigator.serviceWorker.register("sw.js")</script>`, sw: `fetch(%[2]s, {mode: "no-cors"}).catch(() => {})`},
	{name: "service-worker-importScripts", html: `<script>navigator.serviceWorker.register("sw.js")</script>`, sw: `try { importScripts(%[2]s) } catch (e) {}`},
	{name: "service-worker-websocket", html: `<script>navigator.serviceWorker.register("sw.js")</script>`, sw: `new WebSocket(%[2]s.replace("http:", "ws:"))`, gap: gapWebSocket},
	{name: "sendBeacon", html: `<script>navigator.sendBeacon(%[2]s, "x")</script>`},
	{name: "keepalive-on-pagehide", html: `<script>addEventListener("pagehide", () => fetch(%[2]s, {keepalive: true, mode: "no-cors", method: "POST", body: "x"})); setTimeout(() => location.href = "/blank", 300)</script>`},
	{name: "fetchLater", html: `<script>try { fetchLater(%[2]s, {activateAfter: 0}) } catch (e) { document.title = String(e) }</script>`},
	{name: "a-ping", html: `<a id="a" ping="%[1]s" href="/blank">go</a><script>document.getElementById("a").click()</script>`},
	{name: "form-post", html: `<iframe name="sink"></iframe><form method="POST" action="%[1]s" target="sink"><input name="x" value="y"></form><script>document.forms[0].submit()</script>`},
	{name: "img", html: `<img src="%[1]s">`},
	{name: "css-import", html: `<style>@import url("%[1]s");</style>`},
	{name: "link-prefetch", html: `<link rel="prefetch" href="%[1]s">`},
	{name: "link-preload", html: `<link rel="preload" as="script" href="%[1]s">`},
	{name: "link-preconnect", html: `<link rel="preconnect" href="http://127.0.0.1:%[3]s">`},
	{name: "link-icon", html: `<link rel="icon" href="%[1]s">`},
	{name: "speculation-prefetch", html: `<script type="speculationrules">{"prefetch": [{"source": "list", "urls": [%[2]s], "eagerness": "immediate"}]}</script>`},
	{name: "speculation-prerender", html: `<script type="speculationrules">{"prerender": [{"source": "list", "urls": [%[2]s], "eagerness": "immediate"}]}</script>`},
	{name: "csp-report-uri", headers: map[string]string{"Content-Security-Policy": "img-src 'none'; report-uri %[1]s"}, html: `<img src="/none.png">`},
	{name: "reporting-api", headers: map[string]string{"Reporting-Endpoints": `default="%[1]s"`, "Content-Security-Policy": "img-src 'none'; report-to default"}, html: `<img src="/none.png">`},
	{name: "fedcm", html: `<script>navigator.credentials.get({identity: {providers: [{configURL: %[2]s + "/config.json", clientId: "x"}]}}).catch(() => {})</script>`},
	{name: "payment-method-manifest", html: `<script>try { new PaymentRequest([{supportedMethods: "http://127.0.0.1:%[3]s/pay"}], {total: {label: "x", amount: {currency: "USD", value: "1"}}}).canMakePayment().catch(() => {}) } catch (e) { document.title = String(e) }</script>`},
	{name: "webrtc-turn-tcp", html: `<script>const pc = new RTCPeerConnection({iceTransportPolicy: "relay", iceServers: [{urls: "turn:127.0.0.1:%[3]s?transport=tcp", username: "u", credential: "c"}]}); pc.createDataChannel("x"); pc.createOffer().then(o => pc.setLocalDescription(o))</script>`, gap: gapTURN},
	{name: "webrtc-stun", html: `<script>const pc = new RTCPeerConnection({iceServers: [{urls: "stun:127.0.0.1:%[3]s"}]}); pc.createDataChannel("x"); pc.createOffer().then(o => pc.setLocalDescription(o))</script>`},
	{name: "download", html: `<a id="a" href="%[1]s" download>d</a><script>document.getElementById("a").click()</script>`},
}

// routeSite serves each pageRoute's page at /<name>/?p=<port> (its service worker
// at /<name>/sw.js?p=<port>), and /blank.
func routeSite(t *testing.T) *httptest.Server {
	t.Helper()
	byName := map[string]pageRoute{}
	for _, r := range pageRoutes {
		byName[r.name] = r
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/blank" {
			fmt.Fprint(w, "<title>blank</title>")
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		rt, ok := byName[parts[0]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		port := r.URL.Query().Get("p")
		target := "http://127.0.0.1:" + port + "/hit/" + rt.name
		js := strconv.Quote(target)
		if len(parts) > 1 && parts[1] == "sw.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, rt.sw, target, js, port)
			return
		}
		if len(parts) > 1 {
			http.NotFound(w, r)
			return
		}
		for k, v := range rt.headers {
			w.Header().Set(k, fmt.Sprintf(v, target))
		}
		w.Header().Set("Content-Type", "text/html")
		// The service worker's script url carries the port too.
		html := strings.ReplaceAll(rt.html, `register("sw.js")`, `register("sw.js?p=`+port+`")`)
		fmt.Fprintf(w, "<title>%s</title>", rt.name)
		fmt.Fprintf(w, html, target, js, port)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestNoPageRouteReachesABlockedPort (invariant 8) attacks the cdp driver's
// browser-wide interception (boundary.go) from pages, by every pageRoute a page has
// to send something to a port: fetch, XHR, websocket, EventSource, workers of
// each kind (their fetch, importScripts and websocket), beacons, keepalive and
// fetchLater, <a ping>, forms, subresources, prefetch/preconnect/speculation
// rules, CSP and Reporting API reports, FedCM, Payment method manifests, WebRTC
// TURN/STUN and downloads. Chromium is launched as `tabwarden up` launches it
// (over a pipe: only Options.BlockPorts guard tabwarden's own endpoints). Each
// pageRoute runs twice: against a decoy port the driver does not block (the pageRoute
// must reach it, or this Chromium does not have the pageRoute and it proves
// nothing), and against a decoy port in BlockPorts, which must see no
// connection at all.
func TestNoPageRouteReachesABlockedPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := chromium.Launch(ctx, chromium.Options{Pipe: true, ExtraArgs: []string{
		// Deliver Reporting API reports in 100 ms, not a minute: only faster.
		"--short-reporting-delay",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	site := routeSite(t)

	// Every route in the default browser context, and a few in a pool
	// session's own context (Target.createBrowserContext after the driver's
	// Fetch.enable): the interception is the browser's, not a context's.
	type attempt struct {
		label   string // the route's name, "pool/" before it in the pool context
		r       pageRoute
		context string
	}
	var attempts []attempt
	for _, r := range pageRoutes {
		attempts = append(attempts, attempt{r.name, r, ""})
		switch r.name {
		case "fetch-no-cors", "dedicated-worker-fetch", "service-worker-fetch", "img", "csp-report-uri", "keepalive-on-pagehide":
			attempts = append(attempts, attempt{"pool/" + r.name, r, "session-a"})
		}
	}
	open, blocked := map[string]*decoy{}, map[string]*decoy{}
	var ports []int
	for _, a := range attempts {
		open[a.label], blocked[a.label] = newDecoy(t), newDecoy(t)
		ports = append(ports, blocked[a.label].port)
	}
	b, err := New(ctx, "pipe", Options{Dial: p.Dial, BlockPorts: ports, Pool: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	go func() {
		for range b.Events() {
		}
	}()
	win, err := b.Open(ctx, browser.OpenRequest{Key: "attacker", URL: site.URL + "/blank", NewWindow: true})
	if err != nil {
		t.Fatal(err)
	}
	// Each route's page in a tab of that window (a window of its own in the
	// pool context), against the open decoy and then the blocked one.
	run := func(which map[string]*decoy) {
		for _, a := range attempts {
			u := fmt.Sprintf("%s/%s/?p=%d", site.URL, a.r.name, which[a.label].port)
			req := browser.OpenRequest{Key: "attacker-" + a.label + "-" + strconv.Itoa(which[a.label].port), URL: u, WindowID: win.WindowID}
			if a.context != "" {
				req.WindowID, req.NewWindow, req.Context = "", true, a.context
			}
			if _, err := b.Open(ctx, req); err != nil {
				t.Fatalf("open %s: %v", u, err)
			}
		}
	}
	run(open)
	run(blocked)
	// Let every route run: until each open decoy was reached, or 20 s.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		all := true
		for _, d := range open {
			all = all && d.reached()
		}
		if all {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // the blocked pages started as late as the open ones finished
	var proven, holes, gaps []string
	for _, a := range attempts {
		r := a.r
		r.name = a.label
		o, k := open[a.label], blocked[a.label]
		switch {
		case k.spoke.Load() > 0 && r.gap != "":
			gaps = append(gaps, r.name)
			t.Logf("%-32s KNOWN GAP, reached blocked port %d: %s (%s)", r.name, k.port, k, r.gap)
		case k.spoke.Load() > 0:
			holes = append(holes, r.name)
			t.Errorf("%s reached blocked port %d: %s (its unblocked twin: %s)", r.name, k.port, k, o)
		case o.reached() && k.reached():
			// A TCP handshake that never carried a byte (Chromium's
			// preconnect of an origin a page names): nothing reached the
			// server behind the port.
			proven = append(proven, r.name)
			t.Logf("%-32s blocked (a connection without a byte: %s; its unblocked twin: %s)", r.name, k, o)
		case o.reached():
			proven = append(proven, r.name)
			t.Logf("%-32s blocked (its unblocked twin: %s)", r.name, o)
		default:
			t.Logf("%-32s not available in this Chromium (reached neither port): proves nothing", r.name)
		}
	}
	if len(proven) < 20 {
		t.Errorf("only %d routes reached even the unblocked port: the attack pages did not run", len(proven))
	}
	t.Logf("known gaps: %v", gaps)
	t.Logf("routes blocked: %d %v; holes: %d %v", len(proven), proven, len(holes), holes)
}

// TestBrowserSideFetchesNeverReachTheDevToolsEndpoint (invariant 8): the
// requests Chromium's browser process makes on a page's behalf, not the page's
// own loaders, and which TestNoPageRouteReachesABlockedPort found the Fetch
// interception does not pause: FedCM's fetch of an identity provider's
// configURL (a GET of any path the page names) and the Payment Request API's
// fetch of a payment method manifest (a HEAD of any path). A page of the
// driver aims them at /json/close/<id> of the DevTools endpoint of the
// Chromium the driver drives at a port (as the e2e suites, `up --cdp-endpoint`
// and `agent --cdp-endpoint http://…` do), <id> being a tab of the user's.
// The user's tabs must stay open.
func TestBrowserSideFetchesNeverReachTheDevToolsEndpoint(t *testing.T) {
	ctx := tctx(t)
	b, _ := newDriver(t, Options{})
	dev := strings.TrimPrefix(chrome.HTTPURL, "http://")
	// The user's own tabs, opened by the user's hand (the DevTools HTTP API).
	victim := func() string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, chrome.HTTPURL+"/json/new?"+site.Path("/quiet?user=victim"), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var p chromiumPage
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.ID == "" {
			t.Fatalf("PUT /json/new: %v %+v", err, p)
		}
		return p.ID
	}
	attacks := map[string]string{
		"fedcm":                   `<script>navigator.credentials.get({identity: {providers: [{configURL: "http://%s/json/close/%s", clientId: "x"}]}}).catch(() => {})</script>`,
		"payment-method-manifest": `<script>new PaymentRequest([{supportedMethods: "http://%s/json/close/%s"}], {total: {label: "x", amount: {currency: "USD", value: "1"}}}).canMakePayment().catch(() => {})</script>`,
	}
	victims := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.Trim(r.URL.Path, "/")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title>"+attacks[name], name, dev, victims[name])
	}))
	defer srv.Close()
	for name := range attacks {
		victims[name] = victim()
	}
	for name := range attacks {
		p, err := b.Open(ctx, browser.OpenRequest{Key: "attack-" + name, URL: srv.URL + "/" + name, NewWindow: true})
		if err != nil {
			t.Fatal(err)
		}
		waitTitle(t, b, p.ID, name)
	}
	time.Sleep(5 * time.Second)
	open := chromiumPages(t)
	for name, id := range victims {
		if _, ok := open[id]; !ok {
			t.Errorf("%s: a page closed the user's tab %s through the DevTools endpoint", name, id)
		} else {
			_ = userClose(t, id)
		}
	}
}
