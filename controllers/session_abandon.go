package controllers

import (
	"context"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

// SessionLease returns the key of the Lease by which a session's holder
// claims it: named after the session, in its namespace.
func SessionLease(s *twv1.BrowserSession) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
}

// holderLease returns the session's holder Lease, or nil when no client holds
// it: none exists, or the one named after it belongs to another session (an
// earlier one of the same name, or a Lease not made by a holder).
func (r *SessionReconciler) holderLease(ctx context.Context, s *twv1.BrowserSession) (*coordv1.Lease, error) {
	l := &coordv1.Lease{}
	if err := r.Get(ctx, SessionLease(s), l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if l.Labels[twv1.SessionLabel] != s.Name {
		return nil, nil
	}
	for _, o := range l.OwnerReferences {
		if o.UID == s.UID {
			return l, nil
		}
	}
	return nil, nil
}

// reconcileAbandon mirrors the session's holder and its last renewal into
// status and, for a session with spec.abandonAfter, ends it (status.endReason
// Abandoned) once the holder has not renewed for that long: Held=False, a
// Warning Event, then the same end as state Finished (reconcileLifecycle). A
// session nobody held counts from its creation; one WaitingForUser is never
// abandoned. It returns how long until the session would be abandoned (0: no
// timer runs), for the reconcile to look again then: renewals move the
// deadline without an event, so a held session costs one look per abandonAfter.
func (r *SessionReconciler) reconcileAbandon(ctx context.Context, s *twv1.BrowserSession) (time.Duration, error) {
	if s.Ended() {
		return 0, nil
	}
	l, err := r.holderLease(ctx, s)
	if err != nil {
		return 0, err
	}
	since := s.CreationTimestamp.Time
	if l != nil {
		s.Status.Holder = ptrValue(l.Spec.HolderIdentity)
		if t := leaseRenewal(l); t != nil {
			s.Status.LastRenewal = t
			if t.After(since) {
				since = t.Time
			}
		}
	} else {
		s.Status.Holder = ""
	}
	if s.Spec.AbandonAfter == nil || s.Spec.AbandonAfter.Duration <= 0 {
		apimeta.RemoveStatusCondition(&s.Status.Conditions, twv1.HeldCondition)
		return 0, nil
	}
	after := s.Spec.AbandonAfter.Duration
	if s.Spec.State == twv1.SessionWaitingForUser {
		setCondition(s, twv1.HeldCondition, metav1.ConditionTrue, twv1.ReasonHeld,
			"The session waits for its user: it is not abandoned while it waits, whoever holds it")
		return 0, nil
	}
	left := time.Until(since.Add(after))
	if left > 0 {
		if l == nil {
			setCondition(s, twv1.HeldCondition, metav1.ConditionTrue, twv1.ReasonNotYetHeld,
				fmt.Sprintf("No client holds the session yet; it is abandoned %s after its creation unless one does: %s", after, hint.Hold(s.Namespace, s.Name)))
		} else {
			setCondition(s, twv1.HeldCondition, metav1.ConditionTrue, twv1.ReasonHeld,
				fmt.Sprintf("%q holds the session; it is abandoned if it stops renewing for %s (spec.abandonAfter)", s.Status.Holder, after))
		}
		return left, nil
	}
	who := "No client held the session"
	if l != nil {
		who = fmt.Sprintf("Its holder %q stopped renewing", s.Status.Holder)
	}
	msg := fmt.Sprintf("%s for %s (spec.abandonAfter): the session is abandoned and ends; temporary pages close, Keep pages are released, bound tabs detached", who, after)
	setCondition(s, twv1.HeldCondition, metav1.ConditionFalse, twv1.ReasonAbandoned, msg)
	s.Status.EndReason = twv1.ReasonAbandoned
	ctrl.LoggerFrom(ctx).Info("Session abandoned; ending it", "holder", s.Status.Holder, "abandonAfter", after)
	r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, twv1.ReasonAbandoned, "Abandon", "%s", msg)
	return 0, nil
}

// leaseRenewal is the Lease's last renewal, or its acquisition when never renewed.
func leaseRenewal(l *coordv1.Lease) *metav1.Time {
	if l.Spec.RenewTime != nil {
		t := metav1.NewTime(l.Spec.RenewTime.Time)
		return &t
	}
	if l.Spec.AcquireTime != nil {
		t := metav1.NewTime(l.Spec.AcquireTime.Time)
		return &t
	}
	return nil
}

func ptrValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// holderLeases maps a holder Lease to its session when it appears, goes or
// changes hands; a renewal alone enqueues nothing (the session is looked at
// when its abandonAfter would expire).
func holderLeases() (handler.EventHandler, predicate.Predicate) {
	h := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[twv1.SessionLabel]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	p := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*coordv1.Lease)
			n, ok2 := e.ObjectNew.(*coordv1.Lease)
			return !ok1 || !ok2 || ptrValue(o.Spec.HolderIdentity) != ptrValue(n.Spec.HolderIdentity) ||
				o.Labels[twv1.SessionLabel] != n.Labels[twv1.SessionLabel]
		},
	}
	return h, p
}

// soonest is res with its requeue brought forward to in (when in > 0).
func soonest(res ctrl.Result, in time.Duration) ctrl.Result {
	if in > 0 && (res.RequeueAfter == 0 || in < res.RequeueAfter) {
		res.RequeueAfter = in
	}
	return res
}
