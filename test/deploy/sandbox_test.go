package deploy_test

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestPoolChromiumRunsSandboxed: the pool's Chromium, run as the manifest runs it
// (its command and flags: tabwarden cdp-bridge with Chromium after it, its
// non-root uid, no --no-sandbox), on real Debian Chromium (the image's
// package), starts, and its renderers run in a user namespace of their own
// under seccomp-bpf; no process of the browser listens on a TCP port; the
// bridge serves its pipe on a 0600 socket in a 0700 directory it made in a
// shared volume (0777, like an emptyDir); and on SIGTERM the bridge closes
// Chromium and exits 0. What this machine cannot show is the container
// runtime applying config/agent/seccomp/chromium.json.
func TestPoolChromiumRunsSandboxed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs Chromium as the pool's uid (setpriv): run it as root (as the test machines do)")
	}
	_, sts := workloads(t, render(t))
	chr := container(t, &sts.Spec.Template.Spec, "chromium")
	uid := *sts.Spec.Template.Spec.SecurityContext.RunAsUser
	if chr.SecurityContext.RunAsUser != nil {
		uid = *chr.SecurityContext.RunAsUser
	}
	manifest := append(append([]string{}, chr.Command...), chr.Args...)
	dash := slices.Index(manifest, "--")
	if manifest[0] != "/tabwarden" || dash < 0 || dash+1 >= len(manifest) {
		t.Fatalf("the manifest runs %q: want /tabwarden cdp-bridge … -- CHROMIUM …", manifest)
	}
	if _, err := os.Stat(manifest[dash+1]); err != nil {
		t.Fatalf("the manifest runs %s, Debian's Chromium (make chromium): %v", manifest[dash+1], err)
	}
	// Not t.TempDir: its parent is 0700, closed to the pool's uid.
	work, err := os.MkdirTemp("", "pool-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "tabwarden")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tabwarden")
	build.Dir = testenv.Root()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tabwarden: %v\n%s", err, out)
	}
	home := filepath.Join(work, "data")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, int(uid), int(uid)); err != nil {
		t.Fatal(err)
	}
	// The shared volume: an emptyDir is 0777.
	shared := filepath.Join(work, "run")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	udd := filepath.Join(home, "profile")
	var socket string
	var args []string
	for i, a := range manifest[1:] {
		switch {
		case i+1 < dash && strings.HasPrefix(a, "--socket="):
			// Where the manifest's socket is below its volume, below ours.
			rel := strings.TrimPrefix(strings.TrimPrefix(a, "--socket="), "/run/tabwarden")
			socket = filepath.Join(shared, rel)
			a = "--socket=" + socket
		case strings.HasPrefix(a, "--user-data-dir="):
			a = "--user-data-dir=" + udd
		}
		args = append(args, a)
	}
	if socket == "" {
		t.Fatalf("the manifest's bridge has no --socket=/run/tabwarden/…: %q", manifest)
	}
	id := strconv.FormatInt(uid, 10)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", "--", bin}, args...)...)
	// The container's environment: HOME on the data volume, nothing of root's.
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	cmd.Dir = home
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stopped := false
	defer func() {
		if !stopped {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		for _, pid := range processesWith(udd) { // Chromium's group is its own
			if n, err := strconv.Atoi(pid); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
	}()

	deadline := time.Now().Add(60 * time.Second)
	browserPid := 0
	for {
		select {
		case <-exited:
			t.Fatalf("the bridge or Chromium exited without --no-sandbox (%v):\n%s", cmd.ProcessState, tail(stderr.String(), 4<<10))
		default:
		}
		var sandboxed, renderers []string
		var browserNS string
		for _, pid := range processesWith(udd) {
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if !bytes.Contains(cmdline, []byte("--type=")) && bytes.HasPrefix(cmdline, []byte(manifest[dash+1]+"\x00")) {
				browserPid, _ = strconv.Atoi(pid)
				browserNS, _ = os.Readlink("/proc/" + pid + "/ns/user")
			}
		}
		for _, pid := range processesWith(udd) {
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if !bytes.Contains(cmdline, []byte("--type=renderer")) {
				continue
			}
			ns, _ := os.Readlink("/proc/" + pid + "/ns/user")
			status, _ := os.ReadFile("/proc/" + pid + "/status")
			renderers = append(renderers, pid+" "+ns)
			if ns != "" && browserNS != "" && ns != browserNS && bytes.Contains(status, []byte("Seccomp:\t2")) {
				sandboxed = append(sandboxed, pid)
			}
		}
		if len(renderers) > 0 && len(sandboxed) == len(renderers) {
			t.Logf("renderers %v sandboxed (browser %d in %s)", renderers, browserPid, browserNS)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s, renderers %v, of which sandboxed (own user namespace, seccomp filter) %v:\n%s", renderers, sandboxed, tail(stderr.String(), 4<<10))
		}
		time.Sleep(250 * time.Millisecond)
	}

	// No port: Chromium's process group (its own, made by the bridge) listens on nothing.
	if ports, err := chromium.ListeningPorts(browserPid); err != nil || len(ports) != 0 {
		t.Errorf("the pool's Chromium listens on TCP ports %v (%v)", ports, err)
	}
	// The socket: the pool uid's, 0600, in a 0700 directory of that uid.
	for path, want := range map[string]os.FileMode{filepath.Dir(socket): 0o700, socket: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("%v\n%s", err, tail(stderr.String(), 4<<10))
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != want || int64(st.Uid) != uid {
			t.Errorf("%s: mode %04o, uid %d; want %04o, uid %d", path, fi.Mode().Perm(), st.Uid, want, uid)
		}
	}
	// The pipe answers through it.
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write([]byte(`{"id":1,"method":"Browser.getVersion"}` + "\x00")); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(conn).ReadBytes(0)
	if err != nil || !bytes.Contains(reply, []byte(`"id":1`)) || !bytes.Contains(reply, []byte(`"product"`)) {
		t.Fatalf("Browser.getVersion through the socket: %q, %v", reply, err)
	}
	_ = conn.Close()

	// SIGTERM (a pod stopping): the bridge closes Chromium and exits 0.
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
		stopped = true
	case <-time.After(15 * time.Second):
		t.Fatalf("the bridge did not exit within 15 s of SIGTERM:\n%s", tail(stderr.String(), 4<<10))
	}
	if !cmd.ProcessState.Success() {
		t.Errorf("the bridge exited %v on SIGTERM, want 0:\n%s", cmd.ProcessState, tail(stderr.String(), 4<<10))
	}
	if left := processesWith(udd); len(left) > 0 {
		time.Sleep(2 * time.Second) // renderers end after their browser
		if left = processesWith(udd); len(left) > 0 {
			t.Errorf("Chromium processes %v outlive the bridge", left)
		}
	}
}

// processesWith lists the pids whose command line contains s.
func processesWith(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name())
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
