package agent

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// deletions lets a caller wait until the agent's cache shows a window's
// deletion (a deletionTimestamp, or the window gone), told by the window
// informer's events (trackOwners): no polling of the cache.
type deletions struct {
	mu      sync.Mutex
	waiters map[types.UID][]chan struct{}
}

// expect registers a wait for uid's deletion. Register before reading the
// cache, then wait only if that read shows no deletion: an event between the
// two is not missed. stop unregisters it.
func (d *deletions) expect(uid types.UID) (seen <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	d.mu.Lock()
	if d.waiters == nil {
		d.waiters = map[types.UID][]chan struct{}{}
	}
	d.waiters[uid] = append(d.waiters[uid], ch)
	d.mu.Unlock()
	return ch, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		list := d.waiters[uid]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(d.waiters, uid)
		} else {
			d.waiters[uid] = list
		}
	}
}

// seen tells the waiters of uid that the cache shows its deletion now.
func (d *deletions) seen(uid types.UID) {
	d.mu.Lock()
	list := d.waiters[uid]
	delete(d.waiters, uid)
	d.mu.Unlock()
	for _, ch := range list {
		close(ch)
	}
}

// waitSeen waits for seen, at most for timeout; it reports whether it came.
func waitSeen(ctx context.Context, seen <-chan struct{}, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-seen:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}
