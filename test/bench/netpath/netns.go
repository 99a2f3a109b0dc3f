package netpath

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Netns is a network namespace of the benchmark's own, joined to the host's
// namespace by a veth pair with a /30 of 10.231.0.0/16: HostIP on the host's
// end, NSIP on the namespace's. Its name is "twb-<pid>-<random>", so that a
// namespace left behind by a killed run can be told from one in use
// (CleanStale). Close removes it.
type Netns struct {
	Name           string
	HostIf, NSIf   string
	HostIP, NSIP   string
	closeOnce      sync.Once
	mu             sync.Mutex
	procs          []*exec.Cmd
	closeErr       error
	removeHostLink bool
}

// namePrefix begins every namespace this package makes.
const namePrefix = "twb-"

// cmdTimeout bounds each ip command.
const cmdTimeout = 10 * time.Second

func ip(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Available says why namespaces cannot be made here (nil when they can): the
// caller must be root and have iproute2's ip.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("network namespaces and veth pairs need root (this process runs as uid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("network namespaces need iproute2's ip: %w", err)
	}
	return nil
}

// NewNetns makes a namespace with its loopback up and a veth pair to the
// host. On failure nothing is left behind.
func NewNetns(ctx context.Context) (*Netns, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	CleanStale(ctx)
	id := rand.Uint32() & 0xffff
	// Interface names are at most 15 bytes.
	suffix := fmt.Sprintf("%d%04x", os.Getpid()%100000, id)
	octet := 1 + rand.IntN(254)
	sub := int(id%64) * 4
	n := &Netns{
		Name:   fmt.Sprintf("%s%d-%04x", namePrefix, os.Getpid(), id),
		HostIf: "twh" + suffix, NSIf: "twn" + suffix,
		HostIP: fmt.Sprintf("10.231.%d.%d", octet, sub+1), NSIP: fmt.Sprintf("10.231.%d.%d", octet, sub+2),
	}
	steps := [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.HostIf, "type", "veth", "peer", "name", n.NSIf},
		{"link", "set", n.NSIf, "netns", n.Name},
		{"addr", "add", n.HostIP + "/30", "dev", n.HostIf},
		{"link", "set", n.HostIf, "up"},
		{"-n", n.Name, "addr", "add", n.NSIP + "/30", "dev", n.NSIf},
		{"-n", n.Name, "link", "set", n.NSIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
	}
	for i, s := range steps {
		if err := ip(ctx, s...); err != nil {
			if i == 0 {
				return nil, fmt.Errorf("making a network namespace: %w", err)
			}
			n.removeHostLink = i >= 2
			_ = n.Close() // undo what was made; the first error is the one to report
			return nil, fmt.Errorf("setting up namespace %s: %w", n.Name, err)
		}
		if i == 1 {
			n.removeHostLink = true
		}
	}
	return n, nil
}

// Command is name args run inside the namespace (ip netns exec), in a process
// group of its own; Close kills the group if it still runs.
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	n.mu.Lock()
	n.procs = append(n.procs, cmd)
	n.mu.Unlock()
	return cmd
}

// Close kills what runs in the namespace and removes the veth pair and the
// namespace. It is safe to call more than once, and from a signal handler's
// goroutine.
func (n *Netns) Close() error {
	n.closeOnce.Do(func() {
		ctx := context.Background()
		n.mu.Lock()
		procs := n.procs
		n.mu.Unlock()
		for _, c := range procs {
			if c.Process != nil {
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // the group may be gone already
			}
		}
		killIn(ctx, n.Name)
		var errs []error
		if n.removeHostLink {
			// Deleting one end deletes the pair; it may be gone with the namespace.
			if err := ip(ctx, "link", "del", n.HostIf); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
				errs = append(errs, err)
			}
		}
		errs = append(errs, ip(ctx, "netns", "del", n.Name))
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// killIn kills every process still in namespace name.
func killIn(ctx context.Context, name string) {
	cctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(cctx, "ip", "netns", "pids", name).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL) // it may have exited meanwhile
		}
	}
}

// CleanStale removes the namespaces this package made in runs that no longer
// exist (twb-<pid>-… whose pid is gone), with whatever still runs in them.
func CleanStale(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(cctx, "ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], namePrefix) {
			continue
		}
		rest := strings.TrimPrefix(f[0], namePrefix)
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		killIn(ctx, f[0])
		_ = ip(ctx, "netns", "del", f[0]) // best effort: a stale namespace is not this run's failure
	}
}
