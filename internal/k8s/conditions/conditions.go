// Package conditions sets the metav1.Conditions of tabwarden's objects, written
// once for both roles: observedGeneration is always the object's generation, and
// messages are cut to fit the API's limits without breaking a character.
package conditions

import (
	"unicode/utf8"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Object is an object with conditions (every tabwarden kind that has any).
type Object interface {
	GetGeneration() int64
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// MaxMessage is metav1.Condition's message limit.
const MaxMessage = 32768

// Set sets condition typ on o, with o's generation as observedGeneration.
func Set(o Object, typ string, status metav1.ConditionStatus, reason, msg string) {
	conds := o.GetConditions()
	apimeta.SetStatusCondition(&conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: Truncate(msg, MaxMessage), ObservedGeneration: o.GetGeneration(),
	})
	o.SetConditions(conds)
}

// Truncate cuts s to at most n bytes (so at most n characters), on a character
// boundary, ending in "..." when it cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return s[:0]
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Kstatus sets Reconciling=True (reason reconciling) and Stalled=True (reason
// stalled) with msg, removing each whose reason is empty: the conditions kstatus
// (kubectl wait, Flux, Argo CD) reads as InProgress and Failed.
func Kstatus(o Object, reconciling, stalled, msg string) {
	for _, c := range []struct{ typ, reason string }{{twv1.ReconcilingCondition, reconciling}, {twv1.StalledCondition, stalled}} {
		if c.reason != "" {
			Set(o, c.typ, metav1.ConditionTrue, c.reason, msg)
			continue
		}
		conds := o.GetConditions()
		if apimeta.RemoveStatusCondition(&conds, c.typ) {
			o.SetConditions(conds)
		}
	}
}

// Action sets a BrowserAction's conditions and observedGeneration from its
// phase: Ready=True once Succeeded; Reconciling while Pending or Running;
// Ready=False and Stalled with the refusal's or failure's reason once Refused or
// Failed (it will not run again: create another action).
func Action(a *twv1.BrowserAction) {
	a.Status.ObservedGeneration = a.Generation
	st := a.Status
	switch st.Phase {
	case twv1.ActionSucceeded:
		Set(a, twv1.ReadyCondition, metav1.ConditionTrue, string(st.Phase), st.Message)
		Kstatus(a, "", "", "")
	case twv1.ActionRefused, twv1.ActionFailed:
		reason := st.Reason
		if reason == "" {
			reason = string(st.Phase)
		}
		msg := st.Message
		if st.Hint != "" {
			msg += " Corrected call: " + st.Hint
		}
		Set(a, twv1.ReadyCondition, metav1.ConditionFalse, reason, msg)
		Kstatus(a, "", reason, msg)
	default:
		phase := string(st.Phase)
		if phase == "" {
			phase = string(twv1.ActionPending)
		}
		msg := "Waiting for the agent of the session's profile to run the action"
		if st.Phase == twv1.ActionRunning {
			msg = "The agent is running the action's steps"
		}
		Set(a, twv1.ReadyCondition, metav1.ConditionFalse, phase, msg)
		Kstatus(a, phase, "", msg)
	}
}
