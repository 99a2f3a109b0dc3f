package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// spawnWatch collects the windows adopted into a session while one of its
// actions runs (actions of a session run one at a time).
type spawnWatch struct {
	mu sync.Mutex
	m  map[string]*[]twv1.SpawnedWindow
}

func (sw *spawnWatch) start(ns, session string) *[]twv1.SpawnedWindow {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	l := &[]twv1.SpawnedWindow{}
	sw.m[ns+"/"+session] = l
	return l
}

func (sw *spawnWatch) stop(ns, session string, l *[]twv1.SpawnedWindow) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.m[ns+"/"+session] == l {
		delete(sw.m, ns+"/"+session)
	}
}

// note records a window adopted into a session, if an action of it runs.
func (sw *spawnWatch) note(ns, session string, w twv1.SpawnedWindow) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if l := sw.m[ns+"/"+session]; l != nil && !slices.ContainsFunc(*l, func(x twv1.SpawnedWindow) bool { return x.Name == w.Name }) && len(*l) < 64 {
		*l = append(*l, w)
	}
}

func (sw *spawnWatch) snapshot(l *[]twv1.SpawnedWindow) []twv1.SpawnedWindow {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return slices.Clone(*l)
}

// settle lets the browser report what a step spawned (SpawnSettle), then waits
// until the adopter has handled every event received so far, so that the
// spawn's window exists before the next guard looks.
func (a *Agent) settle(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(a.opts.SpawnSettle):
	}
	// A busy adopter (a snapshot) is not waited for long: the guards read the
	// API anyway.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = a.eventsHandled(ctx)
}

// eventsHandled returns once the adopter has handled every event the driver
// reported before the call: a page spawned until then is adopted (or known
// not to be the session's) when it returns. The driver's own queue is flushed
// first (browser.EventFlusher), then the adopter drains its channel.
func (a *Agent) eventsHandled(ctx context.Context) error {
	if f, ok := a.opts.Browser.(browser.EventFlusher); ok {
		if err := f.FlushEvents(ctx); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	select {
	case a.barrier <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
