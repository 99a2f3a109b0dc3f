package fuzz

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// role is a controller or agent running in this process until stopped.
type role struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func startRole(f func(ctx context.Context) error) *role {
	ctx, cancel := context.WithCancel(context.Background())
	r := &role{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = f(ctx)
	}()
	return r
}

// dead returns the error of a role that stopped by itself.
func (r *role) dead() error {
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
		return fmt.Errorf("stopped by itself: %v", r.err)
	default:
		return nil
	}
}

func (r *role) stop() error {
	if r == nil {
		return nil
	}
	r.cancel()
	<-r.done
	return r.err
}

// The controller is cluster-wide: one at a time in this process.
var (
	ctlMu sync.Mutex
	ctl   *role
	// agentGrace is how long the controller lets a profile's heartbeat go
	// unrenewed before it holds the agent lost (0: the shipped default).
	agentGrace time.Duration
)

func controllerUp(up bool) error {
	ctlMu.Lock()
	defer ctlMu.Unlock()
	if err := ctl.dead(); err != nil {
		return fmt.Errorf("the controller %w", err)
	}
	switch {
	case up && ctl == nil:
		cfg, err := testenv.ControllerConfig(admin)
		if err != nil {
			return err
		}
		ctl = startRole(func(ctx context.Context) error {
			return run.Controller(ctx, cfg, run.ControllerOptions{Common: run.Common{SkipNameValidation: true}, AgentGrace: agentGrace})
		})
	case !up && ctl != nil:
		err := ctl.stop()
		ctl = nil
		if err != nil {
			return fmt.Errorf("the controller stopped with an error: %w", err)
		}
	}
	return nil
}

func controllerIsUp() bool {
	ctlMu.Lock()
	defer ctlMu.Unlock()
	return ctl != nil
}
