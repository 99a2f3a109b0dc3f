package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// inspectorCLI is the official MCP Inspector's command-line client, installed
// by `make test` (test-deps) from test/e2e/mcp/inspector/package-lock.json.
const inspectorCLI = "inspector/node_modules/@modelcontextprotocol/inspector-cli/build/index.js"

// inspect runs the Inspector's CLI against `tabwarden mcp` over stdio, as a user
// who configured it by hand would, and returns what it printed (JSON).
func inspect(t *testing.T, kubeconfig string, args ...string) (map[string]any, string) {
	t.Helper()
	cli, err := filepath.Abs(inspectorCLI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("the MCP Inspector is not installed (%v): `make test` installs it (make test-deps: npm ci in test/e2e/mcp/inspector)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The server's command first, its flags after "--" (the Inspector's own
	// options are parsed before it).
	argv := append([]string{cli, bin}, args...)
	argv = append(argv, "--", "mcp", "--kubeconfig", kubeconfig, "--timeout", "60s")
	cmd := exec.CommandContext(ctx, "node", argv...)
	out, err := cmd.Output()
	stderr := ""
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	if err != nil {
		t.Fatalf("mcp-inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("mcp-inspector %s printed no JSON object: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v, string(out)
}

// TestMCPInspector: the official MCP Inspector (its CLI, on the Node version
// make test uses) lists tabwarden's tools with object input schemas, and
// drives a session through them: start_session creates the session in the API
// server under the user's identity, list_profiles shows the profile it runs on,
// a call with a missing argument comes back as a tool error that says what to
// pass, and finish reports the phase the session reached.
func TestMCPInspector(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	testenv.StartController(t, admin)
	startAgent(t, "inspector-chromium")
	ns := testenv.NewNamespace(t, k8s, "mcp-inspector-")
	kubeconfig := testenv.Kubeconfig(t, testenv.AllowUser(t, admin, ns, "inspector-user"), ns)

	listed, raw := inspect(t, kubeconfig, "--method", "tools/list")
	tools, _ := listed["tools"].([]any)
	names := map[string]bool{}
	for _, x := range tools {
		tool := x.(map[string]any)
		name, _ := tool["name"].(string)
		names[name] = true
		schema, _ := tool["inputSchema"].(map[string]any)
		g.Expect(schema).To(HaveKeyWithValue("type", "object"), "tool %s's input schema", name)
		g.Expect(tool["description"]).NotTo(BeEmpty(), "tool %s has a description", name)
	}
	for _, want := range []string{"list_profiles", "start_session", "open_window", "list_owned", "observe", "act", "screenshot", "acknowledge", "finish"} {
		g.Expect(names).To(HaveKey(want), "tools/list shows %s:\n%s", want, raw)
	}

	// The profile the agent serves is listed once its agent reports it.
	g.Eventually(func() string {
		_, out := inspect(t, kubeconfig, "--method", "tools/call", "--tool-name", "list_profiles")
		return out
	}).Should(ContainSubstring("inspector-chromium"))

	started, out := inspect(t, kubeconfig, "--method", "tools/call", "--tool-name", "start_session",
		"--tool-arg", "thread=inspector-thread", "purpose=checked by the MCP Inspector", "profile=inspector-chromium", "name=inspected")
	g.Expect(started["isError"]).NotTo(Equal(true), out)
	s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inspected"}}
	g.Eventually(func() string { return testenv.Get(t, k8s, s).Status.ProfileName }).Should(Equal("inspector-chromium"))
	g.Expect(s.Spec.Thread).To(Equal("inspector-thread"))

	// A call without a required argument: a tool error naming it, nothing created.
	bad, out := inspect(t, kubeconfig, "--method", "tools/call", "--tool-name", "open_window", "--tool-arg", "session=inspected")
	g.Expect(bad["isError"]).To(Equal(true), out)
	g.Expect(out).To(ContainSubstring("url"))
	var windows twv1.BrowserWindowList
	g.Expect(k8s.List(context.Background(), &windows)).To(Succeed())
	for _, w := range windows.Items {
		g.Expect(w.Namespace).NotTo(Equal(ns), "the refused open_window created window %s", w.Name)
	}

	finished, out := inspect(t, kubeconfig, "--method", "tools/call", "--tool-name", "finish", "--tool-arg", "session=inspected")
	g.Expect(finished["isError"]).NotTo(Equal(true), out)
	g.Expect(out).To(Or(ContainSubstring(string(twv1.SessionPhaseFinished)), ContainSubstring("Finishing")))
	g.Eventually(func() twv1.SessionPhase { return testenv.Get(t, k8s, s).Status.Phase }).Should(Equal(twv1.SessionPhaseFinished))
}
