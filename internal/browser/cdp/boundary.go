package cdp

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// The browser boundary (DESIGN "The browser boundary", invariant 8): no page
// reaches the browser's control plane. When the driver reaches Chrome through a
// DevTools port, every request of every target of the browser (pages, frames,
// workers, service workers, any browser context) to a control port is paused
// by a browser-level Fetch.enable (interceptPatterns; requests to other ports
// are not paused) and failed, on any host: an alias of the address (localhost,
// 127.1, [::1], 0x7f000001, a name that resolves to loopback, another address
// of the machine, DNS rebinding) cannot get past a rule that does not look at
// the host. Redirects are paused hop by hop. WebSockets are not seen by the Fetch domain: Chrome itself refuses
// a DevTools websocket whose Origin is not allowed, so a Chrome driven this way
// must not run with --remote-allow-origins=* (docs/threat-model.md).

// controlPorts are the ports a page never reaches: the endpoint's own and
// Options.BlockPorts.
func controlPorts(endpoint string, extra []int) map[string]bool {
	ports := map[string]bool{}
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		if p := effectivePort(u); p != "" {
			// As a url a page names it: leading zeros dropped (":09222" is 9222).
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				p = strconv.Itoa(n)
			}
			ports[p] = true
		}
	}
	for _, p := range extra {
		if p > 0 {
			ports[strconv.Itoa(p)] = true
		}
	}
	return ports
}

// effectivePort is u's port, or its scheme's default; "" for a url that does
// not name a network destination.
func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// blocksRequest reports whether a page's request to raw must fail: its
// destination is a control port. A url that does not parse fails too.
func blocksRequest(ports map[string]bool, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	p := effectivePort(u)
	if n, err := strconv.Atoi(p); err == nil {
		p = strconv.Itoa(n)
	}
	return p != "" && ports[p]
}

// guardRequests turns the browser-level interception on for connection c. It
// runs before discovery, so that no target of this connection is driven
// unguarded; when it fails, the connection fails.
func (b *Browser) guardRequests(ctx context.Context, c *wire.Conn) error {
	if len(b.blocked) == 0 {
		return nil
	}
	_, err := call(ctx, c, "", wire.FetchEnable{Patterns: interceptPatterns(b.blocked)})
	return err
}

// interceptPatterns are the Fetch patterns that pause every request whose
// destination may be a control port, and no other: a request nobody pauses
// does not wait for the agent (on a remote browser, a round trip per request
// of every page). Chromium matches a pattern against the request's canonical
// url without its fragment, on the first request and again on each redirect
// hop ('*' any run of characters, '?' one, '\' escapes; nothing else is
// special). A canonical http(s) url names a port only when it is not the
// scheme's default, and always as ":PORT/" (the path is at least "/"; leading
// zeros are dropped), so "*:PORT/*" matches every request to PORT, whatever
// the host is called, and some others (":PORT/" in a path or query), which
// blocksRequest lets go. A default port (80, 443, 21) is not written in the
// url at all: a control port that is one pauses every request, as "*".
func interceptPatterns(ports map[string]bool) []wire.RequestPattern {
	var out []wire.RequestPattern
	for _, p := range slices.Sorted(maps.Keys(ports)) {
		switch p {
		case "80", "443", "21":
			return []wire.RequestPattern{{URLPattern: "*", RequestStage: "Request"}}
		}
		out = append(out, wire.RequestPattern{URLPattern: "*:" + p + "/*", RequestStage: "Request"})
	}
	return out
}

// onRequestPaused answers one paused request, off the reader goroutine.
func (b *Browser) onRequestPaused(c *wire.Conn, session string, ev *wire.RequestPaused) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if blocksRequest(b.blocked, ev.Request.URL) {
			b.log.Info("Blocked a page's request to the browser's control plane", "url", ev.Request.URL, "type", ev.ResourceType)
			_, err = wire.Call(ctx, c, session, wire.FetchFailRequest{RequestID: ev.RequestID, ErrorReason: "BlockedByClient"})
		} else {
			_, err = wire.Call(ctx, c, session, wire.FetchContinueRequest{RequestID: ev.RequestID})
		}
		if err != nil && !wire.IsGone(err) {
			b.log.V(1).Info("answering a paused request", "url", ev.Request.URL, "err", err)
		}
	}()
}
