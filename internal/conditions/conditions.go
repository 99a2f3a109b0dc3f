// Package conditions sets the metav1.Conditions of tabwarden's objects, written
// once for both roles: observedGeneration is always the object's generation, and
// messages are cut to fit the API's limits without breaking a character.
package conditions

import (
	"unicode/utf8"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
