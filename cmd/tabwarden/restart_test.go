package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/local/up"
)

// TestUpRestart: `tabwarden up` keeps its cluster across restarts, as kind and
// minikube do. A session and an Open window applied by the person's non-admin
// user, whose page an action navigated elsewhere, are there after a Ctrl-C and
// a new `up`: the session Active, the window Open again with a new page at the
// page's last url (the browser is new: its pages went with the old one). A
// `--fresh` start has no session.
func TestUpRestart(t *testing.T) {
	w := newUpWorld(t)
	assets, repo, work, bin := w.assets, w.repo, w.work, w.bin
	// The fixture site on the same port every run: the page's url names it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fixtureAddr := l.Addr().String()
	_ = l.Close()
	stateDir := filepath.Join(work, ".tabwarden")
	kubeconfig := filepath.Join(stateDir, up.KubeconfigFile)
	userKC := filepath.Join(stateDir, up.UserKubeconfigFile)

	// start runs `tabwarden up` until it is ready; stop sends it SIGINT and
	// waits for it to exit.
	// The last run's exit, stderr and stopped flag, for the crash at the end.
	var last *upRun
	start := func(what string, extra ...string) (up.Info, func()) {
		t.Helper()
		args := append([]string{"up", "--repo", repo, "--assets", assets, "--extension-addr", "off",
			"--fixture-addr", fixtureAddr, "--ready-timeout", "4m"}, extra...)
		r := startUp(t, bin, work, args...)
		cmd, stderr, printed := r.cmd, &r.stderr, &r.printed
		stop := func() {
			if r.stopped {
				return
			}
			r.stopped = true
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case err := <-r.exited:
				if err != nil {
					t.Errorf("%s: tabwarden up exited with %v after SIGINT", what, err)
				}
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Errorf("%s: tabwarden up did not exit within 2 minutes of SIGINT", what)
			}
			if t.Failed() {
				t.Logf("%s: tabwarden up stderr (last 12 KiB):\n%s", what, tail(stderr.String(), 12<<10))
			}
		}
		t.Cleanup(stop)
		last = r
		r.waitReady(t, what)
		t.Logf("%s: ready after %v", what, time.Since(r.began).Round(100*time.Millisecond))
		if !strings.Contains(printed.String(), "--fresh") {
			t.Errorf("%s: the ready message does not say that --fresh starts empty:\n%s", what, printed.String())
		}
		var info up.Info
		readJSON(t, filepath.Join(stateDir, up.InfoFile), &info)
		return info, stop
	}
	kubectl := w.runKubectl
	get := func(args ...string) string {
		out, err := kubectl(kubeconfig, "", append([]string{"get"}, args...)...)
		if err != nil {
			return err.Error()
		}
		return strings.TrimSpace(out)
	}

	// Run 1: a session and its window, as the person's own non-admin user; an
	// action takes the page from /landing to /form.
	info, stop := start("run 1")
	base := "http://" + fixtureAddr
	objects := fmt.Sprintf(`apiVersion: tabwarden.dev/v1alpha1
kind: BrowserSession
metadata:
  name: kept
spec:
  thread: thread-restart
  purpose: outlive a restart of tabwarden up
  profileName: %s
  placement: Window
---
apiVersion: tabwarden.dev/v1alpha1
kind: BrowserWindow
metadata:
  name: kept-page
spec:
  sessionRef:
    name: kept
  source: Open
  url: %s/landing
  disposition: Temporary
`, info.LocalProfile, base)
	action := fmt.Sprintf(`apiVersion: tabwarden.dev/v1alpha1
kind: BrowserAction
metadata:
  name: kept-navigate
spec:
  sessionRef:
    name: kept
  thread: thread-restart
  windowRef:
    name: kept-page
  steps:
  - type: Navigate
    url: %s/form
`, base)
	if out, err := kubectl(userKC, objects, "apply", "-f", "-"); err != nil {
		t.Fatal(err, out)
	}
	eventually(t, 2*time.Minute, "run 1: the window Open at /landing", func() (bool, string) {
		out := get("browserwindow", "kept-page", "-o", "jsonpath={.status.phase}")
		n, all := shown(t, info.FixtureURL, "/landing")
		return out == "Open" && n == 1, out + " " + all
	})
	if out, err := kubectl(userKC, action, "apply", "-f", "-"); err != nil {
		t.Fatal(err, out)
	}
	var firstTab string
	eventually(t, 2*time.Minute, "run 1: the action Succeeded", func() (bool, string) {
		out := get("browseraction", "kept-navigate", "-o", "jsonpath={.status.phase} {.status.reason}")
		return strings.TrimSpace(out) == "Succeeded", out
	})
	eventually(t, time.Minute, "run 1: the window Open at /form", func() (bool, string) {
		out := get("browserwindow", "kept-page", "-o", "jsonpath={.status.phase} {.status.tabId} {.status.url}")
		f := strings.Fields(out)
		if len(f) == 3 {
			firstTab = f[1]
		}
		n, all := shown(t, info.FixtureURL, "/form")
		return len(f) == 3 && f[0] == "Open" && f[2] == base+"/form" && n == 1, out + " " + all
	})
	stop()

	// Run 2: the cluster is back; the browser is new, and the window's page
	// opens again where it was.
	info, stop = start("run 2")
	if got := get("browsersession", "kept", "-o", "jsonpath={.status.phase}"); got != "Active" {
		t.Errorf("run 2: session kept: phase %q, want Active", got)
	}
	eventually(t, 2*time.Minute, "run 2: the window Open again with a new page at its last url", func() (bool, string) {
		out := get("browserwindow", "kept-page", "-o", "jsonpath={.status.phase} {.status.tabId}")
		phase, tab, _ := strings.Cut(out, " ")
		n, all := shown(t, info.FixtureURL, "/form")
		return phase == "Open" && tab != "" && tab != firstTab && n == 1, out + " " + all
	})
	if n, all := shown(t, info.FixtureURL, "/landing"); n != 0 {
		t.Errorf("run 2: the page opened again at spec.url, not at its last url: %s", all)
	}
	if got := get("browsersession", "kept", "-o", "jsonpath={.status.phase}"); got != "Active" {
		t.Errorf("run 2: session phase %q after its page reopened, want Active", got)
	}
	out := get("browserwindow", "kept-page", "-o", "jsonpath={.status.conditions[?(@.type==\"Opened\")].reason}")
	t.Logf("run 2: window kept-page Opened reason %s; events: %s", out, get("events", "--field-selector", "involvedObject.name=kept-page", "-o", "jsonpath={.items[*].reason}"))
	stop()

	// Run 3, --fresh: an empty cluster.
	info, stop = start("run 3 (--fresh)", "--fresh")
	if out := get("browsersessions", "-o", "name"); out != "" {
		t.Errorf("run 3 (--fresh): sessions %q, want none", out)
	}
	if n, all := shown(t, info.FixtureURL, "/form"); n != 0 {
		t.Errorf("run 3 (--fresh): a page of the old session is shown: %s", all)
	}
	// Chromium dies under a running up: the pipe cannot be redialled, and up
	// exits saying so instead of running on with a blind agent.
	if err := syscall.Kill(-info.ChromiumPID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing Chromium's process group %d: %v", info.ChromiumPID, err)
	}
	select {
	case err := <-last.exited:
		last.stopped = true
		if err == nil || !strings.Contains(last.stderr.String(), "chromium exited") {
			t.Errorf("run 3: Chromium was killed; up exited with %v, stderr:\n%s\nwant a failure that says chromium exited", err, tail(last.stderr.String(), 4<<10))
		}
	case <-time.After(time.Minute):
		t.Errorf("run 3: Chromium was killed a minute ago and tabwarden up still runs")
	}
	stop()
}
