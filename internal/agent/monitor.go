package agent

import (
	"context"
	"reflect"
	"sort"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
)

// monitorLoop shows the user who drives the browser: it publishes the sessions
// placed on the profile, with their windows, to a driver that implements
// browser.SessionMonitor (the extension: its popup's Session Monitor and Chrome
// tab groups). It publishes when sessions or windows change (a burst of
// changes coalesced into one publish), when the browser connects again (the
// extension's session storage may be new), and never while nothing changed.
type monitorLoop struct {
	agent     *Agent
	monitor   browser.SessionMonitor
	informers cache.Informers
	dirty     chan struct{}
	// last is what was last published, on connection epoch lastEpoch.
	last      []browser.MonitorSession
	lastEpoch int64
	published bool
}

// monitorCoalesce is how long the loop waits after a change for more before
// publishing; monitorPoll is how often it looks anyway (a reconnect).
const (
	monitorCoalesce = 300 * time.Millisecond
	monitorPoll     = 2 * time.Second
)

// NeedLeaderElection: every agent shows its own browser's sessions.
func (m *monitorLoop) NeedLeaderElection() bool { return false }

func (m *monitorLoop) markDirty() {
	select {
	case m.dirty <- struct{}{}:
	default:
	}
}

// Start runs until ctx ends.
func (m *monitorLoop) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("monitor").WithValues("profile", m.agent.opts.Profile)
	ctx = ctrl.LoggerInto(ctx, log)
	for _, obj := range []client.Object{&twv1.BrowserSession{}, &twv1.BrowserWindow{}} {
		inf, err := m.informers.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { m.markDirty() },
			UpdateFunc: func(any, any) { m.markDirty() },
			DeleteFunc: func(any) { m.markDirty() },
		}); err != nil {
			return err
		}
	}
	tick := time.NewTicker(monitorPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-m.dirty:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(monitorCoalesce):
			}
		}
		if err := m.publish(ctx); err != nil && ctx.Err() == nil {
			log.V(1).Info("Publishing the Session Monitor failed; retrying", "error", err.Error())
		}
	}
}

// publish sends the sessions when they changed or the connection is new.
func (m *monitorLoop) publish(ctx context.Context) error {
	ready, epoch := m.agent.model.state()
	if !ready {
		return nil
	}
	sessions, err := m.agent.monitorSessions(ctx)
	if err != nil {
		return err
	}
	if m.published && epoch == m.lastEpoch && reflect.DeepEqual(sessions, m.last) {
		return nil
	}
	if err := m.monitor.PublishSessions(ctx, sessions); err != nil {
		m.published = false
		return err
	}
	m.last, m.lastEpoch, m.published = sessions, epoch, true
	ctrl.LoggerFrom(ctx).V(1).Info("Published the Session Monitor", "sessions", len(sessions))
	return nil
}

// monitorSessions is every session placed on the profile (ended ones too while
// they exist: their cleanup is worth watching), with the windows of the profile
// that belong to it, sorted by name.
func (a *Agent) monitorSessions(ctx context.Context) ([]browser.MonitorSession, error) {
	// Read-only, from the cache without copies: only strings are kept.
	var sessions twv1.BrowserSessionList
	if err := a.client.List(ctx, &sessions, client.MatchingFields{index.SessionProfile: a.opts.Profile}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var windows twv1.BrowserWindowList
	if err := a.client.List(ctx, &windows, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	type key struct{ ns, name string }
	byKey := map[key]int{}
	out := []browser.MonitorSession{}
	for i := range sessions.Items {
		s := &sessions.Items[i]
		if s.Status.ProfileName != a.opts.Profile {
			continue
		}
		phase := string(s.Status.Phase)
		if phase == "" {
			phase = string(twv1.SessionPhasePending)
		}
		byKey[key{s.Namespace, s.Name}] = len(out)
		out = append(out, browser.MonitorSession{
			Namespace: s.Namespace, Name: s.Name, Thread: s.Spec.Thread, Purpose: s.Spec.Purpose,
			Phase: phase, Windows: []browser.MonitorWindow{},
		})
	}
	for i := range windows.Items {
		w := &windows.Items[i]
		if w.Labels[twv1.ProfileLabel] != a.opts.Profile {
			continue
		}
		j, ok := byKey[key{w.Namespace, w.Spec.SessionRef.Name}]
		if !ok {
			continue
		}
		out[j].Windows = append(out[j].Windows, monitorWindow(w))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	for i := range out {
		ws := out[i].Windows
		sort.Slice(ws, func(i, j int) bool { return ws[i].Name < ws[j].Name })
	}
	return out, nil
}

func monitorWindow(w *twv1.BrowserWindow) browser.MonitorWindow {
	tab := w.Status.TabID
	switch {
	case tab != "":
	case w.Spec.Source == twv1.SourceSpawned && w.Spec.Spawn != nil:
		tab = w.Spec.Spawn.TabID
	case w.Spec.Source == twv1.SourceBind:
		tab = w.Spec.BindTabID
	}
	phase := string(w.Status.Phase)
	if phase == "" {
		phase = string(twv1.WindowPending)
	}
	return browser.MonitorWindow{
		Name: w.Name, TabID: tab, Source: string(w.Spec.Source), Disposition: string(w.Spec.Disposition), Phase: phase,
		Unacknowledged: w.Spec.Source == twv1.SourceSpawned && w.Spec.Disposition == "",
	}
}
