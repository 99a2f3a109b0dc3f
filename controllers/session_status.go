package controllers

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/k8s/conditions"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
)

type conditioned = conditions.Object

// setCondition sets a condition with the object's generation as observedGeneration.
func setCondition(o conditioned, typ string, status metav1.ConditionStatus, reason, msg string) {
	conditions.Set(o, typ, status, reason, msg)
}

func truncate(s string, n int) string { return conditions.Truncate(s, n) }

// countWindows counts a session's windows by source and state.
func countWindows(windows []twv1.BrowserWindow) twv1.WindowCounts {
	var c twv1.WindowCounts
	for i := range windows {
		w := &windows[i]
		switch w.Spec.Source {
		case twv1.SourceOpen:
			c.Opened++
		case twv1.SourceSpawned:
			c.Spawned++
		case twv1.SourceBind:
			c.Bound++
		}
		if w.Live() {
			c.Live++
		}
	}
	c.Unacknowledged = int32(len(unacknowledged(windows)))
	return c
}

// unacknowledged returns the spawned windows whose page may still be open and
// that have no disposition yet, by name.
func unacknowledged(windows []twv1.BrowserWindow) []*twv1.BrowserWindow {
	var out []*twv1.BrowserWindow
	for i := range windows {
		w := &windows[i]
		if w.Unacknowledged() {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// UnacknowledgedMessage says which spawned windows are unacknowledged and gives
// the exact command that acknowledges each.
func UnacknowledgedMessage(namespace string, unacked []*twv1.BrowserWindow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d spawned window(s) have no disposition; new Open windows are held and actions refused until each says keep or close.", len(unacked))
	for _, w := range unacked {
		url := w.Status.URL
		if url == "" && w.Spec.Spawn != nil {
			url = w.Spec.Spawn.URL
		}
		fmt.Fprintf(&b, " %s (%s): %s", w.Name, orDash(url), hint.Ack(namespace, w.Name, twv1.DispositionClose))
		fmt.Fprintf(&b, " or keep it with disposition Keep.")
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "url not reported yet"
	}
	return s
}

// dirtyWindows are the owned, non-Keep pages an ended session still has open.
func dirtyWindows(windows []twv1.BrowserWindow) []*twv1.BrowserWindow {
	var out []*twv1.BrowserWindow
	for i := range windows {
		w := &windows[i]
		if w.Owned() && w.Spec.Disposition != twv1.DispositionKeep && w.Live() {
			out = append(out, w)
		}
	}
	return out
}

// DirtyMessage reprimands an ended session that still owns open pages and says
// how to let them go by hand when the agent that would close them is gone.
func DirtyMessage(s *twv1.BrowserSession, dirty []*twv1.BrowserWindow) string {
	names := make([]string, 0, len(dirty))
	for _, w := range dirty {
		names = append(names, w.Name)
	}
	sort.Strings(names)
	return fmt.Sprintf("The session ended but still owns %d open page(s): %s. The agent of profile %q closes them; if that agent is gone for good, release them without closing: %s",
		len(dirty), strings.Join(names, ", "), s.Status.ProfileName, hint.ReleaseFinalizer(s.Namespace, names[0]))
}

// lastActivity is the newest window creation or state change of the session.
func lastActivity(s *twv1.BrowserSession, windows []twv1.BrowserWindow) *metav1.Time {
	last := s.Status.LastActivityTime
	newer := func(t metav1.Time) {
		if !t.IsZero() && (last == nil || t.After(last.Time)) {
			tt := t
			last = &tt
		}
	}
	for i := range windows {
		w := &windows[i]
		newer(w.CreationTimestamp)
		if w.Status.OpenedTime != nil {
			newer(*w.Status.OpenedTime)
		}
		if w.Status.ClosedTime != nil {
			newer(*w.Status.ClosedTime)
		}
	}
	return last
}

// summarizeSession sets Ready from the other conditions and the reconcile
// error, and the kstatus conditions: Ready=True when the session is doing what
// its spec asks (active with every spawn acknowledged) or is done (finished and
// cleaned up); Reconciling=True while it cleans up; Stalled=True while it cannot
// be placed without someone changing something (its profile does not admit its
// namespace, or it is not registered).
func summarizeSession(s *twv1.BrowserSession, _ []twv1.BrowserWindow, err error) {
	reconciling, stalled := "", ""
	var msg string
	switch {
	case err != nil:
		setCondition(s, twv1.ReadyCondition, metav1.ConditionFalse, "ReconcileError", err.Error())
	case s.Ended():
		if s.Status.Phase == twv1.SessionPhaseFinished && s.IdledOut() {
			setCondition(s, twv1.ReadyCondition, metav1.ConditionTrue, twv1.ReasonIdleTimeout, "The session saw no activity for spec.idleTimeout and finished; every page it owned is closed, released or detached")
		} else if s.Status.Phase == twv1.SessionPhaseFinished && s.Status.EndReason == twv1.ReasonUserWaitTimeout {
			setCondition(s, twv1.ReadyCondition, metav1.ConditionTrue, twv1.ReasonUserWaitTimeout, "The session waited for its user longer than spec.userWaitTimeout and finished; every page it owned is closed, released or detached")
		} else if s.Status.Phase == twv1.SessionPhaseFinished && s.Abandoned() {
			setCondition(s, twv1.ReadyCondition, metav1.ConditionTrue, twv1.ReasonAbandoned, "The session's holder stopped renewing for spec.abandonAfter and it ended; every page it owned is closed, released or detached")
		} else if s.Status.Phase == twv1.SessionPhaseFinished {
			setCondition(s, twv1.ReadyCondition, metav1.ConditionTrue, twv1.ReasonFinished, "The session finished; every page it owned is closed, released or detached")
		} else {
			msg = "The session is closing its pages"
			if c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.CleanCondition); c != nil && c.Status == metav1.ConditionFalse {
				msg = c.Message
			}
			setCondition(s, twv1.ReadyCondition, metav1.ConditionFalse, twv1.ReasonCleaningUp, msg)
			reconciling = twv1.ReasonCleaningUp
		}
	default:
		var blocking *metav1.Condition
		for _, t := range []string{twv1.RegisteredCondition, twv1.ProfileReachableCondition, twv1.SpawnsAcknowledgedCondition} {
			if c := apimeta.FindStatusCondition(s.Status.Conditions, t); c != nil && c.Status != metav1.ConditionTrue {
				blocking = c
				break
			}
		}
		switch blocking {
		case nil:
			setCondition(s, twv1.ReadyCondition, metav1.ConditionTrue, twv1.ReasonActive, "The session is registered and every spawned window is acknowledged")
		default:
			setCondition(s, twv1.ReadyCondition, metav1.ConditionFalse, blocking.Reason, blocking.Message)
			if blocking.Type == twv1.RegisteredCondition && (blocking.Reason == twv1.ReasonProfileNotAllowed || blocking.Reason == twv1.ReasonSessionUnregistered) {
				stalled, msg = blocking.Reason, blocking.Message
			}
		}
	}
	conditions.Kstatus(s, reconciling, stalled, msg)
}

// deletingStatusEvery is how often, at most, a deleted session's status is
// rewritten while its windows go, when the write would only update its counts
// and messages (the Clean message's list of the pages still open).
const deletingStatusEvery = time.Second

// deletingStatusWait reports how long this pass's status write of a deleted
// session waits; 0: write now. While a session's windows go, each going
// changes its counts and its Clean message, and each pass wrote them: at 10
// and 50 pages those writes ran alongside the windows' own finalizer patches
// on the API server, and the pass that removes the session's finalizer queued
// behind the last of them (docs/design.md, "The session goes with its last
// page"). A write that changes only the window counts and condition messages
// goes at most once per deletingStatusEvery, and the caller's pass comes back
// when it is due, so a stalled cleanup's status still catches up; any other
// change (the phase, a condition's status or reason, a deliverable, the
// object itself) goes at once.
func (r *SessionReconciler) deletingStatusWait(helper *patch.Helper, s *twv1.BrowserSession) time.Duration {
	if s.DeletionTimestamp.IsZero() {
		return 0
	}
	before, ok := helper.Before().(*twv1.BrowserSession)
	if !ok {
		return 0
	}
	object, changed := helper.Changes(s)
	if object || !changed || !onlyCountsAndMessages(&before.Status, &s.Status) {
		return 0
	}
	last, ok := r.deletingWrites.Load(client.ObjectKeyFromObject(s))
	if !ok {
		return 0
	}
	return deletingStatusEvery - time.Since(last.(time.Time))
}

// onlyCountsAndMessages reports whether a and b differ at most in their
// window counts and their conditions' messages.
func onlyCountsAndMessages(a, b *twv1.BrowserSessionStatus) bool {
	if !sameConditionStates(a.Conditions, b.Conditions) {
		return false
	}
	norm := func(st *twv1.BrowserSessionStatus) *twv1.BrowserSessionStatus {
		c := st.DeepCopy()
		c.Windows = twv1.WindowCounts{}
		for i := range c.Conditions {
			c.Conditions[i].Message = ""
		}
		slices.SortFunc(c.Conditions, func(x, y metav1.Condition) int { return strings.Compare(x.Type, y.Type) })
		return c
	}
	return equality.Semantic.DeepEqual(norm(a), norm(b))
}

// sameConditionStates reports whether a and b hold the same condition types,
// each with the same status and reason (messages aside).
func sameConditionStates(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		d := apimeta.FindStatusCondition(b, c.Type)
		if d == nil || d.Status != c.Status || d.Reason != c.Reason {
			return false
		}
	}
	return true
}
