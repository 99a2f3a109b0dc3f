package cdp

import (
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
	out    chan browser.Event
	done   chan struct{}
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
		q.cond.Signal()
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
	}
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
