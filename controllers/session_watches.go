package controllers

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
)

// sessionDelay is how long window events wait before their session is
// reconciled, so that a burst of them becomes one status write.
const sessionDelay = 200 * time.Millisecond

// untakenDelay is how long the events of a window that no agent has taken yet
// (just created, or registered) wait: its agent's first status write follows
// within the agent's settle budget (1s at most by default), and the session's
// counts and conditions are then written once for the create, the registration
// and the page. Gating does not wait on this (the agent decides from its own
// cache), and neither does cleanup: a window being deleted, or gone, reconciles
// its session at once.
const untakenDelay = 1500 * time.Millisecond

// windowEvents maps window events to their session: at once when the
// session's last window goes (the session's finalizer may be the last thing
// left) or a window is deleted
// before an agent took it (the controller may have to let it go itself), after
// untakenDelay while no agent has taken it, else after sessionDelay.
func (r *SessionReconciler) windowEvents() handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		w, ok := o.(*twv1.BrowserWindow)
		if !ok {
			return
		}
		req := windowToSession(context.Background(), w)[0]
		switch {
		case !w.DeletionTimestamp.IsZero() && AgentTook(w) && controllerutil.ContainsFinalizer(w, twv1.PageFinalizer):
			// Its agent is closing the page: only the window's going (its Delete
			// event, at once below) can let the session go. Reconciling now would
			// hold that reconcile behind a status write from a cache that has not
			// seen the last one yet.
			q.AddAfter(req, sessionDelay)
		case !w.DeletionTimestamp.IsZero():
			q.Add(req)
		case !AgentTook(w):
			q.AddAfter(req, untakenDelay)
		default:
			q.AddAfter(req, sessionDelay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// controller-runtime hands over the last known object, tombstones unwrapped.
			w, ok := e.Object.(*twv1.BrowserWindow)
			if !ok {
				return
			}
			req := windowToSession(ctx, w)[0]
			// The cache has dropped the window already: while other windows of
			// the session remain, the last one to go reconciles it at once and
			// this one waits like any other event, so a session's N windows
			// going together cost one status write, not N.
			var list twv1.BrowserWindowList
			if err := r.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingFields{WindowSessionIndex: w.Spec.SessionRef.Name}); err == nil &&
				slices.ContainsFunc(list.Items, func(o twv1.BrowserWindow) bool {
					return o.UID != w.UID && (o.DeletionTimestamp.IsZero() || len(o.Finalizers) > 0)
				}) {
				q.AddAfter(req, sessionDelay)
				return
			}
			q.Add(req)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// windowToSession maps a window to the session it names.
func windowToSession(_ context.Context, o client.Object) []reconcile.Request {
	w := o.(*twv1.BrowserWindow)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}}}
}

// profileHandler maps a profile event to the sessions it may concern: unplaced
// sessions whose selector may match it or that are pinned to it, and, when its
// tenancy changed, the sessions placed on it (Admitted is re-evaluated).
func (r *SessionReconciler) profileHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, p *twv1.BrowserProfile, placed bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.profileToSessions(ctx, p, placed) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object.(*twv1.BrowserProfile), true, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, n := e.ObjectOld.(*twv1.BrowserProfile), e.ObjectNew.(*twv1.BrowserProfile)
			tenancy := !equality.Semantic.DeepEqual(o.Spec.Namespaces, n.Spec.Namespaces) ||
				!equality.Semantic.DeepEqual(o.Spec.NamespaceSelector, n.Spec.NamespaceSelector)
			// The agent lost or back: the sessions placed on it say so (and may move).
			liveness := !equality.Semantic.DeepEqual(apimeta.FindStatusCondition(o.Status.Conditions, twv1.ConnectedCondition),
				apimeta.FindStatusCondition(n.Status.Conditions, twv1.ConnectedCondition))
			// Where an unplaced session may go: the profile's spec (capacity,
			// tenancy), labels (selectors), connection, and its load as its
			// agent counts it (a session ended elsewhere frees room). A status
			// write that changes none of these (its tab count, version, epoch)
			// concerns no session and costs no lookup.
			placement := tenancy || liveness || o.Generation != n.Generation ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) || o.Status.Sessions != n.Status.Sessions
			if !placement {
				return
			}
			enqueue(ctx, n, tenancy || liveness, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if p, ok := e.Object.(*twv1.BrowserProfile); ok {
				enqueue(ctx, p, false, q)
			}
		},
	}
}

// profileToSessions lists the sessions a change of profile p may concern: those
// still waiting for placement (by selector, or pinned to p) and, with placed,
// the running sessions placed on p. Each comes from an index of the cache, read
// without copies: a profile event costs the sessions it concerns, not all of them.
func (r *SessionReconciler) profileToSessions(ctx context.Context, p *twv1.BrowserProfile, placed bool) []reconcile.Request {
	var reqs []reconcile.Request
	add := func(field, value string, keep func(*twv1.BrowserSession) bool) {
		var sessions twv1.BrowserSessionList
		if err := r.List(ctx, &sessions, client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range sessions.Items {
			if s := &sessions.Items[i]; keep(s) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)})
			}
		}
	}
	all := func(*twv1.BrowserSession) bool { return true }
	add(index.Unplaced, index.UnplacedSelector, all)
	add(index.Unplaced, index.UnplacedPinned(p.Name), all)
	if placed {
		add(SessionProfileIndex, p.Name, func(s *twv1.BrowserSession) bool { return !s.Ended() })
	}
	return reqs
}

// namespaceToSessions maps a namespace whose labels changed to its running sessions.
func (r *SessionReconciler) namespaceToSessions(ctx context.Context, o client.Object) []reconcile.Request {
	var sessions twv1.BrowserSessionList
	if err := r.List(ctx, &sessions, client.InNamespace(o.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range sessions.Items {
		if s := &sessions.Items[i]; !s.Ended() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)})
		}
	}
	return reqs
}

func deletingPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() })
}
