// Package cdp_test proves tabwarden end to end on a real kube-apiserver and a
// real headless Chromium driven over CDP: the incident, every spawn kind of the
// fixture site, cleanup, reconnects and pool isolation.
package cdp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/link"
)

var (
	cfg    *rest.Config
	k8s    client.Client
	chrome *chromium.Process
	site   *fixture.Server
	// stateDir holds the agents' ledgers: an agent restarted in a test finds
	// the records of the one before it, as `tabwarden agent --state-dir` does.
	stateDir string
)

// TestMain shares one control plane, fixture site and Chromium (never skipped:
// this package exists to prove tabwarden on a real browser) across the tests.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.E2E("tabwarden-e2e-state-", func(e *testenv.Env) error {
		cfg, k8s, site, chrome, stateDir = e.Admin, e.Client, e.Site, e.Chrome, e.Dir
		return nil
	}))
}

func startController(t *testing.T) *testenv.Role { return testenv.StartController(t, cfg) }

// begin opens a test on the package's shared world (TestMain): a gomega whose
// Eventually waits up to timeout, and the test's own hand on Chromium.
func begin(t *testing.T, timeout time.Duration) (*WithT, context.Context, *cdp.Browser) {
	t.Helper()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(timeout)
	return g, context.Background(), hand(t)
}

// startRoles starts the controller and the CDP agent of profile on the
// package's Chromium.
func startRoles(t *testing.T, profile string) {
	t.Helper()
	startController(t)
	startAgent(t, profile, chrome.WebSocketURL, false)
}

// startAgent runs an agent for profile on Chromium through its own CDP
// connection to endpoint (Chromium's, or a link in front of it).
func startAgent(t *testing.T, profile, endpoint string, pool bool) *testenv.Role {
	t.Helper()
	return testenv.StartCDPAgent(t, cfg, profile, endpoint, stateDir, pool)
}

// hand is a second, raw CDP connection: the user's (or the agent's) hand that
// opens user windows and clicks, and the eye that checks what Chromium shows.
func hand(t *testing.T) *cdp.Browser { t.Helper(); return testenv.Hand(t, chrome.WebSocketURL) }

func pages(t *testing.T, b *cdp.Browser) map[string]browser.Page {
	t.Helper()
	return testenv.Pages(t, b)
}

// click is the user's (or the test agent's) real mouse click in a page through
// the hand's own connection. The hand owns none of tabwarden's pages: like any
// driver it may drive only a page recorded under its own key, so it binds the
// page for the click (a binding in the hand's ledger, not the agent's).
func click(ctx context.Context, h *cdp.Browser, page, selector string) error {
	if err := h.Bind(ctx, browser.BindRequest{Key: "hand-" + page, ID: page}); err != nil {
		return err
	}
	defer func() { _ = h.Release(ctx, browser.ReleaseRequest{Key: "hand-" + page, ID: page}) }()
	return actErr(h, ctx, browser.ActRequest{Owner: "hand-" + page, Page: page, ClickSelector: selector})
}

// pagesAt counts the pages whose url starts with prefix.
func pagesAt(t *testing.T, b *cdp.Browser, prefix string) int {
	n := 0
	for _, p := range pages(t, b) {
		if strings.HasPrefix(p.URL, prefix) {
			n++
		}
	}
	return n
}

func newNamespace(t *testing.T) string { return testenv.NewNamespace(t, k8s, "e2e-") }

func session(ns, name, profile string) *twv1.BrowserSession {
	return &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       twv1.BrowserSessionSpec{Thread: "thread-7", Purpose: "fill the contacts form", ProfileName: profile},
	}
}

func openWindow(ns, name, sess, url string) *twv1.BrowserWindow {
	return testenv.OpenWindow(ns, name, sess, url)
}

func get[T client.Object](t *testing.T, obj T) T { t.Helper(); return testenv.Get(t, k8s, obj) }

// onPage is a test's session driving one page: the namespace, the page's tab
// and a scripted agent of the session, acting as the namespace's user ada.
type onPage struct {
	ns, tab string
	agent   *testenv.ScriptedAgent
}

// sessionOnPage opens the world of a test that drives one fixture page: a new
// namespace whose user ada has the shipped edit role, the roles of profile, a
// session named after profile, and its window (window, at the fixture's path)
// Open with a page titled title loaded in Chromium.
func sessionOnPage(t *testing.T, g *WithT, h *cdp.Browser, profile, window, path, title string) onPage {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t, profile)
	s := session(ns, profile, profile)
	g.Expect(u.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, window, profile, site.Path(path))
	g.Expect(u.Create(ctx, w)).To(Succeed())
	tab := waitOpen(t, g, w)
	g.Eventually(func() string { return pages(t, h)[tab].Title }).Should(Equal(title))
	return onPage{ns: ns, tab: tab, agent: &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: profile, Thread: s.Spec.Thread, Timeout: time.Minute}}
}

func spawned(ns, sess string) []twv1.BrowserWindow {
	var list twv1.BrowserWindowList
	_ = k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{twv1.SessionLabel: sess, twv1.SourceLabel: "spawned"})
	return list.Items
}

func spawnedOf(ns, sess, opener string) *twv1.BrowserWindow {
	for _, w := range spawned(ns, sess) {
		if w.Spec.Spawn.OpenerTabID == opener {
			return &w
		}
	}
	return nil
}

// newLink puts a link a test can break (internal/testenv/link) in front of
// target (host:port), closed when the test ends.
func newLink(t *testing.T, target string) *link.Link {
	t.Helper()
	l, err := link.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() }) // best-effort cleanup
	return l
}

func cookie(name, value string) []*http.Cookie {
	return []*http.Cookie{{Name: name, Value: value}}
}

// actErr runs an Act and keeps its error.
func actErr(b browser.Browser, ctx context.Context, req browser.ActRequest) error {
	_, err := b.Act(ctx, req)
	return err
}
