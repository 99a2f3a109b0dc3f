package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

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

// --- tracking readiness through a watch ---

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
func floor(ctx context.Context, c client.WithWatch, admin *rest.Config, st client.Client, cfg config, S int) (ready, gone time.Duration, writes int64, err error) {
	ns := fmt.Sprintf("floor-%d", S)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return 0, 0, 0, err
	}
	h := &hub[apiEvent]{}
	tr := newTracker(cfg.scaleWin)
	h.expect(tr.on) // never completes: a permanent listener
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := waitOpen(ctx, watchAPI(wctx, c, ns, h)); err != nil {
		return 0, 0, 0, err
	}
	now := metav1.Now()
	cond := func(typ string) []metav1.Condition {
		return []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: "Floor", Message: "floor", LastTransitionTime: now}}
	}
	sessStatus := map[string]any{"phase": "Active", "profileName": "scale",
		"windows":    map[string]any{"opened": cfg.scaleWin, "live": cfg.scaleWin, "spawned": 0, "bound": 0, "unacknowledged": 0},
		"conditions": append(cond(twv1.ReadyCondition), cond(twv1.RegisteredCondition)...)}
	var nw int64
	var mu sync.Mutex
	prof := profileAPIServer(ctx, cfg, admin, fmt.Sprintf("floor-S%d", S))
	defer prof()
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
	prof()
	profDel := profileAPIServer(ctx, cfg, admin, fmt.Sprintf("floor-delete-S%d", S))
	defer profDel()
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
	if _, _, _, err := floor(ctx, c, kc, st, withoutProfile(cfg), 1); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, S := range cfg.scaleS {
		row := scaleRow{S: S, W: cfg.scaleWin, load: loadAvg1()}
		logf("scale S=%d: API server floor (%d creates + %d status writes, %d workers)", S, S*(1+cfg.scaleWin), S*(1+cfg.scaleWin), cfg.workers)
		var err error
		if row.floorReady, row.floorGone, row.floorWritesCreate, err = floor(ctx, c, kc, st, cfg, S); err != nil {
			return fmt.Errorf("floor S=%d: %w", S, err)
		}
		logf("  floor: ready %v, deleted %v", row.floorReady.Round(time.Millisecond), row.floorGone.Round(time.Millisecond))
		if err := scaleRun(ctx, c, kc, cfg, rests, S, &row); err != nil {
			return fmt.Errorf("scale S=%d: %w", S, err)
		}
		rep.scale = append(rep.scale, row)
	}
	rep.profiles = summarizeProfiles(cfg, rep.scale)
	return nil
}

func scaleRun(ctx context.Context, c client.WithWatch, admin *rest.Config, cfg config, rests map[string]string, S int, row *scaleRow) error {
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
	if err := waitOpen(ctx, watchAPI(wctx, c, ns, h)); err != nil {
		return err
	}
	settle(ctl, agt) // the roles' start-up writes are not the create phase's

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
	prof := profileAPIServer(ctx, cfg, admin, fmt.Sprintf("tabwarden-S%d", S))
	defer prof()
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
	settle(ctl, agt)
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

	prof()
	smp = startSampler(pm)
	profDel := profileAPIServer(ctx, cfg, admin, fmt.Sprintf("tabwarden-delete-S%d", S))
	defer profDel()
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
	settle(ctl, agt)
	row.ctlDelete, row.agtDelete = ctl.read().Counts.minus(c1), agt.read().Counts.minus(a1)
	logf("  pages closed in %v, objects gone in %v (floor %v)", row.pagesClosed.Round(time.Millisecond), row.gone.Round(time.Millisecond), row.floorGone.Round(time.Millisecond))
	return nil
}

// waitOpen waits for watchAPI's watches to open.
func waitOpen(ctx context.Context, open <-chan struct{}) error {
	select {
	case <-open:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the API watches did not open in 30 s")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settleFor is how long the roles' request counts must stay still to call them
// settled: several of the stats files' 100 ms updates, and longer than any
// write a reconcile makes right after another.
const settleFor = 600 * time.Millisecond

// settle waits (at most 10 s) until neither child role has sent a request for
// settleFor, as read from their stats files.
func settle(kids ...*child) {
	waitStill(func() (n int64) {
		for _, k := range kids {
			n += k.read().Counts.total()
		}
		return n
	}, settleFor, 10*time.Second)
}

func withoutProfile(cfg config) config { cfg.apiProfile = 0; return cfg }

// profileAPIServer starts a CPU profile of the API server (its
// /debug/pprof/profile, as the bench's administrator) for cfg.apiProfile and
// returns a wait for it, which logs where the profile went. Nothing when
// -apiserver-profile is unset.
func profileAPIServer(ctx context.Context, cfg config, admin *rest.Config, name string) (wait func()) {
	if cfg.apiProfile <= 0 {
		return func() {}
	}
	rc := rest.CopyConfig(admin)
	rc.Timeout = cfg.apiProfile + time.Minute
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		logf("  apiserver profile %s: %v", name, err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(cfg.apiProfile.Seconds()))).DoRaw(ctx)
		if err != nil {
			logf("  apiserver profile %s: %v", name, err)
			return
		}
		p := filepath.Join(cfg.profileDir, "apiserver-"+name+".cpu.pprof")
		if err := os.WriteFile(p, body, 0o644); err != nil {
			logf("  apiserver profile %s: %v", name, err)
			return
		}
		logf("  apiserver profile: %s", p)
	}()
	var once sync.Once
	return func() { once.Do(func() { <-done }) }
}
