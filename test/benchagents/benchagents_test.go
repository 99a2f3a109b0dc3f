package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustFind(t *testing.T, o *Obs, role, name, ref string) {
	t.Helper()
	e, err := o.find(role, name)
	if err != nil {
		t.Fatalf("%v; elements: %+v", err, o.Elems)
	}
	if e.Ref != ref {
		t.Errorf("%s %q: ref %q, want %q", role, name, e.Ref, ref)
	}
}

// The recorded snapshots (go run ./test/benchagents -samples DIR) of each
// tool parse into the elements the scripted agents look for.
func TestParseDevtoolsSnapshot(t *testing.T) {
	o := parseDevtoolsSnapshot(sample(t, "devtools-login.txt"))
	mustFind(t, o, "textbox", "Username", "4_8")
	mustFind(t, o, "textbox", "Password", "4_11")
	mustFind(t, o, "button", "Sign in", "4_13")
	o = parseDevtoolsSnapshot(sample(t, "devtools-picker.txt"))
	mustFind(t, o, "combobox", "Theme color", "5_3")
	if _, err := o.find("option", "Purple"); err == nil {
		t.Error("the default snapshot lists no option, yet one was found")
	}
	if e, _ := o.find("combobox", "Theme color"); e.Text != "Choose a color" {
		t.Errorf("the combobox's value: %q", e.Text)
	}
	o = parseDevtoolsSnapshot(sample(t, "devtools-picker-verbose.txt"))
	if _, err := o.find("option", fixture.PickedColor); err != nil {
		t.Error(err)
	}
}

func TestParsePlaywrightSnapshot(t *testing.T) {
	o := parsePlaywrightSnapshot(sample(t, "playwright-login.txt"))
	mustFind(t, o, "textbox", "Username", "f1e5")
	mustFind(t, o, "textbox", "Password", "f1e7")
	mustFind(t, o, "button", "Sign in", "f1e8")
	o = parsePlaywrightSnapshot(sample(t, "playwright-picker.txt"))
	mustFind(t, o, "combobox", "Theme color", "e5")
	mustFind(t, o, "option", fixture.PickedColor, "e10")
	tabs := parsePlaywrightTabs(sample(t, "playwright-picker.txt"))
	if len(tabs) != 3 || !tabs[2].current || !strings.HasSuffix(tabs[2].url, "/agents/picker") {
		t.Errorf("tabs: %+v", tabs)
	}
}

func TestParseTabwardenObservation(t *testing.T) {
	o, err := parseTabwardenObservation([]byte(sample(t, "tabwarden-message.json")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(o.Text, fixture.MessageSecret) {
		t.Errorf("the body is not in the outline: %q", o.Text)
	}
	mustFind(t, o, "button", "Reply", "o29301565133722.e1")
	o, err = parseTabwardenObservation([]byte(sample(t, "tabwarden-picker.json")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.find("option", fixture.PickedColor); err != nil {
		t.Error(err)
	}
	o, err = parseTabwardenObservation([]byte(sample(t, "tabwarden-login.json")))
	if err != nil {
		t.Fatal(err)
	}
	if l := iframeLine(o.Text); !strings.Contains(l, "cross-origin") {
		t.Errorf("the login frame's line: %q", l)
	}
}

// TestTabwardenTasks runs every task through tabwarden's MCP server, on a real
// kube-apiserver, the controller, a CDP agent and Chromium (what make test
// already has; the peers' npm packages are not needed). Every task completes,
// the login through the cross-site (out-of-process) iframe included; no task
// leaves a page open or touches the user's tab.
func TestTabwardenTasks(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := config{dir: t.TempDir(), pool: true, tools: []string{"tabwarden"}, tasks: tasks}
	rows, err := runAll(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(tasks) {
		t.Fatalf("%d rows for %d tasks", len(rows), len(tasks))
	}
	for _, r := range rows {
		t.Logf("task %s: completed=%v (%s) %s; %d calls, %d pages left, user's tab %s", r.task, r.done, r.detail, r.reason, r.stats.calls, r.pagesLeft, r.userTab)
		if !r.done {
			t.Errorf("task %s not completed: %s (%s)", r.task, r.reason, r.detail)
		}
		if r.finishErr != "" {
			t.Errorf("task %s: finish: %s", r.task, r.finishErr)
		}
		if r.pagesLeft != 0 {
			t.Errorf("task %s left pages open: %v", r.task, r.leftURLs)
		}
		if r.userTab != "untouched" {
			t.Errorf("task %s: the user's tab: %s", r.task, r.userTab)
		}
	}
}
