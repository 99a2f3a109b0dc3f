package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// The steps of a running action: what its guards read (the window, the page,
// the session as it is now, its unacknowledged spawns), each step through the
// driver, and the driver's answers in the API's terms. The guards themselves
// are in guards.go.

// admit runs the guards that concern the whole action, before any step
// (admitSession, admitWindow, admitPage in guards.go): session_finished,
// session_owned_by_another_thread, profile_mismatch, profile_not_allowed and
// window_not_in_session (or page_gone). It reads the window and asks the
// driver for its page; an admitted action runs on them.
func (run *actionRun) admit(ctx context.Context) *refusal {
	a, act, s := run.agent, run.act, run.session
	if rf := admitSession(act, s, a.opts.Profile); rf != nil {
		return rf
	}
	w := &twv1.BrowserWindow{}
	key := client.ObjectKey{Namespace: act.Namespace, Name: act.Spec.WindowRef.Name}
	err := a.client.Get(ctx, key, w)
	if apierrors.IsNotFound(err) {
		// Created a moment ago: the cache may not show it yet.
		err = a.reader.Get(ctx, key, w)
	}
	if rf := admitWindow(act, s, w, err); rf != nil {
		return rf
	}
	rec, ok, err := a.confirmRecord(ctx, w)
	if rf := admitPage(act, s, w, ok, err); rf != nil {
		return rf
	}
	run.window, run.page = w, rec
	return nil
}

// keepaliveWarning is the no_keepalive warning (noKeepalive), or "".
func (run *actionRun) keepaliveWarning(ctx context.Context) string {
	a := run.agent
	return noKeepalive(run.session, a.opts.Profile, a.opts.KeepaliveWarnAfter, time.Now(), func() *metav1.Duration {
		p := &twv1.BrowserProfile{}
		if err := a.client.Get(ctx, client.ObjectKey{Name: a.opts.Profile}, p); err != nil {
			return nil
		}
		return p.Spec.HostIdleTimeout
	})
}

// currentSession re-reads the session from the cache: the user may have
// started waiting since the action began. A session the cache shows waiting is
// read from the API server, so that a resume the cache has not seen yet does
// not refuse.
func (run *actionRun) currentSession(ctx context.Context) *twv1.BrowserSession {
	s := &twv1.BrowserSession{}
	if err := run.agent.client.Get(ctx, client.ObjectKeyFromObject(run.session), s); err != nil {
		return run.session
	}
	if s.Spec.State == twv1.SessionWaitingForUser {
		live := &twv1.BrowserSession{}
		if err := run.agent.reader.Get(ctx, client.ObjectKeyFromObject(s), live); err == nil {
			return live
		}
	}
	return s
}

// unacknowledged names the session's spawned windows with no disposition: the
// ones the cache shows, confirmed against the API server (an acknowledgement
// the cache has not seen yet must not refuse), and the ones adopted while this
// action ran that the cache does not show yet.
func (run *actionRun) unacknowledged(ctx context.Context) ([]string, error) {
	a, s := run.agent, run.session
	var list twv1.BrowserWindowList
	if err := a.client.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{twv1.SessionRefIndex: s.Name}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for i := range list.Items {
		w := &list.Items[i]
		seen[w.Name] = true
		if !w.Unacknowledged() {
			continue
		}
		live := &twv1.BrowserWindow{}
		if err := a.reader.Get(ctx, client.ObjectKeyFromObject(w), live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if live.Unacknowledged() {
			out = append(out, w.Name)
		}
	}
	if run.spawned != nil {
		for _, sp := range a.spawnWatch.snapshot(run.spawned) {
			if !seen[sp.Name] {
				out = append(out, sp.Name)
			}
		}
	}
	return out, nil
}

// step runs step i: its guards (checkStep: waiting_for_user,
// session_finished, unacknowledged_spawns, focus_violation, url_not_allowed;
// then stale_ref, stale_coordinates; an Upload's files, upload_not_allowed),
// then the driver, which refuses
// ambiguous, missing and stale targets from the page's state.
func (run *actionRun) step(ctx context.Context, i int, step twv1.ActionStep) (twv1.StepResult, *refusal, error) {
	a, act := run.agent, run.act
	res := twv1.StepResult{Index: int32(i), Type: step.Type}
	refused := func(rf *refusal) (twv1.StepResult, *refusal, error) {
		res.Phase, res.Reason, res.Message, res.Candidates = twv1.ActionRefused, rf.reason, truncate(rf.message, 2048), rf.candidates
		return res, rf, nil
	}
	s := run.currentSession(ctx)
	rf, err := checkStep(act, s, step, stepLookups{
		unacknowledged: func() ([]string, error) { return run.unacknowledged(ctx) },
		checkURL:       func(raw string) *refusal { return a.checkURL(ctx, raw, "navigate url") },
	})
	switch {
	case err != nil:
		return res, nil, err
	case rf != nil && rf.reason == twv1.ReasonWaitingForUser:
		// Refs observed before the wait need a fresh observation after it.
		a.observations.forgetSession(s.UID)
		return refused(rf)
	case rf != nil:
		return refused(rf)
	}
	bstep, rf := run.browserStep(step, s)
	if rf != nil {
		return refused(rf)
	}
	if step.Type == twv1.StepUpload {
		files, rf, err := a.uploadFiles(ctx, act, step)
		switch {
		case err != nil:
			return res, nil, err
		case rf != nil:
			return refused(rf)
		}
		bstep.Files = files
	}
	var base int
	if run.spawned != nil {
		base, _ = a.spawnWatch.count(run.spawned)
	}
	// The url policy covers the page's frames too: the driver asks it for each
	// cross-origin frame it reaches, observes none it refuses, and refuses a
	// step on an element of one; that refusal is the policy's own (its patch
	// as the hint).
	var frameRefusal *refusal
	checked := map[string]*refusal{} // by url, for this step (a name resolves once)
	req := browser.ActRequest{
		Key:   ActionKey(act.Namespace, s.Name, run.window.Name),
		Owner: run.page.Key,
		Page:  run.page.Page,
		Step:  bstep,
		FrameAllowed: func(u string) error {
			rf, ok := checked[u]
			if !ok {
				rf = a.checkURL(ctx, u, "frame url")
				checked[u] = rf
			}
			if rf == nil {
				return nil
			}
			if step.Type != twv1.StepObserve {
				frameRefusal = rf
			}
			return errors.New(rf.message)
		},
	}
	var out browser.ActResult
	var shotAt shotAttempt
	if step.Type == twv1.StepScreenshot {
		out, shotAt, err = run.screenshot(ctx, step, req)
	} else {
		out, err = a.opts.Browser.Act(ctx, req)
	}
	var ae *browser.ActError
	if step.Type.Mutating() && !errors.As(err, &ae) {
		run.stepSettle = a.spawnSettleOf(out, err, base)
		a.metrics().SpawnSettle(run.stepSettle.kind())
	}
	switch {
	case errors.As(err, &ae) && ae.Reason == twv1.ReasonURLNotAllowed && frameRefusal != nil:
		return refused(frameRefusal)
	case errors.As(err, &ae):
		obsID := ""
		if ae.Document != "" && len(ae.Candidates) > 0 {
			// The candidates are refs of the page as it is now: an observation
			// of their own, so that the caller can pick one.
			obsID = a.observations.add(observation{session: s.UID, sessionGeneration: s.Generation, page: run.page.Page, document: ae.Document, epoch: ae.Epoch, at: time.Now()})
		}
		var candidates []twv1.ObservedElement
		for _, c := range ae.Candidates {
			candidates = append(candidates, run.element(obsID, c))
		}
		return refused(driverRefusal(act, step, ae, candidates))
	case errors.Is(err, browser.ErrNotOwned):
		return refused(notOwned(act, run.window.Name, err))
	case err != nil:
		res.Phase, res.Reason, res.Message = twv1.ActionFailed, failure(act, err).reason, truncate(err.Error(), 2048)
		return res, nil, err
	}
	if step.Type == twv1.StepScreenshot {
		return run.screenshotResult(ctx, res, i, step, out.Screenshot, shotAt)
	}
	res.Phase = twv1.ActionSucceeded
	if d := out.Dialog; d != nil {
		res.Dialog = &twv1.OpenDialog{Type: truncate(d.Type, 16), Message: truncate(d.Message, 1024), DefaultPrompt: truncate(d.DefaultPrompt, 1024)}
		res.Message = dialogLeftOpen(res.Dialog)
	}
	if step.Type == twv1.StepUpload && res.Message == "" {
		res.Message = uploaded(bstep.Files)
	}
	if o := out.Observation; o != nil {
		id := a.observations.add(observation{session: s.UID, sessionGeneration: s.Generation, page: run.page.Page, document: o.Document, epoch: o.Epoch, at: time.Now()})
		obs := &twv1.Observation{ID: id, URL: truncate(o.URL, 4096), Title: truncate(o.Title, 512), ScrollX: int32(o.ScrollX), ScrollY: int32(o.ScrollY), Truncated: o.Truncated}
		for _, e := range o.Elements {
			if len(obs.Elements) == 500 {
				obs.Truncated = true
				break
			}
			obs.Elements = append(obs.Elements, run.element(id, e))
		}
		// The step's result lists the elements; only the action's last
		// observation carries the outline (status stays bounded: one chunk).
		stepObs := *obs
		res.Observation = &stepObs
		obs.Outline = outlineOf(id, o)
		act.Status.Observation = obs
		res.Message = fmt.Sprintf("observation %s: %d element(s), outline lines %d-%d", id, len(obs.Elements),
			obs.Outline.Offset, obs.Outline.Offset+obs.Outline.Lines)
		if obs.Outline.Truncated {
			res.Message += fmt.Sprintf(" (more: observe with outlineOffset %d)", *obs.Outline.NextOffset)
		}
	}
	return res, nil, nil
}

// outlineOf is the observation's outline chunk as the API shows it: whole
// lines, at most maxOutlineBytes, refs qualified by the observation id.
func outlineOf(obsID string, o *browser.PageObservation) *twv1.PageOutline {
	text, n := browser.FormatOutline(o.Outline, obsID, maxOutlineBytes)
	out := &twv1.PageOutline{Text: text, Offset: int32(o.OutlineOffset), Lines: int32(n)}
	if n < len(o.Outline) || o.OutlineMore {
		next := int32(o.OutlineOffset + n)
		if n == 0 {
			// A node longer than the chunk (not made by any driver) is skipped.
			next++
		}
		out.Truncated, out.NextOffset = true, &next
	}
	return out
}

// maxOutlineBytes bounds an outline chunk in status (the API's MaxLength).
const maxOutlineBytes = 32 << 10

// element is a driver element as the API shows it, its ref qualified by the
// observation id.
func (run *actionRun) element(obsID string, e browser.Element) twv1.ObservedElement {
	ref := ""
	if obsID != "" {
		ref = obsID + "." + e.ID
	}
	return twv1.ObservedElement{Ref: ref, Role: truncate(e.Role, 64), Name: truncate(e.Name, 256),
		X: int32(e.X), Y: int32(e.Y), Width: int32(e.Width), Height: int32(e.Height)}
}

// browserStep turns an API step into the driver's, resolving refs and points
// against the observations they came from.
func (run *actionRun) browserStep(step twv1.ActionStep, s *twv1.BrowserSession) (browser.Step, *refusal) {
	bs := browser.Step{Text: step.Text, Key: step.Key, URL: step.URL, MaxElements: 200}
	switch step.Type {
	case twv1.StepObserve:
		bs.Kind = browser.StepObserve
		if step.OutlineOffset != nil {
			bs.OutlineOffset = int(*step.OutlineOffset)
		}
	case twv1.StepNavigate:
		bs.Kind = browser.StepNavigate
	case twv1.StepClick:
		bs.Kind = browser.StepClick
	case twv1.StepTypeText:
		bs.Kind = browser.StepType
	case twv1.StepPress:
		bs.Kind = browser.StepPress
	case twv1.StepScroll:
		bs.Kind = browser.StepScroll
		if step.DeltaX != nil {
			bs.DeltaX = int(*step.DeltaX)
		}
		if step.DeltaY != nil {
			bs.DeltaY = int(*step.DeltaY)
		}
	case twv1.StepBack:
		bs.Kind = browser.StepBack
	case twv1.StepForward:
		bs.Kind = browser.StepForward
	case twv1.StepReload:
		bs.Kind = browser.StepReload
	case twv1.StepHover:
		bs.Kind = browser.StepHover
	case twv1.StepSelect:
		bs.Kind = browser.StepSelect
	case twv1.StepUpload:
		bs.Kind = browser.StepUpload
	case twv1.StepDialog:
		bs.Kind = browser.StepDialog
		bs.Accept = step.Answer == twv1.DialogAccept
	case twv1.StepScreenshot:
		bs.Kind, bs.Format = browser.StepScreenshot, browser.FormatPNG
		if step.Format == twv1.ImageJPEG {
			bs.Format = browser.FormatJPEG
		}
	case twv1.StepWait:
		bs.Kind = browser.StepWait
		bs.Timeout = 10 * time.Second
		if step.Duration != nil {
			bs.Timeout = step.Duration.Duration
		}
		if bs.Timeout > 30*time.Second {
			bs.Timeout = 30 * time.Second
		}
	}
	if step.Type == twv1.StepFill {
		bs.Kind = browser.StepFill
		for i := range step.Fields {
			f := &step.Fields[i]
			if f.Target == nil {
				return bs, fieldWithoutTarget(run.act, i)
			}
			tg, rf := run.target(f.Target, s)
			if rf != nil {
				rf.message = fmt.Sprintf("field %d of the Fill: %s", i, rf.message)
				return bs, rf
			}
			bs.Fields = append(bs.Fields, browser.FillField{Target: tg, Text: f.Text})
		}
		return bs, nil
	}
	if step.Target == nil {
		return bs, nil
	}
	tg, rf := run.target(step.Target, s)
	bs.Target = tg
	return bs, rf
}

// target turns an API target into the driver's, resolving a ref or a point
// against the observation it came from.
func (run *actionRun) target(t *twv1.ActionTarget, s *twv1.BrowserSession) (browser.Target, *refusal) {
	switch {
	case t.Text != "":
		return browser.Target{Text: t.Text}, nil
	case t.Ref != "" || t.X != nil:
		point := t.X != nil
		var x, y float64
		if point {
			x, y = float64(*t.X), float64(*t.Y)
		}
		tg, reason, msg := run.agent.observations.resolve(t.Ref, t.Observation, point, x, y, s.UID, s.Generation, run.page.Page)
		if reason != "" {
			return browser.Target{}, staleTarget(run.act, reason, msg)
		}
		return tg, nil
	}
	return browser.Target{}, nil
}

// spawnSettleOf is what a mutating step the driver ran leaves to settle: the
// spawns its page announced when the driver reports them
// (browser.SpawnReporter), else a blind settle; a failed step always settles
// blind (its input may have run before the failure).
func (a *Agent) spawnSettleOf(out browser.ActResult, err error, base int) spawnSettle {
	r, ok := a.opts.Browser.(browser.SpawnReporter)
	if err != nil || !ok || !r.ReportsSpawns() || out.SpawnsUnknown {
		return spawnSettle{blind: true, base: base}
	}
	return spawnSettle{announced: out.Spawns, base: base}
}
