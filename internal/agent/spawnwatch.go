package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
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
	done := make(chan struct{})
	select {
	case a.barrier <- done:
	case <-ctx.Done():
		return
	case <-time.After(5 * time.Second):
		return // the adopter is busy (a snapshot); the guards read the API anyway
	}
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
}
