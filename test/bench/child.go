package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// child is a role running as a child process.
type child struct {
	cmd   *exec.Cmd
	stats string
	done  chan struct{}
}

func startChild(cfg config, role, restPath, tag string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	stats := filepath.Join(cfg.profileDir, role+"-"+tag+".stats.json")
	_ = os.Remove(stats)
	args := []string{"-role", role, "-rest", restPath, "-stats", stats,
		"-cpuprofile", filepath.Join(cfg.profileDir, role+"-"+tag+".cpu.pprof"),
		"-heapprofile", filepath.Join(cfg.profileDir, role+"-"+tag+".heap.pprof")}
	if cfg.roleQPS > 0 {
		args = append(args, "-qps", fmt.Sprint(cfg.roleQPS), "-burst", fmt.Sprint(cfg.roleBurst))
	}
	if role == "controller" && cfg.ctlWorkers > 0 {
		args = append(args, "-workers", fmt.Sprint(cfg.ctlWorkers))
	}
	cmd := exec.Command(exe, args...)
	if cfg.roleMemMiB > 0 {
		// What run.SoftMemoryLimit sets under a container limit of that size.
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMEMLIMIT=%d", int64(cfg.roleMemMiB)<<20/10*9))
	}
	logf, err := os.Create(filepath.Join(cfg.profileDir, role+"-"+tag+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, stats: stats, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(c.done) }() // best-effort cleanup
	return c, nil
}

func (c *child) read() roleStats {
	var st roleStats
	if data, err := os.ReadFile(c.stats); err == nil {
		_ = json.Unmarshal(data, &st)
	}
	return st
}

func (c *child) signal(s syscall.Signal) { _ = c.cmd.Process.Signal(s) }

func (c *child) stop() {
	c.signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
