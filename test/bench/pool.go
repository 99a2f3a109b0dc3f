package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/chromiumtest"
)

// poolProfile is the profile of the pool lab: spec.pool, so each session gets
// a browser context of its own.
const poolProfile = "bench-pool"

// poolLab is a pool profile on a Chromium of its own (its agent would
// otherwise list the bench agent's pages as the user's tabs, and the other way
// round), with its own agent counter and raw CDP observer. The controller is
// the lab's.
type poolLab struct {
	chrome *chromium.Process
	raw    *rawCDP
	agt    *counter
	stop   func()
}

// startPool launches the pool lab's Chromium and agent, and waits for the
// profile to be connected.
func (l *lab) startPool(ctx context.Context, restCfg *rest.Config) (*poolLab, error) {
	p := &poolLab{agt: newCounter()}
	p.agt.trace = func(k, n string, s, e time.Time) { l.reqs.publish(reqEvent{"pool-agent", k, n, s, e}) }
	var err error
	logf("launching a second headless Chromium for the pool profile")
	if p.chrome, err = chromiumtest.LaunchContext(ctx, chromium.Options{}); err != nil {
		return nil, err
	}
	if p.raw, err = dialCDP(ctx, p.chrome.WebSocketURL); err != nil {
		_ = p.chrome.Close()
		return nil, err
	}
	prof := &twv1.BrowserProfile{
		ObjectMeta: metav1.ObjectMeta{Name: poolProfile},
		Spec: twv1.BrowserProfileSpec{Driver: twv1.DriverCDP, Pool: true, NamespaceSelector: &metav1.LabelSelector{},
			URLPolicy: &twv1.URLPolicy{AllowPrivateNetworks: true}}, // the fixture site is on loopback
	}
	if err := l.k8s.Create(ctx, prof); client.IgnoreAlreadyExists(err) != nil {
		return nil, err
	}
	drv, err := cdp.New(ctx, p.chrome.WebSocketURL, cdp.Options{Pool: true})
	if err != nil {
		return nil, err
	}
	agtCfg, err := testenv.AgentConfig(restCfg, poolProfile)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := run.Agent(rctx, p.agt.config(agtCfg), run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
			Profile: poolProfile, Driver: twv1.DriverCDP, Browser: drv, Identity: "bench-pool-agent", Heartbeat: time.Hour,
		}}); err != nil {
			logf("pool agent stopped: %v", err)
		}
	}()
	p.stop = func() {
		cancel()
		wg.Wait()
		drv.Shutdown()
		p.raw.close()
		_ = p.chrome.Close()
	}
	if err := poll(60*time.Second, func() (bool, error) {
		got := &twv1.BrowserProfile{}
		if err := l.k8s.Get(ctx, client.ObjectKey{Name: poolProfile}, got); err != nil {
			return false, nil
		}
		return apimeta.IsStatusConditionTrue(got.Status.Conditions, twv1.ConnectedCondition), nil
	}); err != nil {
		p.stop()
		return nil, fmt.Errorf("pool agent never connected its profile: %w", err)
	}
	return p, nil
}

// cleanupPool measures the cleanup of a pool session with n temporary pages:
// its agent disposes the session's browser context (one
// Target.disposeBrowserContext) rather than closing the pages one by one.
// Compared with Playwright's context.close() for the same n (pw).
func cleanupPool(ctx context.Context, l *lab, p *poolLab, rep *report, n, reps int, pw sample) error {
	url := l.site.Path("/landing")
	logf("cleanup of a pool session with %d page(s): %d repetitions", n, reps)
	var last, gone, conc, disp sample
	lg := newLegs(fmt.Sprintf("cleanup: pool session with %d page(s)", n), "Delete → controller's first window DELETE",
		"first window DELETE → last page destroyed (context disposed)", "last page destroyed → session object gone",
		"… of which: last page destroyed → the agent's last window finalizer PATCH done", "… then → the controller's session finalizer PATCH sent", "… then → session object gone (watch)")
	var cost costWindow
	costN := 0
	for r := 0; r < reps; r++ {
		name := fmt.Sprintf("pool-%d-%d", n, r)
		s := newSession(name, twv1.PlacementWindow)
		s.Spec.ProfileName = poolProfile
		if err := l.k8s.Create(ctx, s); err != nil {
			return err
		}
		ids, err := l.openPages(ctx, name, n, url)
		if err != nil {
			return err
		}
		costRep := costN < l.cfg.costRepsRest
		var before costWindow
		if costRep {
			l.quiet(quietFor, 15*time.Second)
			before = costWindow{l.ctl.snapshot(), p.agt.snapshot()}
		} else {
			time.Sleep(300 * time.Millisecond)
		}
		destroyed := p.raw.expectDestroyed(ids...)
		sessGone := l.api.expect(func(e apiEvent) bool { return e.Sess != nil && e.Type == watch.Deleted && e.Sess.Name == name })
		var first, lastFin, sessFin time.Time
		var dmu sync.Mutex
		rec := l.reqs.expect(func(r reqEvent) bool {
			dmu.Lock()
			defer dmu.Unlock()
			switch {
			case r.role == "controller" && r.key == "DELETE browserwindows":
				if first.IsZero() || r.start.Before(first) {
					first = r.start
				}
			case r.role == "pool-agent" && r.key == "PATCH browserwindows" && strings.HasPrefix(r.name, name+"-w") && r.end.After(lastFin):
				lastFin = r.end
			case r.role == "controller" && r.key == "PATCH browsersessions" && r.name == name:
				sessFin = r.start
			}
			return false
		})
		t0 := time.Now()
		if err := l.k8s.Delete(ctx, newSession(name, "")); err != nil {
			return err
		}
		de, err := destroyed.wait(120 * time.Second)
		if err != nil {
			return fmt.Errorf("pages of pool session %s never all closed: %w", name, err)
		}
		ge, err := sessGone.wait(120 * time.Second)
		if err != nil {
			return fmt.Errorf("pool session %s never went: %w", name, err)
		}
		// The watch can show the session gone before the controller's client
		// has its finalizer patch's reply, which publishes the request: wait
		// for it, or the legs of this repetition go uncounted.
		if err := poll(time.Second, func() (bool, error) {
			dmu.Lock()
			defer dmu.Unlock()
			return !sessFin.IsZero(), nil
		}); err != nil {
			logf("pool session %s: the controller's finalizer request was not seen (%v): this repetition's legs are not counted", name, err)
		}
		rec.cancel()
		last = append(last, ms(de.At.Sub(t0)))
		gone = append(gone, ms(ge.At.Sub(t0)))
		dmu.Lock()
		if !first.IsZero() && !lastFin.IsZero() && !sessFin.IsZero() {
			lg.add(lg.names[0], first.Sub(t0))
			lg.add(lg.names[1], de.At.Sub(first))
			lg.add(lg.names[2], ge.At.Sub(de.At))
			lg.add(lg.names[3], lastFin.Sub(de.At))
			lg.add(lg.names[4], sessFin.Sub(lastFin))
			lg.add(lg.names[5], ge.At.Sub(sessFin))
		}
		dmu.Unlock()
		if costRep {
			l.quiet(quietFor, 15*time.Second)
			after := costWindow{l.ctl.snapshot(), p.agt.snapshot()}
			cost = cost.add(after.since(before))
			costN++
		}
		// Raw baselines on the same browser: n new windows closed all at once
		// (not in -short: no target compares with it, and opening n windows
		// took a third of the case's time there), and n new windows in a
		// browser context of their own disposed at once (what Playwright's
		// context.close() sends, without its browser).
		if !l.cfg.short {
			rids, err := openOn(ctx, p.raw, url, n, "")
			if err != nil {
				return err
			}
			d, err := closeAllOn(ctx, p.raw, rids)
			if err != nil {
				return err
			}
			conc = append(conc, d)
		}
		d, err := disposeOn(ctx, p.raw, url, n)
		if err != nil {
			return err
		}
		disp = append(disp, d)
	}
	if len(pw) > 0 {
		rep.latency(fmt.Sprintf("cleanup: pool session with %d page(s) → last page gone", n), last, "Playwright context.close()", pw,
			"delete a session of a pool profile (spec.pool; its own Chromium): from Delete to the last Target.targetDestroyed; its agent disposes the session's browser context. Playwright: the same n pages in one context, separate Chromium")
	}
	if len(conc) > 0 {
		rep.latency(fmt.Sprintf("cleanup: pool session with %d page(s), vs raw concurrent close", n), last, "raw closeTarget, concurrent", conc, "")
	}
	rep.latency(fmt.Sprintf("cleanup: pool session with %d page(s), vs raw context disposal", n), last, "raw Target.disposeBrowserContext", disp,
		"the same browser: n new windows opened in a fresh browser context, then one Target.disposeBrowserContext, until the last targetDestroyed")
	if len(conc) > 0 {
		rep.latency(fmt.Sprintf("cleanup: pool session with %d page(s) → session object gone", n), gone, "raw closeTarget, concurrent", conc, "")
	} else {
		rep.latency(fmt.Sprintf("cleanup: pool session with %d page(s) → session object gone", n), gone, "raw Target.disposeBrowserContext", disp, "")
	}
	rep.legs = append(rep.legs, lg)
	rep.cost(fmt.Sprintf("cleanup: delete a pool session with %d page(s)", n), cost, costN*n, "per page")
	return nil
}

// disposeOn opens n new windows in a new browser context on raw, lets them
// load, then disposes the context and returns the time from the call to the
// last targetDestroyed.
func disposeOn(ctx context.Context, raw *rawCDP, url string, n int) (float64, error) {
	bc, err := wire.Call(ctx, raw.c, "", wire.CreateBrowserContext{})
	if err != nil {
		return 0, err
	}
	ids, err := openOn(ctx, raw, url, n, bc.BrowserContextID)
	if err != nil {
		return 0, err
	}
	gone := raw.expectDestroyed(ids...)
	t0 := time.Now()
	if _, err := wire.Call(ctx, raw.c, "", wire.DisposeBrowserContext{BrowserContextID: bc.BrowserContextID}); err != nil {
		gone.cancel()
		return 0, err
	}
	e, err := gone.wait(60 * time.Second)
	if err != nil {
		return 0, err
	}
	return ms(e.At.Sub(t0)), nil
}
