package agent

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// fence keeps an ending session's cleanup and its running action apart. An
// action's steps run under a context of the session's (begin); when the
// session ends, its cleanup cancels that context and waits for the action to
// return (stop) before it closes anything: a step in flight settles (a Wait
// ends at once), no further step runs, what the steps spawned is adopted, and
// only then do the session's pages close. Actions of one session run one at a
// time (ActionReconciler.lock), so a session has one entry at most, and the
// entry goes with its action: nothing here outlives what it fences.
type fence struct {
	mu      sync.Mutex
	running map[types.UID]*inflight
}

type inflight struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// errSessionEnded is the cause of a running action's context when its session
// ended: the action ends with reason session_finished.
var errSessionEnded = errors.New("the session ended while the action ran")

// begin registers the action running in session uid. Its steps run under the
// returned context, which its session's end cancels; end unregisters it and
// must be called once the action's last step returned.
func (f *fence) begin(ctx context.Context, uid types.UID) (stepCtx context.Context, end func()) {
	stepCtx, cancel := context.WithCancelCause(ctx)
	in := &inflight{cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	if f.running == nil {
		f.running = map[types.UID]*inflight{}
	}
	f.running[uid] = in
	f.mu.Unlock()
	return stepCtx, func() {
		f.mu.Lock()
		if f.running[uid] == in {
			delete(f.running, uid)
		}
		f.mu.Unlock()
		cancel(nil)
		close(in.done)
	}
}

// stop ends the action running in session uid, if any, and waits until its
// step in flight returned (or ctx ends).
func (f *fence) stop(ctx context.Context, uid types.UID) error {
	f.mu.Lock()
	in := f.running[uid]
	f.mu.Unlock()
	if in == nil {
		return nil
	}
	in.cancel(errSessionEnded)
	select {
	case <-in.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sessionEnded reports whether ctx was cancelled because its session ended.
func sessionEnded(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errSessionEnded)
}
