package agent

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
)

// keepalive keeps the browser connection busy while an active session placed
// here asks for it (spec.keepalive), on hosts that end idle connections: it
// asks the driver for a snapshot at the shortest interval any such session
// names (at least 5s).
type keepalive struct {
	agent *Agent
}

// NeedLeaderElection: every agent serves its own browser.
func (k *keepalive) NeedLeaderElection() bool { return false }

// Start runs until ctx ends.
func (k *keepalive) Start(ctx context.Context) error {
	a := k.agent
	log := ctrl.LoggerFrom(ctx).WithName("keepalive").WithValues("profile", a.opts.Profile)
	wait := 10 * time.Second
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		interval := k.interval(ctx)
		wait = 30 * time.Second
		if interval == 0 {
			continue
		}
		wait = min(interval, wait)
		if _, err := a.opts.Browser.Snapshot(ctx); err != nil {
			log.V(1).Info("Keepalive snapshot failed", "error", err.Error())
		}
	}
}

// interval is the shortest keepalive interval of the active sessions placed
// here, or 0 when none asks for one.
func (k *keepalive) interval(ctx context.Context) time.Duration {
	a := k.agent
	var list twv1.BrowserSessionList
	// Read-only, from the cache's status.profileName index without copies.
	if err := a.client.List(ctx, &list, client.MatchingFields{index.SessionProfile: a.opts.Profile}, client.UnsafeDisableDeepCopy); err != nil {
		return 0
	}
	var min time.Duration
	for i := range list.Items {
		s := &list.Items[i]
		if s.Status.ProfileName != a.opts.Profile || s.Ended() || s.Spec.Keepalive == nil || s.Spec.Keepalive.Interval.Duration <= 0 {
			continue
		}
		d := max(s.Spec.Keepalive.Interval.Duration, 5*time.Second)
		if min == 0 || d < min {
			min = d
		}
	}
	return min
}
