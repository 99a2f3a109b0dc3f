package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
)

// LeasePrefix + profile names the heartbeat Lease an agent renews.
const LeasePrefix = "tabwarden-profile-"

// DefaultAgentGrace is how long a profile's heartbeat Lease may go unrenewed
// before the controller declares its agent lost.
const DefaultAgentGrace = 40 * time.Second

// ProfileLivenessReconciler owns profile liveness, as the node lifecycle
// controller owns a Node's: it watches the agents' heartbeat Leases
// (tabwarden-profile-<profile> in LeaseNamespace) and, when one is not renewed
// within Grace, sets the profile's Connected condition to Unknown (reason
// AgentLost). Only the agent sets it back to True, when it returns. A profile
// whose Lease the controller never saw (an agent run without heartbeat) is not
// judged.
//
// Renewals are timed by the controller's clock when it observes them (as the
// node lifecycle controller's probe timestamps), never by the agent's
// renewTime, so clock skew cannot make a live agent lost; a restarted
// controller gives every agent a full grace period.
type ProfileLivenessReconciler struct {
	client.Client
	Recorder       events.EventRecorder
	LeaseNamespace string
	Grace          time.Duration

	mu   sync.Mutex
	seen map[string]renewal
}

type renewal struct {
	renewTime metav1.MicroTime
	at        time.Time
}

// SetupWithManager registers the reconciler: profiles, and the Leases named after them.
func (r *ProfileLivenessReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Grace == 0 {
		r.Grace = DefaultAgentGrace
	}
	r.seen = map[string]renewal{}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.LeaseNamespace && strings.HasPrefix(o.GetName(), LeasePrefix)
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserProfile{}).
		Watches(&coordv1.Lease{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: strings.TrimPrefix(o.GetName(), LeasePrefix)}}}
		}), builder.WithPredicates(ours)).
		Named("browserprofile-liveness").
		Complete(handlers.Quiet(r))
}

// Reconcile judges one profile's agent by its Lease.
func (r *ProfileLivenessReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &twv1.BrowserProfile{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	l := &coordv1.Lease{}
	err := r.Get(ctx, client.ObjectKey{Namespace: r.LeaseNamespace, Name: LeasePrefix + p.Name}, l)
	if apierrors.IsNotFound(err) {
		r.mu.Lock()
		delete(r.seen, p.Name)
		r.mu.Unlock()
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	var renew metav1.MicroTime
	if l.Spec.RenewTime != nil {
		renew = *l.Spec.RenewTime
	}
	now := time.Now()
	r.mu.Lock()
	last, ok := r.seen[p.Name]
	if !ok || !last.renewTime.Equal(&renew) {
		last = renewal{renewTime: renew, at: now}
		r.seen[p.Name] = last
	}
	r.mu.Unlock()
	if left := last.at.Add(r.Grace).Sub(now); left > 0 {
		// Look again when the grace period would run out.
		return ctrl.Result{RequeueAfter: left + 10*time.Millisecond}, nil
	}
	if ProfileLost(p) {
		return ctrl.Result{}, nil
	}
	before := p.DeepCopy()
	msg := AgentLostMessage(p.Name, r.LeaseNamespace, now.Sub(last.at).Round(time.Second))
	for _, typ := range []string{twv1.ConnectedCondition, twv1.ReadyCondition} {
		setCondition(p, typ, metav1.ConditionUnknown, twv1.ReasonAgentLost, msg)
	}
	// Locked: an agent that returns meanwhile wins, and the next reconcile sees its renewal.
	if err := r.Status().Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Profile's agent lost", "profile", p.Name, "lastRenewal", last.at)
	r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, twv1.ReasonAgentLost, "Heartbeat", "%s", truncate(msg, 1000))
	return ctrl.Result{}, nil
}

// ProfileLost reports whether the controller declared the profile's agent lost
// (Connected=Unknown, reason AgentLost) and the agent did not come back since.
func ProfileLost(p *twv1.BrowserProfile) bool {
	c := apimeta.FindStatusCondition(p.Status.Conditions, twv1.ConnectedCondition)
	return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == twv1.ReasonAgentLost
}

// AgentLostMessage says that a profile's agent stopped renewing its Lease, what
// that means for its sessions and how to bring it back.
func AgentLostMessage(profile, leaseNS string, since time.Duration) string {
	return fmt.Sprintf("The agent of profile %q has not renewed its heartbeat Lease %s/%s%s for %s: the browser's state is unknown. New sessions are not placed here; selector sessions with no page open move to another profile; sessions with pages keep them (nothing is closed) and converge when the agent returns. "+
		"Check it: kubectl get lease %s%s -n %s -o yaml; restart it: tabwarden agent --profile %s",
		profile, leaseNS, LeasePrefix, profile, since, LeasePrefix, profile, leaseNS, profile)
}
