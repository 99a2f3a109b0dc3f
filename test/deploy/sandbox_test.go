package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPoolChromiumRunsSandboxed: the pool's Chromium, run as the manifest runs it
// (its command and flags, its non-root uid, no --no-sandbox), on real Debian
// Chromium (the image's package), starts, and its renderers run in a user
// namespace of their own under seccomp-bpf. What this machine cannot show is the
// container runtime applying config/agent/seccomp/chromium.json.
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
	if _, err := os.Stat(chr.Command[0]); err != nil {
		t.Fatalf("the manifest runs %s, Debian's Chromium (make chromium): %v", chr.Command[0], err)
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
	home := filepath.Join(work, "data")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, int(uid), int(uid)); err != nil {
		t.Fatal(err)
	}
	udd := filepath.Join(home, "profile")
	var args []string
	for _, a := range append(chr.Command[1:], chr.Args...) {
		switch {
		case strings.HasPrefix(a, "--user-data-dir="):
			a = "--user-data-dir=" + udd
		case strings.HasPrefix(a, "--remote-debugging-port="):
			a = "--remote-debugging-port=0"
		}
		args = append(args, a)
	}
	id := strconv.FormatInt(uid, 10)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", "--", chr.Command[0]}, args...)...)
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
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}()

	browserNS, _ := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("Chromium exited without --no-sandbox (%v):\n%s", cmd.ProcessState, tail(stderr.String(), 4<<10))
		default:
		}
		var sandboxed, renderers []string
		for _, pid := range processesWith(udd) {
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if !bytes.Contains(cmdline, []byte("--type=renderer")) {
				continue
			}
			ns, _ := os.Readlink("/proc/" + pid + "/ns/user")
			status, _ := os.ReadFile("/proc/" + pid + "/status")
			renderers = append(renderers, pid+" "+ns)
			if ns != "" && ns != browserNS && bytes.Contains(status, []byte("Seccomp:\t2")) {
				sandboxed = append(sandboxed, pid)
			}
		}
		if len(renderers) > 0 && len(sandboxed) == len(renderers) {
			t.Logf("renderers %v sandboxed (browser in %s)", renderers, browserNS)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s, renderers %v, of which sandboxed (own user namespace, seccomp filter) %v:\n%s", renderers, sandboxed, tail(stderr.String(), 4<<10))
		}
		time.Sleep(250 * time.Millisecond)
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
