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
	// pages names the page of each window noted (namespace/window → page id),
	// while the action that noted it runs.
	pages map[string]string
	// changed is closed (and dropped) when a window is noted: settle waits on it.
	changed chan struct{}
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
	for _, w := range *l {
		delete(sw.pages, ns+"/"+w.Name)
	}
}

// note records a window adopted into a session, with its page, if an action
// of it runs.
func (sw *spawnWatch) note(ns, session, page string, w twv1.SpawnedWindow) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if l := sw.m[ns+"/"+session]; l != nil && !slices.ContainsFunc(*l, func(x twv1.SpawnedWindow) bool { return x.Name == w.Name }) && len(*l) < 64 {
		*l = append(*l, w)
		if sw.pages == nil {
			sw.pages = map[string]string{}
		}
		sw.pages[ns+"/"+w.Name] = page
		if sw.changed != nil {
			close(sw.changed)
			sw.changed = nil
		}
	}
}

func (sw *spawnWatch) snapshot(l *[]twv1.SpawnedWindow) []twv1.SpawnedWindow {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return slices.Clone(*l)
}

func (sw *spawnWatch) page(ns, window string) string {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.pages[ns+"/"+window]
}

// spawnURLWait bounds how long an action's result waits, in all, for the
// first url of the pages it lists as spawned (withSpawnURLs).
const spawnURLWait = time.Second

// withSpawnURLs fills in the url of each listed spawn whose page had none when
// it was adopted: a popup opened with window.open(url) is created, and
// adopted, before its first navigation commits, and the browser reports its
// url then. It waits for the driver to report each such page's url (not
// about:blank, the empty document every new page begins with), or the page
// to go, at most spawnURLWait in all; a page still blank then is listed as
// about:blank if the browser said so, else without a url.
func (a *Agent) withSpawnURLs(ctx context.Context, ns string, l []twv1.SpawnedWindow) []twv1.SpawnedWindow {
	wait, cancel := context.WithTimeout(ctx, spawnURLWait)
	defer cancel()
	for i := range l {
		if l[i].URL != "" && l[i].URL != blankURL {
			continue
		}
		id := a.spawnWatch.page(ns, l[i].Name)
		if id == "" {
			continue
		}
		for {
			changed := a.model.pageChanges()
			p, ok := a.model.page(id)
			if ok && p.URL != "" {
				l[i].URL = truncate(p.URL, 4096)
			}
			if !ok || (p.URL != "" && p.URL != blankURL) || wait.Err() != nil {
				break // gone, navigated, or no time left
			}
			select {
			case <-changed:
			case <-wait.Done():
			}
		}
	}
	return l
}

// blankURL is the url of the empty document a new page begins with.
const blankURL = "about:blank"

// count is how many windows l holds now, and a channel closed at the next note.
func (sw *spawnWatch) count(l *[]twv1.SpawnedWindow) (int, <-chan struct{}) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.changed == nil {
		sw.changed = make(chan struct{})
	}
	return len(*l), sw.changed
}

// spawnSettle is what a mutating step leaves for the next mutating step's
// guards and the action's result to wait for: nothing (the driver saw the
// page announce no new page), the spawns it announced (announced, counted
// from base, the session's adopted windows when the step began), or a blind
// settle (the driver cannot tell, the step failed or was cut short).
type spawnSettle struct {
	blind     bool
	announced int
	base      int
}

func (p spawnSettle) needed() bool { return p.blind || p.announced > 0 }

// The kinds of settle a mutating step needed (metric label "settle").
const (
	// settleNone: the driver saw the page announce no new page: no wait.
	settleNone = "none"
	// settleAnnounced: the page announced new pages: wait until adopted (bounded).
	settleAnnounced = "announced"
	// settleBlind: the driver cannot tell: wait SpawnSettle, then a barrier.
	settleBlind = "blind"
)

func (p spawnSettle) kind() string {
	switch {
	case p.blind:
		return settleBlind
	case p.announced > 0:
		return settleAnnounced
	}
	return settleNone
}

// settle waits for what a mutating step may have spawned to be adopted, so
// that the spawn's window exists before the next guard looks and is listed in
// the action's result:
//
//   - a step whose driver saw the page announce nothing (browser.SpawnReporter)
//     is not waited for: nothing is left to adopt;
//   - a step that announced n new pages waits until n windows more than when
//     it began were adopted into the session, at most Options.SpawnWait (a
//     popup the blocker stopped is announced and never created), handing the
//     adopter every event the driver has meanwhile;
//   - otherwise (a driver that cannot tell, a failed step) it lets the browser
//     report a spawn for Options.SpawnSettle, then waits until the adopter has
//     handled every event received so far.
//
// A busy adopter (a snapshot) is not waited for long: the guards read the API
// anyway.
func (a *Agent) settle(ctx context.Context, l *[]twv1.SpawnedWindow, p spawnSettle) {
	switch {
	case p.blind:
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.opts.SpawnSettle):
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = a.eventsHandled(ctx)
	case p.announced > 0 && l != nil:
		ctx, cancel := context.WithTimeout(ctx, a.opts.SpawnWait)
		defer cancel()
		for {
			n, changed := a.spawnWatch.count(l)
			if n >= p.base+p.announced {
				return
			}
			// The driver may hold the spawn's event already: hand it over.
			if err := a.eventsHandled(ctx); err != nil {
				return
			}
			if n, _ := a.spawnWatch.count(l); n >= p.base+p.announced {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-time.After(settlePoll):
			}
		}
	}
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
