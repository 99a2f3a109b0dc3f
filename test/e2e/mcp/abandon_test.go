package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	coordv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// startMCP runs `tabwarden mcp` with kubeconfig, over stdio, as an agent's MCP
// configuration would; it returns the client session and the process.
func startMCP(t *testing.T, kubeconfig string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--kubeconfig", kubeconfig, "--timeout", "90s")
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("starting tabwarden mcp: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd
}

// TestAbandonedThroughMCP: an agent whose process exits without finishing
// leaves its `tabwarden mcp` server's sessions unheld. The one that was being
// driven is abandoned after abandon_after (Held=False, a Warning Event,
// endReason Abandoned) and its page closes in Chromium; the one waiting for its
// user keeps its page; a session held by an MCP server that still runs
// outlives abandon_after many times over, and finishing it (a page still open)
// prints the dirty_session reprimand.
func TestAbandonedThroughMCP(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	ctx := context.Background()
	h := eye(t)
	testenv.StartController(t, admin)
	startAgent(t, "mcp-abandon")
	ns := testenv.NewNamespace(t, k8s, "mcp-abandon-")
	userCfg := testenv.AllowUser(t, admin, ns, "agent-gone")
	kubeconfig := testenv.Kubeconfig(t, userCfg, ns)
	user, err := client.New(userCfg, client.Options{Scheme: run.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	const after = 6 * time.Second
	start := func(cs *mcp.ClientSession, name string) string {
		r := call(t, cs, "start_session", map[string]any{"thread": "thread-" + name, "purpose": "fill a form", "profile": "mcp-abandon", "name": name, "abandon_after": after.String()})
		g.Expect(r.isError).To(BeFalse())
		r = call(t, cs, "open_window", map[string]any{"session": name, "url": site.Path("/quiet?" + name), "name": name + "-page"})
		g.Expect(r.isError).To(BeFalse())
		return r.structured["tabId"].(string)
	}
	sess := func(name string) *twv1.BrowserSession {
		return testenv.Get(t, k8s, &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}

	gone, goneCmd := startMCP(t, kubeconfig)
	leftTab := start(gone, "left")
	waitTab := start(gone, "waits")
	// The user takes over "waits" (a captcha): it is never abandoned while it waits.
	g.Expect(user.Patch(ctx, sess("waits"), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"WaitingForUser"}}`)))).To(Succeed())
	alive, _ := startMCP(t, kubeconfig)
	heldTab := start(alive, "held")

	// Each session is held by its MCP server: a Lease named after it, owned by it.
	for _, name := range []string{"left", "waits", "held"} {
		l := &coordv1.Lease{}
		g.Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, l) }).Should(Succeed())
		g.Expect(*l.Spec.HolderIdentity).To(HavePrefix("tabwarden mcp "))
		g.Expect(l.OwnerReferences).To(ContainElement(HaveField("UID", sess(name).UID)))
		g.Eventually(func() string { return sess(name).Status.Holder }).Should(Equal(*l.Spec.HolderIdentity), "status mirrors the holder of %s", name)
	}
	g.Expect(pages(t, h)).To(And(HaveKey(leftTab), HaveKey(waitTab), HaveKey(heldTab)))

	// The agent exits: its stdin closes, its MCP server exits.
	g.Expect(gone.Close()).To(Succeed())
	_ = goneCmd.Wait() // already reaped by the transport's Close, or now; its exit status is not the point
	exited := time.Now()

	var ended, closed time.Time
	g.Eventually(func() string { return sess("left").Status.EndReason }, after+30*time.Second, 100*time.Millisecond).Should(Equal(twv1.ReasonAbandoned))
	ended = time.Now()
	g.Eventually(func() map[string]browser.Page { return pages(t, h) }, 30*time.Second, 100*time.Millisecond).ShouldNot(HaveKey(leftTab))
	closed = time.Now()
	t.Logf("holder gone → session ended (Abandoned): %s; → page gone: %s", ended.Sub(exited).Round(10*time.Millisecond), closed.Sub(exited).Round(10*time.Millisecond))
	// Not ended by the exit itself: the last renewal counts (it renews every abandonAfter/3).
	g.Expect(ended.Sub(exited)).To(BeNumerically(">=", after-after/3-time.Second))

	left := sess("left")
	held := apimeta.FindStatusCondition(left.Status.Conditions, twv1.HeldCondition)
	g.Expect(held).NotTo(BeNil())
	g.Expect(held.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(held.Reason).To(Equal(twv1.ReasonAbandoned))
	g.Eventually(func() twv1.SessionPhase { return sess("left").Status.Phase }).Should(Equal(twv1.SessionPhaseFinished))
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(ContainElement(And(
			HaveField("Regarding.Name", "left"), HaveField("Reason", twv1.ReasonAbandoned), HaveField("Type", "Warning"))))
	}).Should(Succeed())

	// Long past abandonAfter: the waiting one and the held one keep their pages.
	g.Consistently(func(g Gomega) {
		for _, name := range []string{"waits", "held"} {
			s := sess(name)
			g.Expect(s.Status.EndReason).To(BeEmpty(), name)
			g.Expect(s.Ended()).To(BeFalse(), name)
		}
		g.Expect(pages(t, h)).To(And(HaveKey(waitTab), HaveKey(heldTab)))
	}, 3*after, 500*time.Millisecond).Should(Succeed())
	g.Expect(sess("held").Status.Phase).To(Equal(twv1.SessionPhaseActive))
	g.Expect(sess("waits").Status.Phase).To(Equal(twv1.SessionPhaseWaitingForUser))

	// Finishing "held" with its page still open: the reprimand says what was left.
	r := call(t, alive, "finish", map[string]any{"session": "held"})
	g.Expect(r.isError).To(BeFalse())
	g.Expect(r.text).To(ContainSubstring(twv1.ReasonDirtySession + ": session held was finished dirty"))
	g.Expect(r.text).To(ContainSubstring("held-page"))
	g.Expect(r.structured["reprimand"]).To(ContainSubstring("held-page"))
	// Its advice is in this server's terms: tool calls, not kubectl.
	g.Expect(r.text).To(ContainSubstring(`acknowledge {"windows": ["WINDOW"], "disposition": "Close"}`))
	g.Expect(r.text).NotTo(ContainSubstring("kubectl"))
	g.Eventually(func() map[string]browser.Page { return pages(t, h) }).ShouldNot(HaveKey(heldTab))
}
