package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/run"
)

// roleStats is what a child role reports to the bench through its stats file.
type roleStats struct {
	Counts     counts `json:"counts"`
	Pages      int    `json:"pages"`
	Goroutines int    `json:"goroutines"`
	Done       bool   `json:"done"`
	// LiveHeap is the heap in use right after the collection that SIGUSR1
	// forces (runtime.MemStats.HeapAlloc, bytes): what the process keeps alive.
	LiveHeap uint64 `json:"liveHeap,omitempty"`
	// MemLimit is the Go runtime's soft memory limit (bytes; 0: none).
	MemLimit int64 `json:"memLimit,omitempty"`
}

// restFile is the part of a rest.Config a child needs to reach the API server.
type restFile struct {
	Host                      string
	CAData, CertData, KeyData []byte
	CAFile, CertFile, KeyFile string
	BearerToken, ServerName   string
}

func writeRestFile(path string, c *rest.Config) error {
	data, err := json.Marshal(restFile{
		Host: c.Host, CAData: c.CAData, CertData: c.CertData, KeyData: c.KeyData,
		CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile, BearerToken: c.BearerToken, ServerName: c.ServerName,
	})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func readRestFile(path string) (*rest.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f restFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	return &rest.Config{Host: f.Host, BearerToken: f.BearerToken, TLSClientConfig: rest.TLSClientConfig{
		CAData: f.CAData, CertData: f.CertData, KeyData: f.KeyData, CAFile: f.CAFile, CertFile: f.CertFile, KeyFile: f.KeyFile, ServerName: f.ServerName,
	}}, nil
}

// roleMain runs the controller or the agent (fake driver) as a child process:
// bench -role controller|agent -rest FILE -stats FILE [-qps N -burst N -cpuprofile FILE -heapprofile FILE].
// SIGUSR1 writes the heap profile; SIGTERM stops the role.
func roleMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "bench -role: controller or agent")
		return 2
	}
	role := args[0]
	fs := flag.NewFlagSet("role", flag.ExitOnError)
	restPath := fs.String("rest", "", "API server access")
	statsPath := fs.String("stats", "", "stats file")
	qps := fs.Float64("qps", 0, "client QPS")
	burst := fs.Int("burst", 0, "client burst")
	profile := fs.String("profile", "scale", "agent profile")
	cpuprofile := fs.String("cpuprofile", "", "CPU profile file")
	heapprofile := fs.String("heapprofile", "", "heap profile file (written on SIGUSR1)")
	workers := fs.Int("workers", 0, "the controller's reconcilers run this many workers (run.ControllerOptions.Workers; 0: as shipped)")
	_ = fs.Parse(args[1:])
	zl := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(os.Stderr), zapcore.ErrorLevel))
	ctrl.SetLogger(zapr.NewLogger(zl))

	cfg, err := readRestFile(*restPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cnt := newCounter()
	cfg = cnt.config(cfg)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }() // best-effort cleanup
		}
	}
	var liveHeap atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	go func() {
		for s := range sigs {
			if s == syscall.SIGUSR1 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				liveHeap.Store(ms.HeapAlloc)
				if *heapprofile != "" {
					if f, err := os.Create(*heapprofile); err == nil {
						_ = pprof.WriteHeapProfile(f)
						_ = f.Close() // best-effort cleanup
					}
				}
				continue
			}
			cancel()
		}
	}()
	common := run.Common{QPS: float32(*qps), Burst: *burst, SkipNameValidation: true}
	var b *fake.Browser
	write := func(done bool) {
		st := roleStats{Counts: cnt.snapshot(), Goroutines: runtime.NumGoroutine(), Done: done, LiveHeap: liveHeap.Load(), MemLimit: debug.SetMemoryLimit(-1)}
		if st.MemLimit == math.MaxInt64 {
			st.MemLimit = 0
		}
		if b != nil {
			st.Pages = b.PageCount()
		}
		data, _ := json.Marshal(st)
		tmp := *statsPath + ".tmp"
		if os.WriteFile(tmp, data, 0o644) == nil {
			_ = os.Rename(tmp, *statsPath)
		}
	}
	if role == "agent" {
		b = fake.New()
	}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				write(false)
			}
		}
	}()
	switch role {
	case "controller":
		err = run.Controller(ctx, cfg, run.ControllerOptions{Common: common, Workers: *workers})
	case "agent":
		err = run.Agent(ctx, cfg, run.AgentOptions{Common: common, Options: agent.Options{
			Profile: *profile, Driver: twv1.DriverFake, Browser: b, Identity: "bench-scale-agent", Heartbeat: 10 * time.Second,
		}})
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	write(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "role:", err)
		return 1
	}
	return 0
}
