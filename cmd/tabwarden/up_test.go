package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/local/up"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// upWorld is what a test of `tabwarden up` needs: Chromium, kubectl, the
// kube-apiserver and etcd, the repository, and the binary built into a
// scratch directory the test runs it from.
type upWorld struct{ kubectl, assets, repo, work, bin string }

func newUpWorld(t *testing.T) upWorld {
	t.Helper()
	// Never skip: install chromium (make chromium) and kubectl, or set TABWARDEN_CHROMIUM.
	if _, err := chromium.Find(); err != nil {
		t.Fatal(err)
	}
	kubectlBin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed to drive `tabwarden up` as a user does: %v", err)
	}
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	w := upWorld{kubectl: kubectlBin, assets: assets, repo: testenv.Root(), work: t.TempDir()}
	w.bin = filepath.Join(w.work, "tabwarden")
	if out, err := exec.Command("go", "build", "-o", w.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return w
}

// runKubectl runs kubectl with kubeconfig kc and args in the repository (as a
// user applying the samples does), stdin on its standard input, within 90 s.
func (w upWorld) runKubectl(kc, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, w.kubectl, append([]string{"--kubeconfig", kc}, args...)...)
	c.Dir = w.repo
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	out, err := c.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// upRun is a `tabwarden up` subprocess a test started (startUp).
type upRun struct {
	cmd    *exec.Cmd
	exited chan error // its exit, once
	began  time.Time
	// stderr and printed (its stdout) are what it wrote so far.
	stderr, printed syncBuffer
	ready           chan struct{} // closed when it printed its whole ready message
	// stopped: the test saw it exit, and has no SIGINT to send.
	stopped bool
}

// startUp starts bin with args in dir, reading what it prints.
func startUp(t *testing.T, bin, dir string, args ...string) *upRun {
	t.Helper()
	r := &upRun{cmd: exec.Command(bin, args...), exited: make(chan error, 1), ready: make(chan struct{})}
	r.cmd.Dir = dir
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = &r.stderr
	r.began = time.Now()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	go func() {
		// ready closes once the whole ready message is read (its last line),
		// not at its first: the tests read what it says.
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		began := false
		for sc.Scan() {
			r.printed.WriteString(sc.Text() + "\n")
			began = began || strings.HasPrefix(sc.Text(), up.ReadyPrefix)
			if began && sc.Text() == up.ReadyEnd {
				once.Do(func() { close(r.ready) })
			}
		}
	}()
	return r
}

// waitReady waits until the run printed its whole ready message. It fails the test
// (what, when set, prefixing the message) when the run exits first or is not
// ready within 5 minutes.
func (r *upRun) waitReady(t *testing.T, what string) {
	t.Helper()
	if what != "" {
		what += ": "
	}
	select {
	case <-r.ready:
	case err := <-r.exited:
		r.stopped = true
		t.Fatalf("%stabwarden up exited before it was ready: %v\nstdout:\n%s\nstderr:\n%s", what, err, r.printed.String(), tail(r.stderr.String(), 12<<10))
	case <-time.After(5 * time.Minute):
		t.Fatalf("%stabwarden up not ready after 5 minutes\nstdout:\n%s", what, r.printed.String())
	}
}

// TestUp is the smoke test of `tabwarden up`, driven the way a user drives it: the
// built binary as a subprocess, kubectl against the kubeconfig it writes, the samples
// in config/samples, and Ctrl-C (SIGINT) at the end, after which no process it
// started may be left.
func TestUp(t *testing.T) {
	w := newUpWorld(t)
	kubectlBin, assets, repo, work, bin := w.kubectl, w.assets, w.repo, w.work, w.bin
	// The kubectl plugin, found by kubectl on PATH as `kubectl tabwarden`.
	pluginDir := filepath.Join(work, "plugins")
	build := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "kubectl-tabwarden"), "../kubectl-tabwarden")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build kubectl-tabwarden: %v\n%s", err, out)
	}

	site := fixture.Serve()
	defer site.Close()

	// `up` runs from a scratch directory (its state in .tabwarden there), with the
	// repository given explicitly, and the extension host on a free port.
	stateDir := filepath.Join(work, ".tabwarden")
	// Left open (0755) by an older tabwarden: up makes it private.
	if err := os.Mkdir(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := startUp(t, bin, work, "up", "--repo", repo, "--assets", assets, "--extension-addr", "127.0.0.1:0", "--ready-timeout", "4m")
	cmd, exited, stderr, printed := r.cmd, r.exited, &r.stderr, &r.printed
	defer func() {
		if !r.stopped {
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(90 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("tabwarden up stderr (last 12 KiB):\n%s", tail(stderr.String(), 12<<10))
		}
	}()

	r.waitReady(t, "")
	t.Logf("tabwarden up ready after %v (wall clock, as seen by the test)", time.Since(r.began).Round(100*time.Millisecond))

	var info up.Info
	readJSON(t, filepath.Join(stateDir, up.InfoFile), &info)
	t.Logf("up reports it started in %.1fs; processes: %v", info.StartSeconds, info.Processes)
	kubeconfig := filepath.Join(stateDir, up.KubeconfigFile)
	for path, want := range map[string]os.FileMode{stateDir: 0o700, kubeconfig: 0o600, filepath.Join(stateDir, up.InfoFile): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v (private to the user)", path, fi.Mode().Perm(), want)
		}
	}
	if info.Kubeconfig != kubeconfig {
		t.Fatalf("up.json names kubeconfig %s, want %s", info.Kubeconfig, kubeconfig)
	}
	if info.ChromiumPID == 0 || info.ChromiumUserDataDir == "" || info.ExtensionAddr == "" || info.StartPage != info.FixtureURL+"/" {
		t.Fatalf("up.json is missing the Chromium, its start page or the extension endpoint: %+v", info)
	}
	// Chromium is driven over a pipe: no process of its group listens on any
	// port (no DevTools port for a page or another local user to reach), and
	// up.json names no DevTools endpoint.
	if ports := groupListeningPorts(t, info.ChromiumPID); len(ports) != 0 || info.DevToolsHTTP != "" {
		t.Fatalf("the Chromium up launched listens on TCP ports %v (up.json DevTools %q): want a pipe and no port", ports, info.DevToolsHTTP)
	}
	// The user's own tab, opened at launch, is there (as the fixture site sees its pages).
	eventually(t, time.Minute, "the user's start page shown", func() (bool, string) {
		n, all := shown(t, info.FixtureURL, "/")
		return n == 1, all
	})
	// The fixture site and the metrics are served on loopback, and printed.
	if !strings.HasPrefix(info.FixtureURL, "http://127.0.0.1:") || !strings.HasPrefix(info.MetricsURL, "http://127.0.0.1:") {
		t.Fatalf("up.json is missing the fixture site or the metrics endpoint on loopback: %+v", info)
	}
	if body := httpGet(t, info.FixtureURL+"/contacts"); !strings.Contains(body, "<title>"+fixture.TitleContacts+"</title>") {
		t.Errorf("the fixture site does not serve the contacts page:\n%s", body)
	}
	deadline := time.Now().Add(time.Minute)
	for body := ""; !strings.Contains(body, `tabwarden_driver_connected{driver="cdp",profile="local"} 1`); body = httpGet(t, info.MetricsURL) {
		if time.Now().After(deadline) {
			t.Fatalf("the metrics endpoint does not say the local profile's driver is connected:\n%s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The printed instructions name the kubeconfig and the samples to apply next.
	for _, want := range []string{kubeconfig, "config/samples/session.yaml", "pair --state-dir", info.FixtureURL + "/contacts", info.MetricsURL, "demo --dir"} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("the ready message does not mention %q:\n%s", want, printed.String())
		}
	}
	// `tabwarden pair` names the port the extension host really listens on
	// (a free one here, not the default 47321).
	pairOut, err := exec.Command(bin, "pair", "--state-dir", info.StateDir).CombinedOutput()
	if err != nil {
		t.Fatalf("tabwarden pair: %v\n%s", err, pairOut)
	}
	if _, port, _ := net.SplitHostPort(info.ExtensionAddr); !strings.Contains(string(pairOut), "the agent's port "+port+",") {
		t.Errorf("tabwarden pair does not name the host's port %s (%s):\n%s", port, info.ExtensionAddr, pairOut)
	}
	pidsFile, err := os.ReadFile(filepath.Join(stateDir, up.PidsFile))
	if err != nil {
		t.Fatal(err)
	}
	procs := parsePids(t, string(pidsFile))
	for _, comm := range []string{"etcd", "kube-apiserver", "chromium"} {
		if !hasComm(procs, comm) {
			t.Errorf("pids file does not list %s: %s", comm, pidsFile)
		}
	}

	kubectl := func(stdin string, args ...string) (string, error) {
		return w.runKubectl(kubeconfig, stdin, args...)
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := kubectl(stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// Every sample and the cluster manifests are valid against the real API server.
	must("", "apply", "--dry-run=server", "-f", "config/samples/")
	must("", "apply", "--dry-run=server", "-k", "config/default")
	must("", "get", "namespace", up.Namespace)
	must("", "get", "browserprofile", info.LocalProfile, info.ExtensionProfile)

	// Each role runs under its own identity, from a kubeconfig of its own, with
	// the shipped least-privilege RBAC; the admin kubeconfig stays the user's.
	wantRoles := map[string]string{
		access.ControllerUser:                   filepath.Join(stateDir, up.ControllerKubeconfigFile),
		access.AgentUser(info.LocalProfile):     filepath.Join(stateDir, up.AgentKubeconfigFile(info.LocalProfile)),
		access.AgentUser(info.ExtensionProfile): filepath.Join(stateDir, up.AgentKubeconfigFile(info.ExtensionProfile)),
	}
	for user, path := range wantRoles {
		if info.RoleKubeconfigs[user] != path {
			t.Errorf("up.json names kubeconfig %q for %s, want %s", info.RoleKubeconfigs[user], user, path)
		}
		if out := must("", "--kubeconfig", path, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); strings.TrimSpace(out) != user {
			t.Errorf("%s authenticates as %q, want %s", path, out, user)
		}
	}
	// The person's own non-admin kubeconfig, for an agent or an MCP client:
	// tabwarden-edit in default and the profile viewer, nothing else. Every
	// kubeconfig up writes names its context tabwarden, in namespace default.
	userKC := filepath.Join(stateDir, up.UserKubeconfigFile)
	if info.UserKubeconfig != userKC {
		t.Errorf("up.json names user kubeconfig %q, want %s", info.UserKubeconfig, userKC)
	}
	if out := must("", "--kubeconfig", userKC, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); strings.TrimSpace(out) != up.UserName {
		t.Errorf("%s authenticates as %q, want %s", userKC, out, up.UserName)
	}
	for _, path := range []string{kubeconfig, userKC, wantRoles[access.ControllerUser]} {
		if out := must("", "--kubeconfig", path, "config", "view", "--minify", "-o", "jsonpath={.contexts[0].name} {.contexts[0].context.namespace}"); strings.TrimSpace(out) != up.ContextName+" default" {
			t.Errorf("%s: context and namespace %q, want %q", path, out, up.ContextName+" default")
		}
	}
	if !strings.Contains(printed.String(), up.UserKubeconfigFile) {
		t.Errorf("the ready message does not name the user's kubeconfig %s:\n%s", up.UserKubeconfigFile, printed.String())
	}
	canI := func(kubeconfig string, args ...string) string {
		out, _ := kubectl("", append([]string{"--kubeconfig", kubeconfig, "auth", "can-i"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n") // warnings first, the answer last
		return strings.TrimSpace(lines[len(lines)-1])
	}
	agentKC, controllerKC := wantRoles[access.AgentUser(info.LocalProfile)], wantRoles[access.ControllerUser]
	for _, c := range []struct {
		kubeconfig string
		args       []string
		want       string
	}{
		{agentKC, []string{"create", "browserwindows", "-n", "default"}, "yes"},
		{agentKC, []string{"delete", "browserwindows", "-n", "default"}, "no"},
		{agentKC, []string{"patch", "browsersessions", "-n", "default"}, "no"},
		{agentKC, []string{"update", "leases", "-n", up.Namespace}, "yes"},
		{agentKC, []string{"update", "leases", "-n", "default"}, "no"},
		{controllerKC, []string{"patch", "browsersessions/status", "-n", "default"}, "yes"},
		{controllerKC, []string{"create", "browserprofiles"}, "no"},
		{controllerKC, []string{"create", "browserwindows", "-n", "default"}, "no"},
		{userKC, []string{"create", "browsersessions", "-n", "default"}, "yes"},
		{userKC, []string{"create", "browseractions", "-n", "default"}, "yes"},
		{userKC, []string{"list", "browserprofiles"}, "yes"},
		{userKC, []string{"create", "browsersessions", "-n", "kube-system"}, "no"},
		{userKC, []string{"patch", "browserprofiles"}, "no"},
		{userKC, []string{"create", "rolebindings", "-n", "default"}, "no"},
	} {
		if got := canI(c.kubeconfig, c.args...); got != c.want {
			t.Errorf("kubectl --kubeconfig %s auth can-i %s: %q, want %q", filepath.Base(c.kubeconfig), strings.Join(c.args, " "), got, c.want)
		}
	}
	// The admission policies bind the admin too: no Spawned window by hand.
	forged := `{"apiVersion":"tabwarden.dev/v1alpha1","kind":"BrowserWindow","metadata":{"name":"forged","namespace":"default"},` +
		`"spec":{"sessionRef":{"name":"tax-form"},"source":"Spawned","spawn":{"tabId":"x"}}}`
	if out, err := kubectl(forged, "apply", "-f", "-"); err == nil || !strings.Contains(out, "only a tabwarden agent creates Spawned windows") {
		t.Errorf("an admin's Spawned window: %v\n%s\nwant the policy's refusal", err, out)
	}

	// The quick start as the README gives it, offline: the samples, unchanged,
	// open the form on up's own fixture site and the sample action fills it.
	// As the person's own non-admin user.
	must("", "--kubeconfig", userKC, "apply", "-f", "config/samples/session.yaml", "-f", "config/samples/window-open.yaml")
	window := sample(t, repo, "window-open.yaml")
	openURL := "http://" + up.DefaultFixtureAddr + "/form"
	if !strings.Contains(window, "url: "+openURL+"\n") {
		t.Fatalf("config/samples/window-open.yaml does not open %s on up's fixture site:\n%s", openURL, window)
	}

	var tabID string
	eventually(t, 2*time.Minute, "window example Open with a tab id", func() (bool, string) {
		out, err := kubectl("", "get", "browserwindow", "example", "-o", "jsonpath={.status.phase} {.status.tabId}")
		if err != nil {
			return false, err.Error()
		}
		phase, id, _ := strings.Cut(strings.TrimSpace(out), " ")
		tabID = id
		return phase == "Open" && id != "", out
	})
	eventually(t, time.Minute, "the browser shows the window's page", func() (bool, string) {
		n, all := shown(t, info.FixtureURL, "/form")
		return n == 1, all
	})
	t.Logf("window example Open as tab %s", tabID)
	must("", "--kubeconfig", userKC, "apply", "-f", "config/samples/action.yaml")
	eventually(t, 2*time.Minute, "the sample action Succeeded, the form saved", func() (bool, string) {
		out, err := kubectl("", "get", "browseraction", "tax-form-fill", "-o", "jsonpath={.status.phase} {.status.reason} {.status.observation.title}")
		return err == nil && strings.TrimSpace(out) == "Succeeded  "+fixture.TitleSaved, out
	})

	// A second window, closed with `kubectl tabwarden ack` (disposition Close).
	secondURL := info.FixtureURL + "/landing"
	second := strings.Replace(strings.Replace(window, openURL, secondURL, 1), "name: example", "name: second", 1)
	must(second, "apply", "-f", "-")
	var secondTab string
	eventually(t, 2*time.Minute, "window second Open", func() (bool, string) {
		out, err := kubectl("", "get", "browserwindow", "second", "-o", "jsonpath={.status.phase} {.status.tabId}")
		phase, id, _ := strings.Cut(strings.TrimSpace(out), " ")
		secondTab = id
		return err == nil && phase == "Open" && id != "", out
	})
	// kubectl takes no flags before a plugin's name: the kubeconfig comes from KUBECONFIG.
	plugin := func(args ...string) string {
		t.Helper()
		c := exec.Command(kubectlBin, append([]string{"tabwarden"}, args...)...)
		c.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl tabwarden %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := plugin("owned", "tax-form"); !strings.Contains(out, "second") || !strings.Contains(out, "example") {
		t.Fatalf("kubectl tabwarden owned tax-form does not list windows example and second:\n%s", out)
	}
	if out := plugin("ack", "second", "close"); strings.TrimSpace(out) != "browserwindow/second acknowledged: Close" {
		t.Fatalf("kubectl tabwarden ack second close: %q", out)
	}
	eventually(t, 2*time.Minute, "window second Closed and its page gone", func() (bool, string) {
		out, _ := kubectl("", "get", "browserwindow", "second", "-o", "jsonpath={.status.phase}")
		n, all := shown(t, info.FixtureURL, "/landing")
		return strings.TrimSpace(out) == "Closed" && n == 0, out + " " + all
	})
	if n, all := shown(t, info.FixtureURL, "/form"); n != 1 {
		t.Fatalf("closing window second (tab %s) closed window example's page (tab %s) too: %s", secondTab, tabID, all)
	}

	// Ending the session closes its pages and removes its windows.
	must("", "delete", "browsersession", "tax-form", "--timeout=120s")
	eventually(t, 2*time.Minute, "the session's windows gone", func() (bool, string) {
		out, err := kubectl("", "get", "browserwindows", "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", out
	})
	eventually(t, time.Minute, "the session's page gone from the browser", func() (bool, string) {
		n, all := shown(t, info.FixtureURL, "/form")
		return n == 0, all
	})
	if n, all := shown(t, info.FixtureURL, "/"); n != 1 {
		t.Fatalf("the session ended and the user's own tab went with it: %s", all)
	}

	// Ctrl-C: everything up started stops, and nothing is left behind.
	procs = append(procs, upDescendants(cmd.Process.Pid)...)
	stopAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		r.stopped = true
		if err != nil {
			t.Fatalf("tabwarden up exited with %v after SIGINT", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("tabwarden up did not exit within 2 minutes of SIGINT")
	}
	t.Logf("tabwarden up stopped %v after SIGINT", time.Since(stopAt).Round(100*time.Millisecond))
	// Orphans of a killed group may take a moment to be reaped by init.
	eventually(t, 10*time.Second, "no process of up left", func() (bool, string) {
		var alive []string
		for _, p := range procs {
			if up.Alive(p) {
				alive = append(alive, p.String())
			}
		}
		alive = append(alive, processesMentioning(info.ChromiumUserDataDir)...)
		return len(alive) == 0, strings.Join(alive, "; ")
	})
	// up's last resort (killing what its own shutdown missed) must not have been needed.
	if strings.Contains(stderr.String(), "left behind") {
		t.Errorf("up's orderly shutdown left processes behind; it had to kill them")
	}
	for _, f := range []string{up.InfoFile, up.PidsFile} {
		if _, err := os.Stat(filepath.Join(stateDir, f)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after up stopped (%v)", f, err)
		}
	}
	if _, err := os.Stat(info.ChromiumUserDataDir); !os.IsNotExist(err) {
		t.Errorf("Chromium's temporary profile %s is still there (%v)", info.ChromiumUserDataDir, err)
	}
}

// --- helpers -------------------------------------------------------------------
