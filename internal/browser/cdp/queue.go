package cdp

import (
	"context"
	"sync"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// eventQueue is an unbounded FIFO between the connection's reader (which must
// never block) and the single consumer of Events().
type eventQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []browser.Event
	closed bool
	// pushed and delivered count events into the queue and into out: flush
	// waits for delivered to reach what was pushed before it.
	pushed, delivered int64
	out               chan browser.Event
	done              chan struct{}
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan browser.Event, 256), done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.run()
	return q
}

func (q *eventQueue) push(e browser.Event) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, e)
		q.pushed++
		q.cond.Broadcast()
	}
	q.mu.Unlock()
}

func (q *eventQueue) run() {
	defer close(q.out)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.closed {
			q.cond.Wait()
		}
		if q.closed {
			q.mu.Unlock()
			return
		}
		e := q.items[0]
		q.items[0] = browser.Event{}
		q.items = q.items[1:]
		q.mu.Unlock()
		select {
		case q.out <- e:
		case <-q.done:
			return
		}
		q.mu.Lock()
		q.delivered++
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// flush returns once every event pushed before the call is in out (or the
// queue is closed, or ctx ends).
func (q *eventQueue) flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	target := q.pushed
	for q.delivered < target && !q.closed {
		if err := ctx.Err(); err != nil {
			return err
		}
		q.cond.Wait()
	}
	return nil
}

func (q *eventQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.done)
		q.cond.Broadcast()
	}
	q.mu.Unlock()
}
