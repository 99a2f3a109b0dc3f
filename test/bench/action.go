package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// --- 4. actions ---

// actionSection measures a BrowserAction's round trip (create → the watch shows
// it Succeeded) against the raw CDP click of the same element, and one action
// of five steps against five actions of one step.
func actionSection(ctx context.Context, l *lab, rep *report) error {
	const sess, window = "action", "action-page"
	if err := l.k8s.Create(ctx, newSession(sess, twv1.PlacementWindow)); err != nil {
		return err
	}
	w, _, err := l.openAndWait(ctx, newWindow(benchNS, window, sess, l.site.Path("/two-send")))
	if err != nil {
		return err
	}
	page := w.Status.TabID
	var k *clicker
	if err := poll(20*time.Second, func() (bool, error) {
		k, err = l.raw.clickerFor(ctx, page, "#send-later")
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("element #send-later never appeared: %v", err)
	}
	click := twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Send later"}}
	observe := twv1.ActionStep{Type: twv1.StepObserve}
	seq := 0
	run := func(steps ...twv1.ActionStep) (time.Duration, error) {
		seq++
		return l.runAction(ctx, fmt.Sprintf("act-%d", seq), sess, window, steps)
	}

	name := "action round trip: one Click step"
	logf("%s: %d repetitions", name, l.cfg.openReps)
	var tw, raw sample
	lg := newLegs(name, "create → agent sends the claim (watch, queue, guards)", "claim: status Running", "→ agent sends the result (driver step, spawn settle if the step announced a spawn)", "result: status Succeeded", "result reply → watch MODIFIED at a client")
	for i := 0; i < l.cfg.openReps+l.cfg.warmReps; i++ {
		// The agent writes the action's status twice: the claim, then the result.
		var claim reqEvent
		writes := 0
		aname := fmt.Sprintf("act-%d", seq+1)
		result := l.reqs.expect(func(r reqEvent) bool {
			if r.role != "agent" || r.name != aname || !strings.HasSuffix(r.key, "browseractions/status") {
				return false
			}
			writes++
			if writes == 1 {
				claim = r
			}
			return writes == 2
		})
		t0 := time.Now()
		d, err := run(click)
		if err != nil {
			result.cancel()
			return err
		}
		if r, err := result.wait(time.Second); err == nil && i >= l.cfg.warmReps {
			seg := []time.Time{t0, claim.start, claim.end, r.start, r.end, t0.Add(d)}
			for j, n := range lg.names {
				lg.add(n, seg[j+1].Sub(seg[j]))
			}
		}
		r0 := time.Now()
		if _, err := k.click(ctx); err != nil {
			return err
		}
		if i >= l.cfg.warmReps {
			tw = append(tw, ms(d))
			raw = append(raw, ms(time.Since(r0)))
		}
	}
	rep.legs = append(rep.legs, lg)
	rep.latency(name, tw, "raw CDP press and release of the same element", raw, "create BrowserAction → watch shows Succeeded (the click spawns nothing: the driver saw no Page.windowOpen, so the agent writes the result without a spawn settle; before issue 23 it waited a fixed SpawnSettle, 150 ms); the raw click by a second DevTools client, located once")

	name = "5 steps in one BrowserAction"
	logf("%s: %d repetitions", name, l.cfg.openReps)
	five := []twv1.ActionStep{observe, click, observe, click, observe}
	var composed, singles sample
	for i := 0; i < l.cfg.openReps+l.cfg.warmReps; i++ {
		d, err := run(five...)
		if err != nil {
			return err
		}
		var sum time.Duration
		for _, s := range five {
			d1, err := run(s)
			if err != nil {
				return err
			}
			sum += d1
		}
		if i >= l.cfg.warmReps {
			composed = append(composed, ms(d))
			singles = append(singles, ms(sum))
		}
	}
	rep.latency(name, composed, "5 single-step BrowserActions, one after another", singles, "observe, click, observe, click, observe; create → watch shows Succeeded")
	return l.deleteWindowAndWait(ctx, w, page)
}

// runAction creates a BrowserAction and waits until the watch shows it
// finished; it fails unless it Succeeded, and deletes it afterwards.
func (l *lab) runAction(ctx context.Context, name, sess, window string, steps []twv1.ActionStep) (time.Duration, error) {
	a := &twv1.BrowserAction{}
	a.Namespace, a.Name = benchNS, name
	a.Spec = twv1.BrowserActionSpec{
		SessionRef: twv1.SessionReference{Name: sess},
		Thread:     "bench",
		WindowRef:  twv1.ActionWindowReference{Name: window},
		Steps:      steps,
	}
	s := l.api.expect(func(e apiEvent) bool {
		return e.Act != nil && (e.Type == watch.Modified || e.Type == watch.Added) && e.Act.Name == name && e.Act.Status.Phase.Finished()
	})
	t0 := time.Now()
	if err := l.k8s.Create(ctx, a); err != nil {
		s.cancel()
		return 0, err
	}
	e, err := s.wait(30 * time.Second)
	if err != nil {
		got := &twv1.BrowserAction{}
		_ = l.k8s.Get(ctx, client.ObjectKeyFromObject(a), got)
		return 0, fmt.Errorf("action %s never finished: %w; status %+v", name, err, got.Status)
	}
	if st := e.Act.Status; st.Phase != twv1.ActionSucceeded {
		return 0, fmt.Errorf("action %s: %s %s: %s (hint: %s)", name, st.Phase, st.Reason, st.Message, st.Hint)
	}
	d := e.At.Sub(t0)
	if err := l.k8s.Delete(ctx, a); client.IgnoreNotFound(err) != nil {
		return 0, err
	}
	return d, nil
}
