package cdp_test

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// attacker is a web site whose pages reach for the DevTools endpoint by every
// route a page has: a 302 redirect, a script fetch (no-cors), an image, an
// iframe, a form POST and a websocket. Each page names its target url in ?t=
// and sets its title to "attacked" once it has tried.
func attacker(t *testing.T) *httptest.Server {
	t.Helper()
	done := `<script>setTimeout(() => { document.title = "attacked" }, 1500)</script>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.URL.Query().Get("t")
		js := fmt.Sprintf("%q", target)
		attr := html.EscapeString(target)
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, target, http.StatusFound)
		case "/fetch":
			fmt.Fprintf(w, `<title>fetch</title><script>fetch(%s, {mode: "no-cors"}).catch(() => {})</script>%s`, js, done)
		case "/oopif":
			// A frame of another site (localhost for 127.0.0.1): out of process,
			// reached by the driver's auto-attach; its own script fetches.
			_, port, _ := net.SplitHostPort(r.Host)
			inner := "http://localhost:" + port + "/fetch?t=" + url.QueryEscape(target)
			fmt.Fprintf(w, `<title>oopif</title><iframe src="%s"></iframe>%s`, html.EscapeString(inner), done)
		case "/img":
			fmt.Fprintf(w, `<title>img</title><img src="%s">%s`, attr, done)
		case "/iframe":
			fmt.Fprintf(w, `<title>iframe</title><iframe src="%s"></iframe>%s`, attr, done)
		case "/form":
			// The form posts into an iframe so that the attacker's page stays
			// to set its title.
			fmt.Fprintf(w, `<title>form</title><iframe name="sink"></iframe><form method="POST" action="%s" target="sink"></form><script>document.forms[0].submit()</script>%s`, attr, done)
		case "/ws":
			fmt.Fprintf(w, `<title>ws</title><script>
const ws = new WebSocket(%s);
ws.onopen = () => ws.send(JSON.stringify({id: 1, method: "Page.close"}));
</script>%s`, js, done)
		default:
			fmt.Fprint(w, `<title>attacker</title>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPagesNeverReachTheDevToolsEndpoint (invariant 8): a Chromium reached at
// a real DevTools port (as a pool pod's or `up --cdp-endpoint`'s is) is driven
// by the agent; a user with only tabwarden-edit tries every route from a page
// to the endpoint's /json/close and /json/activate of the user's own tabs:
// the url of an Open window, a Navigate step, aliases of the address, the port
// written with leading zeros, credentials before the host, a 302 redirect, an
// image whose request is redirected there, a script fetch, a script fetch from
// a cross-site (out-of-process) frame, an image, an iframe, a form POST and a
// websocket.
// Every user tab stays open and in the background.
func TestPagesNeverReachTheDevToolsEndpoint(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ev := attacker(t)
	dev, err := url.Parse(chrome.HTTPURL)
	g.Expect(err).NotTo(HaveOccurred())
	port := dev.Port()
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "mallory")
	startRoles(t, "boundary")
	s := session(ns, "boundary", "boundary")
	g.Expect(u.Create(ctx, s)).To(Succeed())
	home := openWindow(ns, "home", "boundary", ev.URL+"/")
	g.Expect(u.Create(ctx, home)).To(Succeed())
	waitOpen(t, g, home)
	sa := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "boundary", Thread: s.Spec.Thread, Timeout: time.Minute}

	type route struct {
		name  string
		open  func(target string) string // the url of an Open window; "" for a Navigate step
		alias string                     // the host the page names
		port  string                     // how the page writes the port; "" as it is
	}
	page := func(path string) func(string) string {
		return func(target string) string { return ev.URL + path + "?t=" + url.QueryEscape(target) }
	}
	direct := func(target string) string { return target }
	routes := []route{
		{"open-window", direct, "127.0.0.1", ""},
		{"open-window-localhost", direct, "localhost", ""},
		{"open-window-127.1", direct, "127.1", ""},
		{"open-window-hex", direct, "0x7f000001", ""},
		// The driver pauses only requests whose url names a control port
		// (interceptPatterns): the port written with leading zeros, behind
		// credentials, and a subresource's redirect hop, which is paused on its own.
		{"open-window-port-zeros", direct, "127.0.0.1", "00" + port},
		{"open-window-userinfo", direct, "user:pw@localhost", ""},
		{"image-redirect", func(target string) string { return page("/img")(page("/redirect")(target)) }, "127.0.0.1", ""},
		{"redirect", page("/redirect"), "127.0.0.1", ""},
		{"script-fetch", page("/fetch"), "localhost", ""},
		{"oopif-fetch", page("/oopif"), "127.0.0.1", ""},
		{"image", page("/img"), "127.0.0.1", ""},
		{"iframe", page("/iframe"), "127.1", ""},
		{"form-post", page("/form"), "127.0.0.1", ""},
		{"websocket", page("/ws"), "127.0.0.1", ""},
		// Last: no user tab opens while the action runs.
		{"navigate-step", nil, "127.0.0.1", ""},
	}
	// The user's tabs, opened before any attack.
	victims := map[string]string{}
	for i, r := range routes {
		victims[r.name] = userWindow(t, h, site.Path(fmt.Sprintf("/quiet?user=victim-%d", i))).ID
	}
	bg := raw(t, wire.CreateTarget{URL: site.Path("/quiet?user=background"), Background: true})
	var navigated *twv1.BrowserAction
	for _, r := range routes {
		victim := browser.Page{ID: victims[r.name]}
		p := port
		if r.port != "" {
			p = r.port
		}
		target := fmt.Sprintf("http://%s:%s/json/close/%s", r.alias, p, victim.ID)
		if r.name == "websocket" {
			target = fmt.Sprintf("ws://%s:%s/devtools/page/%s", r.alias, p, victim.ID)
		}
		if r.open == nil {
			navigated = sa.Act("home", twv1.ActionStep{Type: twv1.StepNavigate, URL: target})
			continue
		}
		w := openWindow(ns, r.name, "boundary", r.open(target))
		g.Expect(u.Create(ctx, w)).To(Succeed())
		g.Eventually(func() twv1.WindowPhase { return get(t, w).Status.Phase }).Should(Equal(twv1.WindowOpen), func() string { return fmt.Sprintf("%s: %+v", r.name, get(t, w).Status) })
		if r.open(target) != target && r.name != "redirect" {
			// The attacking page loaded and ran its script.
			g.Eventually(func() string { return pages(t, h)[get(t, w).Status.TabID].Title }).Should(Equal("attacked"), r.name)
		}
	}
	// /json/activate from a page: a background tab of the user's stays in the background.
	g.Eventually(func() string { return visibility(t, bg.TargetID) }).Should(Equal("hidden"))
	act := openWindow(ns, "activate", "boundary", page("/img")(fmt.Sprintf("http://localhost:%s/json/activate/%s", port, bg.TargetID)))
	g.Expect(u.Create(ctx, act)).To(Succeed())
	g.Eventually(func() string { return pages(t, h)[get(t, act).Status.TabID].Title }).Should(Equal("attacked"))

	// Every user tab stays open, whichever route attacked it.
	closed := func() []string {
		open := pages(t, h)
		var out []string
		for _, r := range routes {
			if _, ok := open[victims[r.name]]; !ok {
				out = append(out, r.name)
			}
		}
		if _, ok := open[bg.TargetID]; !ok {
			out = append(out, "activate")
		}
		return out
	}
	g.Consistently(closed, 3*time.Second, 500*time.Millisecond).Should(BeEmpty(), "routes that closed a user tab")
	g.Expect(visibility(t, bg.TargetID)).To(Equal("hidden"), "/json/activate took no effect")
	g.Expect(navigated.Status.Phase).NotTo(Equal(twv1.ActionSucceeded), "the navigation to the control plane fails: %+v", navigated.Status)
}
