package cdp

import (
	"context"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestQueueFlushDeliversWhatCameBefore: flush returns only once every event
// pushed before it is in the channel, whatever the consumer's pace; events
// pushed after it are not waited for.
func TestQueueFlushDeliversWhatCameBefore(t *testing.T) {
	q := newEventQueue()
	defer q.close()
	const n = 1000 // more than the channel holds: the queue must wait for the consumer
	for i := range n {
		q.push(browser.Event{Type: browser.PageCreated, Page: browser.Page{ID: string(rune('a' + i%26))}})
	}
	flushed := make(chan error, 1)
	go func() { flushed <- q.flush(context.Background()) }()
	select {
	case err := <-flushed:
		t.Fatalf("flush returned (%v) with %d events not yet in a channel that holds %d", err, n, cap(q.out))
	case <-time.After(100 * time.Millisecond):
	}
	got := 0
	for got < n {
		<-q.out
		got++
	}
	select {
	case err := <-flushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("flush did not return once every event pushed before it was delivered")
	}
	// A flush with nothing pending returns at once; a cancelled one returns its error.
	if err := q.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range cap(q.out) + 1 {
		q.push(browser.Event{Type: browser.PageUpdated})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := q.flush(ctx); err == nil {
		t.Fatal("flush with an event nobody consumes returned nil, want the context's error")
	}
}
