package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

// reconcilePlacement binds the session to a profile that admits its namespace:
// the pinned one, or a connected profile with capacity matching the selector.
// Sets Registered and Admitted. A session whose pinned profile is missing or does
// not admit its namespace stays unplaced (status.profileName empty), so no agent
// serves it and none of its windows opens. A placed session is never evicted: if
// its profile stops admitting its namespace it keeps its placement until it ends
// (its pages stay owned and are cleaned up) and Admitted turns False.
func (r *SessionReconciler) reconcilePlacement(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (ctrl.Result, error) {
	if s.Status.ProfileName != "" {
		moved, err := r.reconcileReachable(ctx, s, windows)
		if err != nil || moved {
			return ctrl.Result{}, err
		}
		setCondition(s, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
			fmt.Sprintf("Thread %q drives profile %q for: %s", s.Spec.Thread, s.Status.ProfileName, s.Spec.Purpose))
		return ctrl.Result{}, r.reconcileStillAdmitted(ctx, s)
	}
	if s.Spec.ProfileName != "" {
		p := &twv1.BrowserProfile{}
		err := r.Get(ctx, client.ObjectKey{Name: s.Spec.ProfileName}, p)
		if apierrors.IsNotFound(err) {
			apimeta.RemoveStatusCondition(&s.Status.Conditions, twv1.AdmittedCondition)
			r.refuse(s, twv1.ReasonNoProfile, MissingProfileMessage(s),
				fmt.Sprintf("BrowserProfile %q does not exist; the session waits unplaced (see its Registered condition)", s.Spec.ProfileName))
			// The profile watch brings the session back when the profile appears.
			return ctrl.Result{}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		ok, err := r.admits(ctx, p, s.Namespace)
		if !ok {
			r.refuseNotAllowed(ctx, s, p, err)
			// The profile and namespace watches bring the session back when either changes.
			return ctrl.Result{}, nil
		}
		r.place(s, p.Name)
		return ctrl.Result{}, nil
	}
	r.placeMu.Lock()
	defer r.placeMu.Unlock()
	profile, notAdmitting, err := r.schedule(ctx, s, "")
	if err != nil {
		return ctrl.Result{}, err
	}
	if profile == "" {
		if len(notAdmitting) > 0 {
			r.refuse(s, twv1.ReasonProfileNotAllowed, SelectorNotAllowedMessage(s, notAdmitting),
				fmt.Sprintf("No profile matching spec.profileSelector admits namespace %q; admit it: %s", s.Namespace, hint.Admit(notAdmitting[0], s.Namespace)))
			return ctrl.Result{}, nil
		}
		setCondition(s, twv1.RegisteredCondition, metav1.ConditionFalse, twv1.ReasonNoProfile,
			fmt.Sprintf("No connected BrowserProfile with free capacity that admits namespace %q matches spec.profileSelector; see `kubectl get browserprofiles --show-labels -o wide`, or pin one with spec.profileName", s.Namespace))
		// Profiles coming and going re-trigger this through the profile watch;
		// capacity freed by sessions that end is looked at again after a while.
		return ctrl.Result{RequeueAfter: r.CleanupRequeue}, nil
	}
	r.reserve(s, profile)
	r.place(s, profile)
	return ctrl.Result{}, nil
}

// reconcileReachable sets ProfileReachable on a placed session from its
// profile's liveness. A running selector session whose profile's agent is lost
// and that has no page there yet (movable) is placed on another profile; every
// other session keeps its placement (its pages stay owned; nothing is closed
// twice) and converges when the agent returns. Reports whether it moved.
func (r *SessionReconciler) reconcileReachable(ctx context.Context, s *twv1.BrowserSession, windows []twv1.BrowserWindow) (bool, error) {
	p := &twv1.BrowserProfile{}
	if err := r.Get(ctx, client.ObjectKey{Name: s.Status.ProfileName}, p); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !ProfileLost(p) {
		setCondition(s, twv1.ProfileReachableCondition, metav1.ConditionTrue, twv1.ReasonProfileReachable,
			fmt.Sprintf("The agent of profile %q renews its heartbeat", p.Name))
		return false, nil
	}
	old := s.Status.ProfileName
	if !s.Ended() && s.Spec.ProfileName == "" && movable(windows) {
		r.placeMu.Lock()
		defer r.placeMu.Unlock()
		profile, _, err := r.schedule(ctx, s, old)
		if err != nil {
			return false, err
		}
		if profile != "" {
			r.reserve(s, profile)
			r.place(s, profile)
			setCondition(s, twv1.ProfileReachableCondition, metav1.ConditionTrue, twv1.ReasonProfileReachable,
				fmt.Sprintf("Moved from profile %q, whose agent was lost, to %q before any page opened", old, profile))
			ctrl.LoggerFrom(ctx).Info("Session moved off a lost profile", "from", old, "to", profile)
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, twv1.EventRescheduled, "Place",
				"The agent of profile %q was lost before any page of the session opened; placed on %q", old, profile)
			return true, nil
		}
	}
	was := !apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.ProfileReachableCondition)
	msg := ProfileLostMessage(s, old, movable(windows))
	setCondition(s, twv1.ProfileReachableCondition, metav1.ConditionFalse, twv1.ReasonProfileLost, msg)
	if was {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, twv1.ReasonProfileLost, "Place", "%s", truncate(msg, 1000))
	}
	return false, nil
}

// movable reports whether a session may leave its profile: none of its windows
// may have a page there. A window the agent took (AgentTook: its status, written
// in the reconcile that opens the page), a spawned or a bound one ties the
// session to that browser.
func movable(windows []twv1.BrowserWindow) bool {
	for i := range windows {
		w := &windows[i]
		if w.Spec.Source != twv1.SourceOpen || AgentTook(w) {
			return false
		}
	}
	return true
}

// ProfileLostMessage says that a session's profile is lost, what happens to it
// meanwhile and what the user can do.
func ProfileLostMessage(s *twv1.BrowserSession, profile string, movable bool) string {
	why := "it has pages there, which stay owned by it (nothing is closed or opened twice)"
	switch {
	case s.Spec.ProfileName != "":
		why = "it is pinned to it (spec.profileName)"
	case s.Ended():
		why = "it has ended and its pages are closed by that agent"
	case movable:
		why = "no other connected profile with free capacity matches spec.profileSelector (it moves when one does)"
	}
	return fmt.Sprintf("The agent of profile %q is lost (its heartbeat Lease is not renewed): none of the session's pages is opened, observed or closed until it returns. The session stays on %q because %s; it converges when the agent returns. See: kubectl get browserprofile %s -o wide; or end it: kubectl delete browsersession %s -n %s",
		profile, profile, why, profile, s.Name, s.Namespace)
}

// reserve records a placement decided for s until the cache shows it. Callers hold placeMu.
func (r *SessionReconciler) reserve(s *twv1.BrowserSession, profile string) {
	r.reserved[client.ObjectKeyFromObject(s)] = reservation{profile: profile, at: time.Now()}
}

// load counts the running sessions placed on profile, from the cache (the
// status.profileName index) and the placements decided but not yet cached,
// leaving out the session self. Callers hold placeMu.
func (r *SessionReconciler) load(ctx context.Context, profile string, self types.NamespacedName) (int32, error) {
	var list twv1.BrowserSessionList
	if err := r.List(ctx, &list, client.MatchingFields{SessionProfileIndex: profile}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	counted := map[types.NamespacedName]bool{}
	var n int32
	for i := range list.Items {
		s := &list.Items[i]
		key := client.ObjectKeyFromObject(s)
		if key == self || s.Ended() {
			continue
		}
		if res, ok := r.reserved[key]; ok && res.profile != profile {
			continue // moved elsewhere; the cache has not seen it yet
		}
		counted[key] = true
		n++
	}
	for key, res := range r.reserved {
		if res.profile == profile && key != self && !counted[key] {
			n++
		}
	}
	return n, nil
}

// pruneReservations forgets the placements the cache shows, those of sessions
// that are gone, and stale ones (a status write that failed is retried, and
// reserves again). Callers hold placeMu.
func (r *SessionReconciler) pruneReservations(ctx context.Context) {
	for key, res := range r.reserved {
		s := &twv1.BrowserSession{}
		err := r.Get(ctx, key, s)
		if apierrors.IsNotFound(err) || (err == nil && s.Status.ProfileName == res.profile) || time.Since(res.at) > reservationTTL {
			delete(r.reserved, key)
		}
	}
}

// place binds the session to an admitting profile.
func (r *SessionReconciler) place(s *twv1.BrowserSession, profile string) {
	s.Status.ProfileName = profile
	setCondition(s, twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered,
		fmt.Sprintf("Thread %q drives profile %q for: %s", s.Spec.Thread, profile, s.Spec.Purpose))
	setCondition(s, twv1.AdmittedCondition, metav1.ConditionTrue, twv1.ReasonAdmitted,
		fmt.Sprintf("BrowserProfile %q admits namespace %q", profile, s.Namespace))
}

// refuse leaves the session unplaced: Registered=False with the reason and the
// message, and a Warning Event when it was not refused for that reason already.
func (r *SessionReconciler) refuse(s *twv1.BrowserSession, reason, msg, note string) {
	c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.RegisteredCondition)
	again := c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
	setCondition(s, twv1.RegisteredCondition, metav1.ConditionFalse, reason, msg)
	if !again {
		// Event notes are limited to 1 KiB: the full hint lives in the condition.
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, reason, "Place", "%s", truncate(note, 1000))
	}
}

// refuseNotAllowed refuses a session whose pinned profile does not admit its namespace.
func (r *SessionReconciler) refuseNotAllowed(ctx context.Context, s *twv1.BrowserSession, p *twv1.BrowserProfile, admitErr error) {
	msg := NotAllowedMessage(s, p, r.admittingProfiles(ctx, s.Namespace), admitErr)
	setCondition(s, twv1.AdmittedCondition, metav1.ConditionFalse, twv1.ReasonProfileNotAllowed, msg)
	r.refuse(s, twv1.ReasonProfileNotAllowed, msg,
		fmt.Sprintf("BrowserProfile %q does not admit namespace %q; the session is not placed. Admit it: %s", p.Name, s.Namespace, hint.Admit(p, s.Namespace)))
}

// reconcileStillAdmitted re-evaluates a placed session's admission after its
// profile's tenancy or its namespace's labels changed: it is not evicted, but
// Admitted says so, with a Warning Event when it turns False.
func (r *SessionReconciler) reconcileStillAdmitted(ctx context.Context, s *twv1.BrowserSession) error {
	if s.Ended() {
		return nil
	}
	p := &twv1.BrowserProfile{}
	if err := r.Get(ctx, client.ObjectKey{Name: s.Status.ProfileName}, p); err != nil {
		// A deleted profile is its agent's to register again; nothing to say here.
		return client.IgnoreNotFound(err)
	}
	ok, err := r.admits(ctx, p, s.Namespace)
	if ok {
		setCondition(s, twv1.AdmittedCondition, metav1.ConditionTrue, twv1.ReasonAdmitted,
			fmt.Sprintf("BrowserProfile %q admits namespace %q", p.Name, s.Namespace))
		return nil
	}
	was := !apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.AdmittedCondition)
	setCondition(s, twv1.AdmittedCondition, metav1.ConditionFalse, twv1.ReasonProfileNotAllowed, NoLongerAllowedMessage(s, p, err))
	if was {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, twv1.ReasonProfileNotAllowed, "Place",
			"BrowserProfile %q no longer admits namespace %q; the session keeps its placement until it ends (not evicted). End it: kubectl delete browsersession %s -n %s",
			p.Name, s.Namespace, s.Name, s.Namespace)
	}
	return nil
}

// admits reports whether profile p admits namespace ns, reading the namespace's
// labels from the cache when the profile has a selector. A namespace the cache
// does not hold yet has no labels; the namespace watch re-evaluates it.
func (r *SessionReconciler) admits(ctx context.Context, p *twv1.BrowserProfile, ns string) (bool, error) {
	var nsLabels map[string]string
	if p.Spec.NamespaceSelector != nil && !slices.Contains(p.Spec.Namespaces, ns) {
		n := &corev1.Namespace{}
		if err := r.Get(ctx, client.ObjectKey{Name: ns}, n); err == nil {
			nsLabels = n.Labels
		} else if !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return p.Admits(ns, nsLabels)
}

// admittingProfiles names up to five profiles that admit namespace ns, for hints.
func (r *SessionReconciler) admittingProfiles(ctx context.Context, ns string) []string {
	var profiles twv1.BrowserProfileList
	if err := r.List(ctx, &profiles); err != nil {
		return nil
	}
	var names []string
	for i := range profiles.Items {
		if ok, _ := r.admits(ctx, &profiles.Items[i], ns); ok {
			names = append(names, profiles.Items[i].Name)
		}
	}
	slices.Sort(names)
	if len(names) > 5 {
		names = names[:5]
	}
	return names
}

// schedule picks, among the connected profiles matching the selector that admit
// the session's namespace and have room, the least-loaded one. When none does
// but some connected ones with capacity only fail to admit the namespace, it
// returns those, so that the refusal can say which profile to open up.
//
// Load is counted by the controller itself (sessions placed on the profile in
// its cache, plus placements it decided that the cache does not show yet), not
// read from the agent's status.sessions, so a burst never overshoots
// maxSessions. The least-loaded profile wins; ties go to the first name. The
// profile skip (a lost one being left) is never chosen. Callers hold placeMu.
func (r *SessionReconciler) schedule(ctx context.Context, s *twv1.BrowserSession, skip string) (string, []*twv1.BrowserProfile, error) {
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.ProfileSelector)
	if err != nil {
		return "", nil, reconcile.TerminalError(fmt.Errorf("spec.profileSelector: %w", err))
	}
	var profiles twv1.BrowserProfileList
	if err := r.List(ctx, &profiles, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", nil, err
	}
	slices.SortFunc(profiles.Items, func(a, b twv1.BrowserProfile) int { return strings.Compare(a.Name, b.Name) })
	r.pruneReservations(ctx)
	self := client.ObjectKeyFromObject(s)
	best, bestLoad := "", int32(-1)
	var notAdmitting []*twv1.BrowserProfile
	for i := range profiles.Items {
		p := &profiles.Items[i]
		if p.Name == skip || !apimeta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition) {
			continue
		}
		load, err := r.load(ctx, p.Name, self)
		if err != nil {
			return "", nil, err
		}
		if p.Spec.MaxSessions > 0 && load >= p.Spec.MaxSessions {
			continue
		}
		if ok, _ := r.admits(ctx, p, s.Namespace); !ok {
			notAdmitting = append(notAdmitting, p)
			continue
		}
		if best == "" || load < bestLoad {
			best, bestLoad = p.Name, load
		}
	}
	slices.SortFunc(notAdmitting, func(a, b *twv1.BrowserProfile) int { return strings.Compare(a.Name, b.Name) })
	return best, notAdmitting, nil
}

// NotAllowedMessage teaches why a session pinned to profile p is refused and the
// two ways out: the admin admits the namespace, or the session pins another profile.
func NotAllowedMessage(s *twv1.BrowserSession, p *twv1.BrowserProfile, admitting []string, admitErr error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "BrowserProfile %q does not admit namespace %q: it is neither in the profile's spec.namespaces (%s) nor matched by its spec.namespaceSelector (%s). Session %q is not placed and none of its pages opens.",
		p.Name, s.Namespace, listOrNone(p.Spec.Namespaces), selectorString(p.Spec.NamespaceSelector), s.Name)
	if admitErr != nil {
		fmt.Fprintf(&b, " The selector is invalid: %v.", admitErr)
	}
	fmt.Fprintf(&b, " An admin of the profile admits the namespace with: %s ; or create the session again pinned to another profile (spec.profileName is immutable)", hint.Admit(p, s.Namespace))
	if len(admitting) > 0 {
		fmt.Fprintf(&b, ", one that admits %q: %s.", s.Namespace, strings.Join(admitting, ", "))
	} else {
		fmt.Fprintf(&b, "; no profile admits %q yet (kubectl get browserprofiles -o wide).", s.Namespace)
	}
	return b.String()
}

// NoLongerAllowedMessage says that a placed session's profile stopped admitting
// its namespace, that it is not evicted, and how to end it or admit it again.
func NoLongerAllowedMessage(s *twv1.BrowserSession, p *twv1.BrowserProfile, admitErr error) string {
	msg := fmt.Sprintf("BrowserProfile %q no longer admits namespace %q (spec.namespaces: %s; spec.namespaceSelector: %s). The session keeps its placement until it ends: a placed session is not evicted, so its pages stay owned and are cleaned up; new sessions in %q are refused. End it: kubectl delete browsersession %s -n %s. Or admit the namespace again: %s",
		p.Name, s.Namespace, listOrNone(p.Spec.Namespaces), selectorString(p.Spec.NamespaceSelector), s.Namespace, s.Name, s.Namespace, hint.Admit(p, s.Namespace))
	if admitErr != nil {
		msg += fmt.Sprintf(" (the selector is invalid: %v)", admitErr)
	}
	return msg
}

// MissingProfileMessage teaches what to do about a session pinned to a profile that does not exist.
func MissingProfileMessage(s *twv1.BrowserSession) string {
	p := s.Spec.ProfileName
	return fmt.Sprintf("BrowserProfile %q does not exist, so session %q is not placed and none of its pages opens; it is placed when the profile appears and admits namespace %q. "+
		"An admin creates it admitting the namespace: kubectl apply -f - <<<'{\"apiVersion\":\"tabwarden.dev/v1alpha1\",\"kind\":\"BrowserProfile\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"]}}' "+
		"and runs its agent: tabwarden agent --profile %s. Or create the session again pinned to an existing profile: kubectl get browserprofiles -o wide",
		p, s.Name, s.Namespace, p, s.Namespace, p)
}

// SelectorNotAllowedMessage teaches why no profile matching a session's selector was picked.
func SelectorNotAllowedMessage(s *twv1.BrowserSession, notAdmitting []*twv1.BrowserProfile) string {
	names := make([]string, 0, len(notAdmitting))
	for _, p := range notAdmitting {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("Connected BrowserProfiles with free capacity match spec.profileSelector (%s) but none admits namespace %q, so session %q is not placed and none of its pages opens. An admin admits it: %s",
		strings.Join(names, ", "), s.Namespace, s.Name, hint.Admit(notAdmitting[0], s.Namespace))
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func selectorString(sel *metav1.LabelSelector) string {
	if sel == nil {
		return "unset"
	}
	b, _ := json.Marshal(sel)
	return string(b)
}
