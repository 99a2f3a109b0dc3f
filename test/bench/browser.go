package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

const benchNS = "bench"

// lab is everything the browser sections share: one Chromium, the fixture site,
// the in-process controller and CDP agent with their request counters, a raw
// CDP connection and a watch of the API server.
type lab struct {
	cfg    config
	site   *fixture.Server
	chrome *chromium.Process
	raw    *rawCDP
	k8s    client.WithWatch
	api    *hub[apiEvent]
	ctl    *counter
	agt    *counter
	reqs   hub[reqEvent]
	// pool is the pool profile's lab (cleanup section only).
	pool *poolLab
	stop func()
}

// reqEvent is one API request of a role, for splitting a latency into its legs.
type reqEvent struct {
	role, key, name string
	start, end      time.Time
}

func (l *lab) both() counts {
	c := l.ctl.snapshot().plus(l.agt.snapshot())
	if l.pool != nil {
		c = c.plus(l.pool.agt.snapshot())
	}
	return c
}

// quiet waits until neither role has made an API request for d (at most max),
// so that a cost window holds one operation's requests and nothing else.
func (l *lab) quiet(d, max time.Duration) {
	waitStill(func() int64 { return l.both().total() }, d, max)
}

// waitStill waits until count has not changed for d, at most max.
func waitStill(count func() int64, d, max time.Duration) {
	deadline := time.Now().Add(max)
	last, since := count(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if n := count(); n != last {
			last, since = n, time.Now()
			continue
		}
		if time.Since(since) >= d {
			return
		}
	}
}

// costWindow is the requests of each role between two quiet points.
type costWindow struct{ ctl, agt counts }

func (l *lab) mark() costWindow { return costWindow{l.ctl.snapshot(), l.agt.snapshot()} }

func (c costWindow) since(before costWindow) costWindow {
	return costWindow{c.ctl.minus(before.ctl), c.agt.minus(before.agt)}
}

func (c costWindow) add(o costWindow) costWindow {
	return costWindow{c.ctl.plus(o.ctl), c.agt.plus(o.agt)}
}

const quietFor = 1500 * time.Millisecond // > the cdp driver's 1 s target refresh

func startLab(ctx context.Context, cfg config, restCfg *rest.Config) (*lab, error) {
	l := &lab{cfg: cfg, ctl: newCounter(), agt: newCounter(), api: &hub[apiEvent]{}}
	l.ctl.trace = func(k, n string, s, e time.Time) { l.reqs.publish(reqEvent{"controller", k, n, s, e}) }
	l.agt.trace = func(k, n string, s, e time.Time) { l.reqs.publish(reqEvent{"agent", k, n, s, e}) }
	l.site = fixture.Serve()
	var err error
	logf("launching headless Chromium")
	if l.chrome, err = chromiumtest.LaunchContext(ctx, chromium.Options{}); err != nil {
		return nil, err
	}
	if l.raw, err = dialCDP(ctx, l.chrome.WebSocketURL); err != nil {
		return nil, err
	}
	kc := rest.CopyConfig(restCfg)
	kc.QPS, kc.Burst = 5000, 10000
	if l.k8s, err = client.NewWithWatch(kc, client.Options{Scheme: run.Scheme()}); err != nil {
		return nil, err
	}
	if err := l.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}); client.IgnoreAlreadyExists(err) != nil {
		return nil, err
	}
	if err := testenv.EnsureProfile(ctx, l.k8s, "bench", twv1.DriverCDP); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	watchOpen := watchAPI(rctx, l.k8s, benchNS, l.api)
	drv, err := cdp.New(ctx, l.chrome.WebSocketURL, cdp.Options{})
	if err != nil {
		cancel()
		return nil, err
	}
	// Each role under its own identity, with the shipped RBAC and admission policies.
	ctlCfg, err := testenv.ControllerConfig(restCfg)
	if err != nil {
		cancel()
		return nil, err
	}
	agtCfg, err := testenv.AgentConfig(restCfg, "bench")
	if err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := run.Controller(rctx, l.ctl.config(ctlCfg), run.ControllerOptions{Common: run.Common{SkipNameValidation: true}}); err != nil {
			logf("controller stopped: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := run.Agent(rctx, l.agt.config(agtCfg), run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
			Profile: "bench", Driver: twv1.DriverCDP, Browser: drv, Identity: "bench-agent", Heartbeat: time.Hour,
		}}); err != nil {
			logf("agent stopped: %v", err)
		}
	}()
	l.stop = func() {
		cancel()
		wg.Wait()
		drv.Shutdown()
		l.raw.close()
		_ = l.chrome.Close()
		l.site.Close()
	}
	// The profile is connected once the agent has its first snapshot.
	if err := poll(60*time.Second, func() (bool, error) {
		p := &twv1.BrowserProfile{}
		if err := l.k8s.Get(ctx, client.ObjectKey{Name: "bench"}, p); err != nil {
			return false, nil
		}
		return apimeta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition), nil
	}); err != nil {
		l.stop()
		return nil, fmt.Errorf("agent never connected its profile: %w", err)
	}
	if err := waitOpen(ctx, watchOpen); err != nil {
		l.stop()
		return nil, err
	}
	if cfg.sections["cleanup"] {
		if l.pool, err = l.startPool(ctx, restCfg); err != nil {
			l.stop()
			return nil, fmt.Errorf("pool lab: %w", err)
		}
		stop := l.stop
		l.stop = func() { l.pool.stop(); stop() }
	}
	return l, nil
}

func poll(timeout time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := f()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newSession(name string, placement twv1.Placement) *twv1.BrowserSession {
	return &twv1.BrowserSession{
		// Created as kubectl tabwarden start does: with the cleanup finalizer.
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name, Finalizers: []string{twv1.SessionFinalizer}},
		Spec:       twv1.BrowserSessionSpec{Thread: "bench", Purpose: "measure tabwarden", ProfileName: "bench", Placement: placement},
	}
}

func newWindow(ns, name, session, url string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: session}, Source: twv1.SourceOpen, URL: url},
	}
}

// register makes w what kubectl tabwarden open and the MCP server create: a
// window registered in its create (labels, owner, and the page finalizer for the
// profile its session is placed on), so that no controller write stands between
// the create and the agent. The session is read before the clock starts, as a
// client driving a session already holds it.
func (l *lab) register(ctx context.Context, w *twv1.BrowserWindow) error {
	s := &twv1.BrowserSession{}
	if err := poll(30*time.Second, func() (bool, error) {
		if err := l.k8s.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}, s); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return s.Status.ProfileName != "", nil
	}); err != nil {
		return fmt.Errorf("session %s of window %s was never placed: %w", w.Spec.SessionRef.Name, w.Name, err)
	}
	w.Register(s, true)
	return nil
}

// openPages opens n pages of session (windows <session>-w<i>, registered as a
// client would) at once and waits until every one shows open with its page
// loaded (its own title in the status); it returns their
// page ids.
func (l *lab) openPages(ctx context.Context, session string, n int, url string) ([]string, error) {
	opened := map[string]string{}
	var mu sync.Mutex
	// Every page loaded, as the raw baselines' pages are before their close:
	// its window shows the page's own title (an Open returns, and its status
	// is written, before the page commits; a page still loading closes slower).
	ready := l.api.expect(func(e apiEvent) bool {
		if e.Win == nil || e.Win.Spec.SessionRef.Name != session || e.Win.Status.Phase != twv1.WindowOpen || e.Win.Status.TabID == "" ||
			e.Win.Status.Title == "" || e.Win.Status.Title == e.Win.Status.URL {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		opened[e.Win.Name] = e.Win.Status.TabID
		return len(opened) == n
	})
	for i := 0; i < n; i++ {
		w := newWindow(benchNS, fmt.Sprintf("%s-w%d", session, i), session, url)
		err := l.register(ctx, w)
		if err == nil {
			err = l.k8s.Create(ctx, w)
		}
		if err != nil {
			ready.cancel()
			return nil, err
		}
	}
	if _, err := ready.wait(120 * time.Second); err != nil {
		return nil, fmt.Errorf("%d windows of %s never all opened: %w", n, session, err)
	}
	mu.Lock()
	defer mu.Unlock()
	ids := make([]string, 0, n)
	for _, id := range opened {
		ids = append(ids, id)
	}
	return ids, nil
}

// openAndWait creates an Open window (registered, as a client would) and waits
// for the status that shows it open.
func (l *lab) openAndWait(ctx context.Context, w *twv1.BrowserWindow) (*twv1.BrowserWindow, time.Duration, error) {
	if w.Labels[twv1.ProfileLabel] == "" {
		if err := l.register(ctx, w); err != nil {
			return nil, 0, err
		}
	}
	s := l.api.expect(func(e apiEvent) bool {
		// ADDED too: a watch that (re)starts late replays current objects as ADDED.
		return e.Win != nil && (e.Type == watch.Modified || e.Type == watch.Added) && e.Win.Name == w.Name && e.Win.Status.Phase == twv1.WindowOpen && e.Win.Status.TabID != ""
	})
	t0 := time.Now()
	if err := l.k8s.Create(ctx, w); err != nil {
		s.cancel()
		return nil, 0, err
	}
	e, err := s.wait(30 * time.Second)
	if err != nil {
		// Say what the window looks like, so a stall can be diagnosed from the output.
		got := &twv1.BrowserWindow{}
		state := "unreadable"
		if gerr := l.k8s.Get(ctx, client.ObjectKeyFromObject(w), got); gerr == nil {
			state = fmt.Sprintf("labels=%v finalizers=%v phase=%q tabId=%q conditions=%+v", got.Labels, got.Finalizers, got.Status.Phase, got.Status.TabID, got.Status.Conditions)
		}
		return nil, 0, fmt.Errorf("window %s never showed open: %w; it looks like: %s", w.Name, err, state)
	}
	return e.Win, e.At.Sub(t0), nil
}

// deleteWindowAndWait deletes a window and waits until its page is destroyed in
// Chromium (when it has one) and the object is gone.
func (l *lab) deleteWindowAndWait(ctx context.Context, w *twv1.BrowserWindow, page string) error {
	var destroyed *sub[cdpEvent]
	if page != "" {
		destroyed = l.raw.expectDestroyed(page)
	}
	gone := l.api.expect(func(e apiEvent) bool {
		return e.Win != nil && e.Type == watch.Deleted && e.Win.Name == w.Name
	})
	if err := l.k8s.Delete(ctx, w); err != nil {
		gone.cancel()
		if destroyed != nil {
			destroyed.cancel()
		}
		return err
	}
	if destroyed != nil {
		if _, err := destroyed.wait(30 * time.Second); err != nil {
			return fmt.Errorf("page %s of %s never closed: %w", page, w.Name, err)
		}
	}
	if _, err := gone.wait(30 * time.Second); err != nil {
		return fmt.Errorf("window %s never went: %w", w.Name, err)
	}
	return nil
}

func browserSections(ctx context.Context, cfg config, restCfg *rest.Config, rep *report) error {
	l, err := startLab(ctx, cfg, restCfg)
	if err != nil {
		return err
	}
	defer l.stop()
	// Warm up: the first write to a just-installed CRD is slow server-side.
	warm := newSession("warmup", twv1.PlacementTab)
	if err := l.k8s.Create(ctx, warm); err != nil {
		return err
	}
	if _, _, err := l.openAndWait(ctx, newWindow(benchNS, "warmup", "warmup", l.site.Path("/landing"))); err != nil {
		return err
	}
	if cfg.sections["spawn"] {
		if err := spawnSection(ctx, l, rep); err != nil {
			return fmt.Errorf("spawn: %w", err)
		}
	}
	if cfg.sections["open"] {
		if err := openSection(ctx, l, rep); err != nil {
			return fmt.Errorf("open: %w", err)
		}
	}
	if cfg.sections["cleanup"] {
		if err := cleanupSection(ctx, l, rep); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
	}
	if cfg.sections["action"] {
		if err := actionSection(ctx, l, rep); err != nil {
			return fmt.Errorf("action: %w", err)
		}
	}
	if cfg.sections["remote"] {
		if err := remoteSection(ctx, l, restCfg, rep); err != nil {
			return fmt.Errorf("remote: %w", err)
		}
	}
	return nil
}

// --- 1. spawn adoption ---

func spawnSection(ctx context.Context, l *lab, rep *report) error {
	sess := newSession("spawn", twv1.PlacementWindow)
	if err := l.k8s.Create(ctx, sess); err != nil {
		return err
	}
	cases := []struct {
		name, path, selector, window string
	}{
		{"spawn adoption: click on a target=_blank link", "/blank-link", "#open-landing", "opener-link"},
		{"spawn adoption: window.open(…, 'popup') from a click", "/contacts", "#contact-0", "opener-popup"},
	}
	for _, c := range cases {
		opener, _, err := l.openAndWait(ctx, newWindow(benchNS, c.window, "spawn", l.site.Path(c.path)))
		if err != nil {
			return err
		}
		var k *clicker
		if err := poll(20*time.Second, func() (bool, error) {
			k, err = l.raw.clickerFor(ctx, opener.Status.TabID, c.selector)
			return err == nil, nil
		}); err != nil {
			return fmt.Errorf("%s: element %s never appeared: %v", c.path, c.selector, err)
		}
		// The opener's own writes (its loaded title, at most one observe interval
		// after its open) are its open's, not a spawn's: let them land before the
		// first repetition counts writes.
		if err := poll(10*time.Second, func() (bool, error) {
			got := &twv1.BrowserWindow{}
			if err := l.k8s.Get(ctx, client.ObjectKeyFromObject(opener), got); err != nil {
				return false, err
			}
			return got.Status.Title != "" && got.Status.Title != got.Status.URL, nil
		}); err != nil {
			return fmt.Errorf("%s: the opener's title was never written: %v", c.path, err)
		}
		var tw, raw sample
		lg := newLegs(c.name, "click → targetCreated (Chromium)", "targetCreated → agent sends CREATE (driver, adopter)", "CREATE browserwindows (API server)", "CREATE reply → watch ADDED at a client")
		var spawnCost, closeCost costWindow
		costN := 0
		total := l.cfg.spawnReps + l.cfg.warmReps
		logf("%s: %d repetitions", c.name, l.cfg.spawnReps)
		for i := 0; i < total; i++ {
			measured := i >= l.cfg.warmReps
			costRep := measured && costN < l.cfg.costReps
			rawSub := l.raw.events.expect(func(e cdpEvent) bool {
				return e.Method == "Target.targetCreated" && e.OpenerID == opener.Status.TabID
			})
			apiSub := l.api.expect(func(e apiEvent) bool {
				return e.Win != nil && e.Type == watch.Added && e.Win.Spec.Spawn != nil && e.Win.Spec.Spawn.OpenerTabID == opener.Status.TabID
			})
			var before costWindow
			if costRep {
				l.quiet(quietFor, 10*time.Second)
				before = l.mark()
			}
			createReq := l.reqs.expect(func(r reqEvent) bool { return r.role == "agent" && r.key == "CREATE browserwindows" })
			t0, err := k.click(ctx)
			if err != nil {
				return err
			}
			re, err := rawSub.wait(10 * time.Second)
			if err != nil {
				return fmt.Errorf("%s rep %d: no targetCreated: %w", c.name, i, err)
			}
			ae, err := apiSub.wait(10 * time.Second)
			if err != nil {
				return fmt.Errorf("%s rep %d: no Spawned BrowserWindow: %w", c.name, i, err)
			}
			if measured {
				raw = append(raw, ms(re.At.Sub(t0)))
				tw = append(tw, ms(ae.At.Sub(t0)))
				if cr, err := createReq.wait(2 * time.Second); err == nil {
					lg.add(lg.names[0], re.At.Sub(t0))
					lg.add(lg.names[1], cr.start.Sub(re.At))
					lg.add(lg.names[2], cr.end.Sub(cr.start))
					lg.add(lg.names[3], ae.At.Sub(cr.end))
				}
			} else {
				createReq.cancel()
			}
			if costRep {
				l.quiet(quietFor, 10*time.Second)
				spawnCost = spawnCost.add(l.mark().since(before))
				before = l.mark()
			}
			// Acknowledge with Close: tabwarden closes the page; then the object goes.
			destroyed := l.raw.expectDestroyed(re.TargetID)
			w := ae.Win
			if err := l.k8s.Patch(ctx, w, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"Close"}}`))); err != nil {
				return err
			}
			if _, err := destroyed.wait(30 * time.Second); err != nil {
				return fmt.Errorf("spawned page %s never closed after disposition Close: %w", re.TargetID, err)
			}
			if costRep {
				l.quiet(quietFor, 10*time.Second)
				closeCost = closeCost.add(l.mark().since(before))
				costN++
			}
			if err := l.deleteWindowAndWait(ctx, w, ""); err != nil {
				return err
			}
		}
		rep.legs = append(rep.legs, lg)
		rep.latency(c.name, tw, "trigger → Target.targetCreated (raw CDP)", raw, "watch ADDED of the Spawned BrowserWindow; click = mouseReleased sent")
		rep.cost(c.name+" (adopt, until quiet)", spawnCost, costN, "per spawn")
		rep.cost(c.name+": acknowledge Close → page closed", closeCost, costN, "per page")
		if err := l.deleteWindowAndWait(ctx, opener, opener.Status.TabID); err != nil {
			return err
		}
	}
	return nil
}

// --- 2. open ---

func openSection(ctx context.Context, l *lab, rep *report) error {
	for _, pl := range []struct {
		placement twv1.Placement
		name      string
		newWindow bool
	}{
		{twv1.PlacementTab, "open: background tab", false},
		{twv1.PlacementWindow, "open: new window", true},
	} {
		sname := "open-" + map[bool]string{false: "tab", true: "window"}[pl.newWindow]
		if err := l.k8s.Create(ctx, newSession(sname, pl.placement)); err != nil {
			return err
		}
		url := l.site.Path("/landing")
		var tw, raw, seq sample
		lg := newLegs(pl.name, "create → agent sends status PATCH (API create, watch, queue, Target.createTarget)", "status PATCH", "status reply → watch MODIFIED at a client")
		var openCost, delCost costWindow
		costN := 0
		logf("%s: %d repetitions", pl.name, l.cfg.openReps)
		for i := 0; i < l.cfg.openReps+l.cfg.warmReps; i++ {
			measured := i >= l.cfg.warmReps
			costRep := measured && costN < l.cfg.costRepsRest
			var before costWindow
			if costRep {
				l.quiet(quietFor, 10*time.Second)
				before = l.mark()
			}
			wname := fmt.Sprintf("%s-%d", sname, i)
			st := l.reqs.expect(func(r reqEvent) bool {
				return r.role == "agent" && r.key == "PATCH browserwindows/status" && r.name == wname
			})
			w := newWindow(benchNS, wname, sname, url)
			if err := l.register(ctx, w); err != nil {
				st.cancel()
				return err
			}
			t0 := time.Now()
			w, d, err := l.openAndWait(ctx, w)
			if err != nil {
				return err
			}
			if measured {
				tw = append(tw, ms(d))
				if r, err := st.wait(time.Second); err == nil {
					seg := []time.Time{t0, r.start, r.end, t0.Add(d)}
					for j, n := range lg.names {
						lg.add(n, seg[j+1].Sub(seg[j]))
					}
				}
			} else {
				st.cancel()
			}
			if costRep {
				l.quiet(quietFor, 10*time.Second)
				openCost = openCost.add(l.mark().since(before))
				before = l.mark()
			}
			if err := l.deleteWindowAndWait(ctx, w, w.Status.TabID); err != nil {
				return err
			}
			if costRep {
				l.quiet(quietFor, 10*time.Second)
				delCost = delCost.add(l.mark().since(before))
				costN++
			}
			// Raw baseline, interleaved so that both see the same machine.
			t0 = time.Now()
			id, err := l.raw.createTarget(ctx, url, pl.newWindow)
			if err != nil {
				return err
			}
			if measured {
				raw = append(raw, ms(time.Since(t0)))
			}
			if err := l.raw.closeAndWait(ctx, id); err != nil {
				return err
			}
			// The CDP calls the driver makes for an Open, done raw: the page
			// list its crash-consistent intent records, the create, and the
			// window lookup that status.windowId needs.
			t0 = time.Now()
			if id, err = l.raw.driverOpen(ctx, url, pl.newWindow); err != nil {
				return err
			}
			if measured {
				seq = append(seq, ms(time.Since(t0)))
			}
			if err := l.raw.closeAndWait(ctx, id); err != nil {
				return err
			}
		}
		rep.legs = append(rep.legs, lg)
		rep.latency(pl.name, tw, "Target.createTarget reply (raw CDP)", raw, "create BrowserWindow (registered in its create, as kubectl tabwarden open and the MCP server do) → watch shows phase Open with tabId")
		rep.latency(pl.name+", vs the driver's CDP calls done raw", tw, "raw getTargets + createTarget + getWindowForTarget", seq, "")
		rep.cost(pl.name+" (until quiet)", openCost, costN, "per open")
		rep.cost("delete one "+map[bool]string{false: "tab", true: "window"}[pl.newWindow]+" BrowserWindow → page closed, object gone", delCost, costN, "per page")
	}
	return nil
}
