package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// procUsage is one process's resource use over a phase.
type procUsage struct {
	peakRSS float64 // MiB
	cpu     float64 // seconds, in the phase
}

type scaleRow struct {
	S, W                      int
	floorReady, floorGone     time.Duration
	ready, pagesClosed, gone  time.Duration
	ctl, agt, apiserver, etcd procUsage // create phase
	ctlDel, agtDel, apiDel    procUsage // delete phase
	ctlCreate, agtCreate      counts
	ctlDelete, agtDelete      counts
	floorWritesCreate         int64
	// ctlLive and agtLive are the roles' live heaps at Ready (bytes, after a forced GC).
	ctlLive, agtLive uint64
	// load is /proc/loadavg's 1-minute figure when this S began (before its floor).
	load string
}

// loadAvg1 is the 1-minute load average, "?" when unknown.
func loadAvg1() string {
	l, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(l)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// scaleTimeout bounds each wait of one S: generous, and growing with S so that
// S=10,000 on a slow or shared machine times out only when something is stuck.
func scaleTimeout(S int) time.Duration {
	return 30*time.Minute + time.Duration(S)*250*time.Millisecond
}

func (r scaleRow) readyRatio() float64 { return r.ready.Seconds() / r.floorReady.Seconds() }

func growth(rows []scaleRow) float64 {
	a, b := rows[0], rows[len(rows)-1]
	return (b.ready.Seconds() / float64(b.S)) / (a.ready.Seconds() / float64(a.S))
}

// --- /proc ---

func procStat(pid int) (rssMiB float64, cpuSec float64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// fields after comm: state(0) ... utime(11) stime(12) ... rss(21) in pages
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	rss, _ := strconv.ParseFloat(f[21], 64)
	return rss * float64(os.Getpagesize()) / (1 << 20), (ut + st) / 100, true
}

// childPIDs finds processes whose parent is this one, by command name.
func childPIDs() map[string]int {
	out := map[string]int{}
	ents, _ := os.ReadDir("/proc")
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(data)
		comm := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			out[comm] = pid
		}
	}
	return out
}

// sampler tracks peak RSS and CPU of processes over a phase.
type sampler struct {
	mu    sync.Mutex
	pids  map[string]int
	start map[string]float64
	peak  map[string]float64
	stop  chan struct{}
	done  chan struct{}
}

func startSampler(pids map[string]int) *sampler {
	s := &sampler{pids: pids, start: map[string]float64{}, peak: map[string]float64{}, stop: make(chan struct{}), done: make(chan struct{})}
	for k, pid := range pids {
		rss, cpu, _ := procStat(pid)
		s.start[k], s.peak[k] = cpu, rss
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.mu.Lock()
				for k, pid := range s.pids {
					if rss, _, ok := procStat(pid); ok && rss > s.peak[k] {
						s.peak[k] = rss
					}
				}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *sampler) finish() map[string]procUsage {
	close(s.stop)
	<-s.done
	out := map[string]procUsage{}
	for k, pid := range s.pids {
		rss, cpu, ok := procStat(pid)
		if ok && rss > s.peak[k] {
			s.peak[k] = rss
		}
		out[k] = procUsage{peakRSS: s.peak[k], cpu: cpu - s.start[k]}
	}
	return out
}

// --- tracking readiness through a watch ---

type tracker struct {
	mu                 sync.Mutex
	sessions, windows  map[string]bool // exists
	readySess, openWin map[string]bool
	w                  int
}

func newTracker(w int) *tracker {
	return &tracker{sessions: map[string]bool{}, windows: map[string]bool{}, readySess: map[string]bool{}, openWin: map[string]bool{}, w: w}
}

func (t *tracker) on(e apiEvent) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case e.Sess != nil:
		n := e.Sess.Name
		if e.Type == watch.Deleted {
			delete(t.sessions, n)
			delete(t.readySess, n)
			return false
		}
		t.sessions[n] = true
		st := e.Sess.Status
		if apimeta.IsStatusConditionTrue(st.Conditions, twv1.ReadyCondition) && int(st.Windows.Live) == t.w && int(st.Windows.Opened) == t.w {
			t.readySess[n] = true
		} else {
			delete(t.readySess, n)
		}
	case e.Win != nil:
		n := e.Win.Name
		if e.Type == watch.Deleted {
			delete(t.windows, n)
			delete(t.openWin, n)
			return false
		}
		t.windows[n] = true
		if e.Win.Status.Phase == twv1.WindowOpen && e.Win.Status.TabID != "" {
			t.openWin[n] = true
		} else {
			delete(t.openWin, n)
		}
	}
	return false
}

func (t *tracker) state() (sess, win, ready, open int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions), len(t.windows), len(t.readySess), len(t.openWin)
}

// waitFor polls the tracker (and extra) until cond holds; it logs progress.
func waitFor(what string, timeout time.Duration, t *tracker, cond func(sess, win, ready, open int) bool) error {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		s, w, r, o := t.state()
		if cond(s, w, r, o) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: timed out after %v (sessions %d, windows %d, ready %d, open %d)", what, timeout, s, w, r, o)
		}
		if time.Since(lastLog) > 15*time.Second {
			logf("  %s: sessions %d, windows %d, ready sessions %d, open windows %d", what, s, w, r, o)
			lastLog = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --- the load ---

func scaleSession(ns string, i int) *twv1.BrowserSession {
	return &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s%05d", i)},
		Spec:       twv1.BrowserSessionSpec{Thread: fmt.Sprintf("thread-%d", i), Purpose: "scale benchmark", ProfileName: "scale"},
	}
}

func scaleWindow(ns string, i, j int) *twv1.BrowserWindow {
	return newWindow(ns, fmt.Sprintf("s%05d-w%d", i, j), fmt.Sprintf("s%05d", i), fmt.Sprintf("https://scale.example/%d/%d", i, j))
}

// parallel runs f(i) for i in [0, n) on the given number of workers.
func parallel(n, workers int, f func(i int) error) error {
	ch := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		ch <- i
	}
	close(ch)
	wg.Wait()
	return first
}

func statusPatch(obj client.Object, status any) client.Patch {
	data, _ := json.Marshal(map[string]any{"status": status})
	return client.RawPatch("application/merge-patch+json", data)
}

// floor: the unavoidable API work without tabwarden: create every session and
// window and write one status per object, same workers; then delete them. The
// status writes go through st, the controller's identity: the admission policies
// let no one else write them.
func floor(ctx context.Context, c client.WithWatch, st client.Client, cfg config, S int) (ready, gone time.Duration, writes int64, err error) {
	ns := fmt.Sprintf("floor-%d", S)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return 0, 0, 0, err
	}
	h := &hub[apiEvent]{}
	tr := newTracker(cfg.scaleWin)
	h.expect(tr.on) // never completes: a permanent listener
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchAPI(wctx, c, ns, h)
	time.Sleep(300 * time.Millisecond)
	now := metav1.Now()
	cond := func(typ string) []metav1.Condition {
		return []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: "Floor", Message: "floor", LastTransitionTime: now}}
	}
	sessStatus := map[string]any{"phase": "Active", "profileName": "scale",
		"windows":    map[string]any{"opened": cfg.scaleWin, "live": cfg.scaleWin, "spawned": 0, "bound": 0, "unacknowledged": 0},
		"conditions": append(cond(twv1.ReadyCondition), cond(twv1.RegisteredCondition)...)}
	var nw int64
	var mu sync.Mutex
	t0 := time.Now()
	err = parallel(S, cfg.workers, func(i int) error {
		s := scaleSession(ns, i)
		if err := c.Create(ctx, s); err != nil {
			return err
		}
		if err := st.Status().Patch(ctx, s, statusPatch(s, sessStatus)); err != nil {
			return err
		}
		for j := 0; j < cfg.scaleWin; j++ {
			w := scaleWindow(ns, i, j)
			if err := c.Create(ctx, w); err != nil {
				return err
			}
			ws := map[string]any{"phase": "Open", "tabId": fmt.Sprintf("tab-%d-%d", i, j), "windowId": "w", "profileName": "scale",
				"conditions": append(cond(twv1.ReadyCondition), cond(twv1.OpenedCondition)...)}
			if err := st.Status().Patch(ctx, w, statusPatch(w, ws)); err != nil {
				return err
			}
		}
		mu.Lock()
		nw += int64(2 + 2*cfg.scaleWin)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	if err := waitFor("floor ready", scaleTimeout(S), tr, func(s, w, r, o int) bool { return r == S && o == S*cfg.scaleWin }); err != nil {
		return 0, 0, 0, err
	}
	ready = time.Since(t0)
	t1 := time.Now()
	err = parallel(S, cfg.workers, func(i int) error {
		for j := 0; j < cfg.scaleWin; j++ {
			if err := c.Delete(ctx, scaleWindow(ns, i, j)); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		return client.IgnoreNotFound(c.Delete(ctx, scaleSession(ns, i)))
	})
	if err != nil {
		return 0, 0, 0, err
	}
	if err := waitFor("floor deleted", scaleTimeout(S), tr, func(s, w, r, o int) bool { return s == 0 && w == 0 }); err != nil {
		return 0, 0, 0, err
	}
	return ready, time.Since(t1), nw, nil
}

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

func scaleSection(ctx context.Context, cfg config, restCfg *rest.Config, rep *report) error {
	kc := rest.CopyConfig(restCfg)
	kc.QPS, kc.Burst = 10000, 20000
	c, err := client.NewWithWatch(kc, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return err
	}
	// The roles run as child processes, each under its own identity.
	ctlCfg, err := testenv.ControllerConfig(restCfg)
	if err != nil {
		return err
	}
	agtCfg, err := testenv.AgentConfig(restCfg, "scale")
	if err != nil {
		return err
	}
	rests := map[string]string{"controller": filepath.Join(cfg.profileDir, "rest-controller.json"), "agent": filepath.Join(cfg.profileDir, "rest-agent.json")}
	if err := writeRestFile(rests["controller"], ctlCfg); err != nil {
		return err
	}
	if err := writeRestFile(rests["agent"], agtCfg); err != nil {
		return err
	}
	stc := rest.CopyConfig(ctlCfg)
	stc.QPS, stc.Burst = 10000, 20000
	st, err := client.New(stc, client.Options{Scheme: run.Scheme()})
	if err != nil {
		return err
	}
	// Warm up: the first write to a just-installed CRD is slow server-side (≈ 2 s).
	if _, _, _, err := floor(ctx, c, st, cfg, 1); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, S := range cfg.scaleS {
		row := scaleRow{S: S, W: cfg.scaleWin, load: loadAvg1()}
		logf("scale S=%d: API server floor (%d creates + %d status writes, %d workers)", S, S*(1+cfg.scaleWin), S*(1+cfg.scaleWin), cfg.workers)
		var err error
		if row.floorReady, row.floorGone, row.floorWritesCreate, err = floor(ctx, c, st, cfg, S); err != nil {
			return fmt.Errorf("floor S=%d: %w", S, err)
		}
		logf("  floor: ready %v, deleted %v", row.floorReady.Round(time.Millisecond), row.floorGone.Round(time.Millisecond))
		if err := scaleRun(ctx, c, cfg, rests, S, &row); err != nil {
			return fmt.Errorf("scale S=%d: %w", S, err)
		}
		rep.scale = append(rep.scale, row)
	}
	rep.profiles = summarizeProfiles(cfg, rep.scale)
	return nil
}

func scaleRun(ctx context.Context, c client.WithWatch, cfg config, rests map[string]string, S int, row *scaleRow) error {
	ns := fmt.Sprintf("scale-%d", S)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	// A fresh profile for a fresh agent.
	_ = c.Delete(ctx, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "scale"}})
	if err := testenv.EnsureProfile(ctx, c, "scale", twv1.DriverFake); err != nil {
		return err
	}
	tag := fmt.Sprintf("S%d", S)
	ctl, err := startChild(cfg, "controller", rests["controller"], tag)
	if err != nil {
		return err
	}
	defer ctl.stop()
	agt, err := startChild(cfg, "agent", rests["agent"], tag)
	if err != nil {
		return err
	}
	defer agt.stop()
	if err := poll(60*time.Second, func() (bool, error) {
		p := &twv1.BrowserProfile{}
		if err := c.Get(ctx, client.ObjectKey{Name: "scale"}, p); err != nil {
			return false, nil
		}
		return apimeta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition) && ctl.read().Counts != nil, nil
	}); err != nil {
		return fmt.Errorf("the scale agent never connected: %w", err)
	}
	h := &hub[apiEvent]{}
	tr := newTracker(cfg.scaleWin)
	h.expect(tr.on)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchAPI(wctx, c, ns, h)
	time.Sleep(2 * time.Second)

	pids := childPIDs()
	pm := map[string]int{"controller": ctl.cmd.Process.Pid, "agent": agt.cmd.Process.Pid}
	for comm, pid := range pids {
		if comm == "kube-apiserver" || comm == "etcd" {
			pm[comm] = pid
		}
	}
	logf("scale S=%d: tabwarden (%d sessions × %d windows, %d workers creating)", S, S, cfg.scaleWin, cfg.workers)
	c0, a0 := ctl.read().Counts, agt.read().Counts
	smp := startSampler(pm)
	t0 := time.Now()
	err = parallel(S, cfg.workers, func(i int) error {
		// Created as a client of tabwarden does (kubectl tabwarden start and
		// open, the MCP server): the session with its cleanup finalizer, each
		// window registered in its create. The session was only just created,
		// so the windows are registered for the profile it pins (the
		// controller relabels any whose session lands elsewhere).
		s := scaleSession(ns, i)
		s.Finalizers = []string{twv1.SessionFinalizer}
		if err := c.Create(ctx, s); err != nil {
			return err
		}
		pinned := s.DeepCopy()
		pinned.Status.ProfileName = s.Spec.ProfileName
		for j := 0; j < cfg.scaleWin; j++ {
			w := scaleWindow(ns, i, j)
			w.Register(pinned, true)
			if err := c.Create(ctx, w); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	logf("  created in %v", time.Since(t0).Round(time.Millisecond))
	if err := waitFor("tabwarden ready", scaleTimeout(S), tr, func(s, w, r, o int) bool { return r == S && o == S*cfg.scaleWin }); err != nil {
		return err
	}
	row.ready = time.Since(t0)
	u := smp.finish()
	row.ctl, row.agt, row.apiserver, row.etcd = u["controller"], u["agent"], u["kube-apiserver"], u["etcd"]
	// Let the trailing writes finish before reading the create phase's requests.
	time.Sleep(2 * time.Second)
	c1, a1 := ctl.read().Counts, agt.read().Counts
	row.ctlCreate, row.agtCreate = c1.minus(c0), a1.minus(a0)
	ctl.signal(syscall.SIGUSR1)
	agt.signal(syscall.SIGUSR1)
	_ = poll(time.Minute, func() (bool, error) {
		row.ctlLive, row.agtLive = ctl.read().LiveHeap, agt.read().LiveHeap
		return row.ctlLive > 0 && row.agtLive > 0, nil
	})
	logf("  live heap at Ready: controller %.1f MB, agent %.1f MB (%.0f and %.0f bytes per window)", float64(row.ctlLive)/1e6, float64(row.agtLive)/1e6,
		float64(row.ctlLive)/float64(S*cfg.scaleWin), float64(row.agtLive)/float64(S*cfg.scaleWin))
	logf("  ready in %v (floor %v)", row.ready.Round(time.Millisecond), row.floorReady.Round(time.Millisecond))

	smp = startSampler(pm)
	t1 := time.Now()
	err = parallel(S, cfg.workers, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, scaleSession(ns, i)))
	})
	if err != nil {
		return err
	}
	if err := poll(scaleTimeout(S), func() (bool, error) {
		st := agt.read()
		return st.Pages == 0 && st.Counts != nil, nil
	}); err != nil {
		return fmt.Errorf("pages never all closed: %w", err)
	}
	row.pagesClosed = time.Since(t1)
	if err := waitFor("tabwarden deleted", scaleTimeout(S), tr, func(s, w, r, o int) bool { return s == 0 && w == 0 }); err != nil {
		return err
	}
	row.gone = time.Since(t1)
	u = smp.finish()
	row.ctlDel, row.agtDel, row.apiDel = u["controller"], u["agent"], u["kube-apiserver"]
	time.Sleep(2 * time.Second)
	row.ctlDelete, row.agtDelete = ctl.read().Counts.minus(c1), agt.read().Counts.minus(a1)
	logf("  pages closed in %v, objects gone in %v (floor %v)", row.pagesClosed.Round(time.Millisecond), row.gone.Round(time.Millisecond), row.floorGone.Round(time.Millisecond))
	return nil
}

func (r *report) scaleMarkdown() string {
	var b strings.Builder
	qps := "the shipped default client limit (QPS 200, burst 400)"
	if r.cfg.roleQPS > 0 {
		qps = fmt.Sprintf("client QPS %.0f, burst %d (run.Common; the shipped default is 200/400)", r.cfg.roleQPS, r.cfg.roleBurst)
	}
	if r.cfg.roleMemMiB > 0 {
		qps += fmt.Sprintf("; roles under a soft memory limit GOMEMLIMIT=%d MiB, as in a container limited to %d MiB (-role-memory-limit; the limit itself is not enforced)", r.cfg.roleMemMiB*9/10, r.cfg.roleMemMiB)
	} else {
		qps += "; no memory limit (GOGC=100, as shipped outside a container limit)"
	}
	if r.cfg.ctlWorkers > 0 {
		qps += fmt.Sprintf("; EXPERIMENT: every controller reconciler runs %d workers (shipped: 1)", r.cfg.ctlWorkers)
	}
	fmt.Fprintf(&b, "\n## Scale (fake driver, real API server; controller and agent as child processes, %s)\n\n", qps)
	fmt.Fprintf(&b, "S sessions × %d Open windows created at once by %d client workers; one run per S. The client creates as kubectl tabwarden does: sessions with their cleanup finalizer, windows registered in their create (labels, owner, page finalizer; docs/design.md, Writes per operation). *Ready*: every session has Ready=True with %d live windows and every window shows phase Open. "+
		"*Floor*: the same creates plus one status write per object, same workers, no tabwarden, waited for through the same watch. Times in seconds.\n\n", r.cfg.scaleWin, r.cfg.workers, r.cfg.scaleWin)
	b.WriteString("| S | load avg at start | objects | floor ready | **tabwarden ready** | ratio | per 1k sessions | floor delete | pages closed | objects gone | ratio | ctl RSS peak MiB | agent RSS peak MiB | apiserver RSS MiB | ctl CPU s | agent CPU s | apiserver CPU s | ctl req/s | agent req/s | writes per window (ctl + agent) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.scale {
		objs := s.S * (1 + s.W)
		nw := float64(s.S * s.W)
		fmt.Fprintf(&b, "| %d | %s | %d | %.1f | **%.1f** | %.2f× | %.2f | %.1f | %.1f | %.1f | %.2f× | %.0f | %.0f | %.0f | %.1f + %.1f | %.1f + %.1f | %.1f + %.1f | %.0f | %.0f | create %.2f + %.2f; delete %.2f + %.2f |\n",
			s.S, s.load, objs, s.floorReady.Seconds(), s.ready.Seconds(), s.readyRatio(), s.ready.Seconds()/float64(s.S)*1000,
			s.floorGone.Seconds(), s.pagesClosed.Seconds(), s.gone.Seconds(), s.gone.Seconds()/s.floorGone.Seconds(),
			max(s.ctl.peakRSS, s.ctlDel.peakRSS), max(s.agt.peakRSS, s.agtDel.peakRSS), max(s.apiserver.peakRSS, s.apiDel.peakRSS),
			s.ctl.cpu, s.ctlDel.cpu, s.agt.cpu, s.agtDel.cpu, s.apiserver.cpu, s.apiDel.cpu,
			float64(s.ctlCreate.total())/s.ready.Seconds(), float64(s.agtCreate.total())/s.ready.Seconds(),
			float64(s.ctlCreate.writes())/nw, float64(s.agtCreate.writes())/nw, float64(s.ctlDelete.writes())/nw, float64(s.agtDelete.writes())/nw)
	}
	b.WriteString("\nCPU columns: create phase + delete phase. The floor writes 2 requests per object (create + status).\n")
	if len(r.scale) > 0 {
		s := r.scale[len(r.scale)-1]
		nw := float64(s.S * s.W)
		fmt.Fprintf(&b, "\nLive heap at Ready at S=%d (after a forced GC): controller %.1f MB, agent %.1f MB (%.0f and %.0f bytes per window).\n", s.S,
			float64(s.ctlLive)/1e6, float64(s.agtLive)/1e6, float64(s.ctlLive)/nw, float64(s.agtLive)/nw)
		fmt.Fprintf(&b, "\nRequests per window at S=%d, create phase — controller: %s; agent: %s.\n", s.S, s.ctlCreate.breakdown(nw, false), s.agtCreate.breakdown(nw, false))
		fmt.Fprintf(&b, "Delete phase — controller: %s; agent: %s.\n", s.ctlDelete.breakdown(nw, false), s.agtDelete.breakdown(nw, false))
	}
	if r.profiles != "" {
		b.WriteString("\n### Profiles (largest S)\n\n" + r.profiles)
	}
	return b.String()
}

// summarizeProfiles renders the top of each role's CPU profile at the largest S.
func summarizeProfiles(cfg config, rows []scaleRow) string {
	if len(rows) == 0 {
		return ""
	}
	tag := fmt.Sprintf("S%d", rows[len(rows)-1].S)
	exe, _ := os.Executable()
	var b strings.Builder
	for _, role := range []string{"controller", "agent"} {
		for _, kind := range []string{"cpu", "heap"} {
			p := filepath.Join(cfg.profileDir, role+"-"+tag+"."+kind+".pprof")
			if _, err := os.Stat(p); err != nil {
				continue
			}
			args := []string{"tool", "pprof", "-top", "-nodecount=14"}
			if kind == "heap" {
				args = append(args, "-sample_index=inuse_space")
			} else {
				args = append(args, "-cum")
			}
			out, err := exec.Command("go", append(args, exe, p)...).Output()
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "%s %s profile (%s):\n\n```\n%s```\n\n", role, kind, p, trimPprof(string(out)))
		}
	}
	return b.String()
}

func trimPprof(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		if l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}
