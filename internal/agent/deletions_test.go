package agent

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestDeletionsTellEachWaiterOnce: every waiter of a uid registered before its
// deletion shows is told; a waiter of another uid, or one that stopped, is not;
// waitSeen gives up after its timeout and with its context.
func TestDeletionsTellEachWaiterOnce(t *testing.T) {
	var d deletions
	a1, stop1 := d.expect("a")
	defer stop1()
	a2, stop2 := d.expect("a")
	defer stop2()
	b, stopB := d.expect("b")
	defer stopB()
	stopped, stop := d.expect("a")
	stop()

	d.seen("a")
	ctx := context.Background()
	if !waitSeen(ctx, a1, time.Second) || !waitSeen(ctx, a2, time.Second) {
		t.Fatal("a waiter of a was not told its deletion")
	}
	if waitSeen(ctx, b, 20*time.Millisecond) {
		t.Fatal("a waiter of b was told of a's deletion")
	}
	if waitSeen(ctx, stopped, 20*time.Millisecond) {
		t.Fatal("a waiter that stopped was told")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if waitSeen(cancelled, b, time.Minute) {
		t.Fatal("waitSeen reported a deletion on a cancelled context")
	}
	d.seen("a") // nobody waits any more: a no-op
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, left := d.waiters[types.UID("a")]; left {
		t.Fatal("waiters of a kept after they were told")
	}
}
