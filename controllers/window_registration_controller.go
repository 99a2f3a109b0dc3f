package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/handlers"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
)

// WindowRegistrationReconciler ties each BrowserWindow to its session: owner
// reference and the session, profile and source labels that the agent of that
// profile selects on. A window whose session does not exist is refused with
// session_unregistered and never reaches an agent.
type WindowRegistrationReconciler struct {
	client.Client
	// APIReader reads around the cache: a window is only refused after the API
	// server itself says its session does not exist (the cache may lag a session
	// created just before its window).
	APIReader client.Reader
	Recorder  events.EventRecorder
}

// SetupWithManager registers the reconciler: windows, and sessions mapped to the windows that name them.
func (r *WindowRegistrationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.BrowserWindow{}).
		Watches(&twv1.BrowserSession{}, handler.EnqueueRequestsFromMapFunc(r.sessionToWindows)).
		Named("browserwindow-registration").
		Complete(handlers.Quiet(r))
}

// Reconcile registers one window.
func (r *WindowRegistrationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	w := &twv1.BrowserWindow{}
	if err := r.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		// Deletion belongs to the agent's page finalizer.
		return ctrl.Result{}, nil
	}
	helper := patch.NewHelper(w, r.Client)
	defer func() {
		if err := helper.Patch(ctx, w); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()
	return r.reconcileRegistration(ctx, w)
}

// reconcileRegistration sets labels and the owner reference from the session.
// Sets Registered=False (session_unregistered) when the session does not exist;
// the agent owns the window's status from the moment it carries a profile label.
func (r *WindowRegistrationReconciler) reconcileRegistration(ctx context.Context, w *twv1.BrowserWindow) (ctrl.Result, error) {
	s := &twv1.BrowserSession{}
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.SessionRef.Name}
	err := r.Get(ctx, key, s)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, s)
	}
	if apierrors.IsNotFound(err) {
		if w.Labels[twv1.ProfileLabel] != "" {
			// The session went away after registration; its finalizer handles the rest.
			return ctrl.Result{}, nil
		}
		msg := UnregisteredWindowMessage(w)
		w.Status.Phase = twv1.WindowPending
		w.Status.Disposition = w.EffectiveDisposition()
		setCondition(w, twv1.RegisteredCondition, metav1.ConditionFalse, twv1.ReasonSessionUnregistered, msg)
		setCondition(w, twv1.ReadyCondition, metav1.ConditionFalse, twv1.ReasonSessionUnregistered, msg)
		r.Recorder.Eventf(w, nil, corev1.EventTypeWarning, twv1.ReasonSessionUnregistered, "Register",
			"BrowserSession %q does not exist in namespace %q; create it first (the Registered condition has the manifest)", w.Spec.SessionRef.Name, w.Namespace)
		// A user error: the session watch brings the window back when it appears.
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s", msg))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !s.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if w.Labels[twv1.ProfileLabel] == "" && clearUnregistered(w, s) {
		// The session appeared: the refusal this controller wrote goes, in a
		// status write of its own while no agent sees the window yet (the
		// profile label, which hands it to one, follows on the next reconcile).
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	// A window follows its session to another profile (moved off a lost one)
	// only while no agent has taken it: one whose status an agent wrote may
	// have a page in the old browser, and stays that agent's. The page
	// finalizer goes with the label, in the same write, so the agent opens the
	// page without a write of its own first; a creator that knew the session's
	// placement did all this in its create, and nothing is written here
	// (docs/design.md, "Writes per operation").
	w.Register(s, w.Labels[twv1.ProfileLabel] == "" || !AgentTook(w))
	if err := controllerutil.SetControllerReference(s, w, r.Scheme()); err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	return ctrl.Result{}, nil
}

// AgentTook reports whether an agent has taken the window: it wrote the
// window's status (status.profileName, a tab, a live phase). An agent writes
// that status in the reconcile that opens the page, so a window it has not
// taken has no page unless the agent stopped between the browser's create and
// the write (see docs/design.md, "Known gaps").
func AgentTook(w *twv1.BrowserWindow) bool {
	return w.Status.ProfileName != "" || w.Status.TabID != "" || w.Live() ||
		w.Status.Phase == twv1.WindowClosed || w.Status.Phase == twv1.WindowGone
}

// clearUnregistered replaces the session_unregistered refusal of a window whose
// session now exists: Registered=True, and the Ready condition (the agent's to
// set) removed. Reports whether anything changed.
func clearUnregistered(w *twv1.BrowserWindow, s *twv1.BrowserSession) bool {
	changed := false
	if c := apimeta.FindStatusCondition(w.Status.Conditions, twv1.ReadyCondition); c != nil && c.Reason == twv1.ReasonSessionUnregistered {
		apimeta.RemoveStatusCondition(&w.Status.Conditions, twv1.ReadyCondition)
		changed = true
	}
	if c := apimeta.FindStatusCondition(w.Status.Conditions, twv1.RegisteredCondition); c != nil && c.Reason == twv1.ReasonSessionUnregistered {
		setCondition(w, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
			fmt.Sprintf("BrowserSession %q exists; the window waits for its placement on a profile", s.Name))
		changed = true
	}
	return changed
}

// UnregisteredWindowMessage teaches how to register the session a window names.
func UnregisteredWindowMessage(w *twv1.BrowserWindow) string {
	return fmt.Sprintf("BrowserSession %q does not exist in namespace %q; a window belongs to a registered session. Create it first: "+
		"kubectl apply -f - <<<'{\"apiVersion\":\"tabwarden.dev/v1alpha1\",\"kind\":\"BrowserSession\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"thread\":\"thread-42\",\"purpose\":\"file the 2026 tax return form\",\"profileName\":\"local\"}}'",
		w.Spec.SessionRef.Name, w.Namespace, w.Spec.SessionRef.Name, w.Namespace)
}

// sessionToWindows maps a session to the windows that name it.
func (r *WindowRegistrationReconciler) sessionToWindows(ctx context.Context, o client.Object) []reconcile.Request {
	var list twv1.BrowserWindowList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{WindowSessionIndex: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, w := range list.Items {
		// Only windows that still lack something the session gives them, or
		// that the session left behind on another profile.
		s := o.(*twv1.BrowserSession)
		moved := s.Status.ProfileName != "" && w.Labels[twv1.ProfileLabel] != s.Status.ProfileName
		if w.Labels[twv1.ProfileLabel] == "" || metav1.GetControllerOf(&w) == nil || moved {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
		}
	}
	return reqs
}
