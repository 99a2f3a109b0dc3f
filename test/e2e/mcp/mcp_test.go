// Package mcp_test drives the incident through `tabwarden mcp`, the built
// binary run by the MCP SDK's command transport with a user's kubeconfig, on a
// real kube-apiserver, the controller and a CDP agent under their own
// identities, and real headless Chromium: an agent observes the contacts page,
// clicks a contact, is refused its next step (unacknowledged_spawns) with the
// call that fixes it, acknowledges, continues and finishes; the user's window is
// never touched.
package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
)

var (
	admin    *rest.Config
	k8s      client.Client
	chrome   *chromium.Process
	site     *fixture.Server
	stateDir string
	bin      string // the built tabwarden binary
)

func TestMain(m *testing.M) {
	o := testenv.E2E("tabwarden-e2e-mcp-", func(e *testenv.Env) error {
		admin, k8s, site, chrome, stateDir, bin = e.Admin, e.Client, e.Site, e.Chrome, e.Dir, e.Bin
		return nil
	})
	o.Binary = true // the MCP client runs `tabwarden mcp`
	testenv.Main(m, o)
}

// startAgent runs the CDP agent of profile on Chromium under its own identity.
func startAgent(t *testing.T, profile string) {
	t.Helper()
	testenv.StartCDPAgent(t, admin, profile, chrome.WebSocketURL, stateDir, false)
}

// eye is a raw CDP connection that opens the user's window and checks what Chromium shows.
func eye(t *testing.T) *cdp.Browser { t.Helper(); return testenv.Hand(t, chrome.WebSocketURL) }

func pages(t *testing.T, b *cdp.Browser) map[string]browser.Page {
	t.Helper()
	return testenv.Pages(t, b)
}

type result struct {
	text       string
	structured map[string]any
	isError    bool
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var r result
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(raw, &r.structured)
	}
	r.isError = res.IsError
	t.Logf("%s %v → error=%v\n%s", tool, args, r.isError, r.text)
	return r
}

// refOf finds the ref of the element named name in an act/observe result.
func refOf(t *testing.T, r result, name string) string {
	t.Helper()
	obs, _ := r.structured["observation"].(map[string]any)
	els, _ := obs["elements"].([]any)
	for _, e := range els {
		m := e.(map[string]any)
		if n, _ := m["name"].(string); strings.Contains(n, name) {
			return m["ref"].(string)
		}
	}
	t.Fatalf("no element named %q in the observation:\n%s", name, r.text)
	return ""
}

func TestIncidentThroughMCP(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	h := eye(t)
	user, err := h.Open(context.Background(), browser.OpenRequest{Key: "user-window", URL: site.Path("/quiet?user=1"), NewWindow: true})
	g.Expect(err).NotTo(HaveOccurred())
	userBefore := pages(t, h)

	testenv.StartController(t, admin)
	startAgent(t, "mcp-chromium")
	ns := testenv.NewNamespace(t, k8s, "mcp-e2e-")
	kubeconfig := testenv.Kubeconfig(t, testenv.AllowUser(t, admin, ns, "agent-smith"), ns)

	// The agent's MCP configuration: tabwarden mcp --kubeconfig ..., over stdio.
	cmd := exec.Command(bin, "mcp", "--kubeconfig", kubeconfig, "--timeout", "90s")
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cs.Close() })

	r := call(t, cs, "start_session", map[string]any{"thread": "thread-42", "purpose": "write to a contact", "profile": "mcp-chromium", "name": "contacts-form"})
	g.Expect(r.isError).To(BeFalse())
	r = call(t, cs, "open_window", map[string]any{"session": "contacts-form", "url": site.Path("/contacts"), "name": "contacts"})
	g.Expect(r.isError).To(BeFalse())
	contactsTab := r.structured["tabId"].(string)

	// Observe the contacts page: the e-mail links, with refs.
	r = call(t, cs, "observe", map[string]any{"session": "contacts-form", "window": "contacts", "thread": "thread-42"})
	g.Expect(r.isError).To(BeFalse())
	alice := refOf(t, r, fixture.Contacts[0])
	bob := refOf(t, r, fixture.Contacts[1])

	// Click alice: the page spawns a compose popup, adopted into the session.
	r = call(t, cs, "act", map[string]any{"session": "contacts-form", "window": "contacts", "thread": "thread-42",
		"steps": []map[string]any{{"type": "Click", "ref": alice}}})
	g.Expect(r.isError).To(BeFalse())
	var compose string
	if sp, _ := r.structured["spawned"].([]any); len(sp) > 0 {
		compose = sp[0].(map[string]any)["window"].(string)
	}
	if compose == "" {
		// The adoption may land just after the click returned: the session lists it.
		g.Eventually(func() []any {
			u, _ := call(t, cs, "list_owned", map[string]any{"session": "contacts-form"}).structured["unacknowledged"].([]any)
			return u
		}).Should(HaveLen(1))
		u, _ := call(t, cs, "list_owned", map[string]any{"session": "contacts-form"}).structured["unacknowledged"].([]any)
		compose = u[0].(string)
	}
	composeWindow := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: compose}}
	g.Eventually(func() twv1.WindowPhase { return testenv.Get(t, k8s, composeWindow).Status.Phase }).Should(Equal(twv1.WindowOpen))
	composeTab := composeWindow.Status.TabID
	g.Expect(pages(t, h)).To(HaveKey(composeTab))
	g.Expect(pages(t, h)[composeTab].URL).To(HavePrefix(site.Path("/compose")))

	// The next mutating step is refused: a tool error with reason, message and the call that fixes it.
	before := len(pages(t, h))
	r = call(t, cs, "act", map[string]any{"session": "contacts-form", "window": "contacts", "thread": "thread-42",
		"steps": []map[string]any{{"type": "Click", "ref": bob}}})
	g.Expect(r.isError).To(BeTrue())
	g.Expect(r.text).To(HavePrefix("refused (" + twv1.ReasonUnacknowledgedSpawns + "): "))
	g.Expect(r.text).To(ContainSubstring(compose))
	g.Expect(r.text).To(ContainSubstring(`hint: acknowledge {"session": "contacts-form", "all_unacked": true, "disposition": "Close"}`))
	g.Consistently(func() int { return len(pages(t, h)) }, 2*time.Second).Should(Equal(before), "the refused click opened nothing")

	// Another thread may not drive the session at all.
	r = call(t, cs, "observe", map[string]any{"session": "contacts-form", "window": "contacts", "thread": "thread-7"})
	g.Expect(r.isError).To(BeTrue())
	g.Expect(r.text).To(HavePrefix("refused (" + twv1.ReasonSessionOwnedByAnotherThread + "): "))
	g.Expect(r.text).To(ContainSubstring(`hint: start_session {"thread":"thread-7",`), "the hint is the tool call that starts a session of its own")

	// Acknowledge: the compose popup closes in Chromium.
	r = call(t, cs, "acknowledge", map[string]any{"session": "contacts-form", "all_unacked": true, "disposition": "Close"})
	g.Expect(r.isError).To(BeFalse())
	g.Expect(r.structured["acknowledged"]).To(ConsistOf(compose))
	g.Eventually(func() map[string]browser.Page { return pages(t, h) }).ShouldNot(HaveKey(composeTab))

	// Continue: the same page, observed afresh, drives again.
	r = call(t, cs, "act", map[string]any{"session": "contacts-form", "window": "contacts", "thread": "thread-42",
		"steps": []map[string]any{{"type": "Navigate", "url": site.Path("/quiet?agent=1")}, {"type": "Observe"}}})
	g.Expect(r.isError).To(BeFalse())
	noop := refOf(t, r, "Do nothing")
	r = call(t, cs, "act", map[string]any{"session": "contacts-form", "window": "contacts", "thread": "thread-42",
		"steps": []map[string]any{{"type": "Click", "ref": noop}, {"type": "Wait", "text": "clicked"}, {"type": "Observe"}}})
	g.Expect(r.isError).To(BeFalse())
	g.Expect(r.structured["phase"]).To(Equal("Succeeded"))
	refOf(t, r, "clicked")

	// Finish: the session's pages close; the user's window keeps every page it had.
	r = call(t, cs, "finish", map[string]any{"session": "contacts-form"})
	g.Expect(r.isError).To(BeFalse())
	s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contacts-form"}}
	g.Eventually(func() twv1.SessionPhase { return testenv.Get(t, k8s, s).Status.Phase }).Should(Equal(twv1.SessionPhaseFinished))
	now := pages(t, h)
	g.Expect(now).NotTo(HaveKey(contactsTab))
	for id, p := range userBefore {
		g.Expect(now).To(HaveKey(id), "page %s (%s) open before the session is still open", id, p.URL)
		g.Expect(now[id].URL).To(Equal(p.URL), "the user's page %s was not navigated", id)
	}
	g.Expect(now[user.ID].WindowID).To(Equal(user.WindowID))
}
