package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// The session's timers: what ends a running session without its driver saying
// so. Both record why in status.endReason, once, so every role agrees and it
// sticks (BrowserSession.Ended).
//
//   - WaitingForUser: the idle timer does not run; status.waitingSince records
//     when the wait began, and spec.userWaitTimeout (unset: for ever) ends a
//     wait that lasts longer (UserWaitTimeout). The wait ending is activity.
//   - Active: spec.idleTimeout ends the session after that long without
//     activity (IdleTimeout). Activity is a window created, opened or closed
//     (status.lastActivityTime, kept from the windows as they change) and an
//     action created, claimed, running or finished. Actions are looked at only when the
//     idle deadline is reached, from the cache: driving a session costs no
//     write per step.

// reconcileTimers records the session's waits and activity, ends it (sets
// status.endReason) when a timer expired, and returns when to look again (zero:
// no timer runs).
func (r *SessionReconciler) reconcileTimers(ctx context.Context, s *twv1.BrowserSession) (time.Duration, error) {
	if s.Ended() {
		s.Status.WaitingSince = nil
		return 0, nil
	}
	now := time.Now()
	if s.Spec.State == twv1.SessionWaitingForUser {
		return r.waitTimer(ctx, s, now), nil
	}
	if s.Status.WaitingSince != nil {
		// The wait ended: the driver is back, and the idle timer runs from now.
		s.Status.WaitingSince = nil
		touch(s, now)
	}
	return r.idleTimer(ctx, s, now)
}

// waitTimer records when the wait began and ends it after spec.userWaitTimeout.
func (r *SessionReconciler) waitTimer(ctx context.Context, s *twv1.BrowserSession, now time.Time) time.Duration {
	if s.Status.WaitingSince == nil {
		t := metav1.NewTime(now)
		s.Status.WaitingSince = &t
	}
	if s.Spec.UserWaitTimeout == nil || s.Spec.UserWaitTimeout.Duration <= 0 {
		return 0
	}
	left := s.Status.WaitingSince.Add(s.Spec.UserWaitTimeout.Duration).Sub(now)
	if left > 0 {
		return left
	}
	s.Status.EndReason = twv1.ReasonUserWaitTimeout
	ctrl.LoggerFrom(ctx).Info("Session waited too long for its user; finishing it", "userWaitTimeout", s.Spec.UserWaitTimeout.Duration)
	r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.ReasonUserWaitTimeout, "Finish",
		"Waited for the user for %s (spec.userWaitTimeout) since %s: the session finishes; temporary pages close, Keep pages are released",
		s.Spec.UserWaitTimeout.Duration, s.Status.WaitingSince.UTC().Format(time.RFC3339))
	// The wait is over with the session: the status write that ends it says so.
	s.Status.WaitingSince = nil
	return 0
}

// idleTimer ends an Active session after spec.idleTimeout without activity.
func (r *SessionReconciler) idleTimer(ctx context.Context, s *twv1.BrowserSession, now time.Time) (time.Duration, error) {
	if s.Spec.IdleTimeout == nil || s.Spec.IdleTimeout.Duration <= 0 {
		return 0, nil
	}
	idle := s.Spec.IdleTimeout.Duration
	if left := lastActive(s).Add(idle).Sub(now); left > 0 {
		return left, nil
	}
	// The deadline: was the session driven by actions meanwhile?
	last, running, err := r.actionActivity(ctx, s)
	if err != nil {
		return 0, err
	}
	if running {
		last = now
	}
	if last.After(lastActive(s)) {
		touch(s, last)
		if left := lastActive(s).Add(idle).Sub(now); left > 0 {
			return left, nil
		}
	}
	s.Status.EndReason = twv1.ReasonIdleTimeout
	ctrl.LoggerFrom(ctx).Info("Session idle; finishing it", "idleTimeout", idle)
	r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.ReasonIdleTimeout, "Finish",
		"No activity for %s (spec.idleTimeout): the session finishes; temporary pages close, Keep pages are released", idle)
	return 0, nil
}

// actionActivity is when an action of the session was last created, claimed
// or finished, and whether one runs now, from the cache.
func (r *SessionReconciler) actionActivity(ctx context.Context, s *twv1.BrowserSession) (time.Time, bool, error) {
	var list twv1.BrowserActionList
	if err := r.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{twv1.SessionRefIndex: s.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return time.Time{}, false, err
	}
	var last time.Time
	running := false
	for i := range list.Items {
		st := &list.Items[i].Status
		running = running || st.Phase == twv1.ActionRunning
		// Creating an action is driving the session: an action the agent
		// has not claimed yet (a busy agent, a slow watch) counts from then.
		created := list.Items[i].CreationTimestamp
		for _, t := range []*metav1.Time{&created, st.StartTime, st.CompletionTime} {
			if t != nil && t.After(last) {
				last = t.Time
			}
		}
	}
	return last, running, nil
}

// lastActive is when the session was last active: its last recorded activity,
// or its creation.
func lastActive(s *twv1.BrowserSession) time.Time {
	if s.Status.LastActivityTime != nil {
		return s.Status.LastActivityTime.Time
	}
	return s.CreationTimestamp.Time
}

// touch records activity at t (never moving it back).
func touch(s *twv1.BrowserSession, t time.Time) {
	if s.Status.LastActivityTime == nil || t.After(s.Status.LastActivityTime.Time) {
		mt := metav1.NewTime(t)
		s.Status.LastActivityTime = &mt
	}
}
