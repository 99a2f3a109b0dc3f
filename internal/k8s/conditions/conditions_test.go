package conditions

import (
	"strings"
	"testing"
	"unicode/utf8"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a long message here", 10, "a long ..."},
		{"ééééé", 6, "é..."}, // 2-byte runes: never cut one in half
		{"abc", 2, ""},
	} {
		got := Truncate(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q (at most %d bytes, valid UTF-8)", tc.in, tc.n, got, tc.want, tc.n)
		}
	}
	long := strings.Repeat("日本", 20000)
	if got := Truncate(long, MaxMessage); len(got) > MaxMessage || !utf8.ValidString(got) {
		t.Errorf("a long message is cut to %d bytes, valid=%v", len(got), utf8.ValidString(got))
	}
}

// TestAction: a BrowserAction's conditions follow its phase as kstatus reads them.
func TestAction(t *testing.T) {
	for _, tc := range []struct {
		phase                      twv1.ActionPhase
		reason                     string
		ready                      metav1.ConditionStatus
		readyReason                string
		reconciling, stalled       bool
		stalledReason, msgContains string
	}{
		{"", "", metav1.ConditionFalse, "Pending", true, false, "", ""},
		{twv1.ActionRunning, "", metav1.ConditionFalse, "Running", true, false, "", ""},
		{twv1.ActionSucceeded, "", metav1.ConditionTrue, "Succeeded", false, false, "", ""},
		{twv1.ActionRefused, twv1.ReasonUnacknowledgedSpawns, metav1.ConditionFalse, twv1.ReasonUnacknowledgedSpawns, false, true, twv1.ReasonUnacknowledgedSpawns, "Corrected call: kubectl patch"},
		{twv1.ActionFailed, twv1.ReasonPageGone, metav1.ConditionFalse, twv1.ReasonPageGone, false, true, twv1.ReasonPageGone, ""},
	} {
		a := &twv1.BrowserAction{}
		a.Generation = 3
		// Conditions of an earlier phase are replaced, not kept.
		Kstatus(a, "Running", "old", "earlier")
		a.Status.Phase, a.Status.Reason, a.Status.Message = tc.phase, tc.reason, "what happened"
		if tc.reason != "" {
			a.Status.Hint = "kubectl patch browserwindow x"
		}
		Action(a)
		ready := apimeta.FindStatusCondition(a.Status.Conditions, twv1.ReadyCondition)
		if ready == nil || ready.Status != tc.ready || ready.Reason != tc.readyReason || ready.ObservedGeneration != 3 {
			t.Errorf("%q: Ready = %+v, want %s %s", tc.phase, ready, tc.ready, tc.readyReason)
		}
		if got := apimeta.IsStatusConditionTrue(a.Status.Conditions, twv1.ReconcilingCondition); got != tc.reconciling {
			t.Errorf("%q: Reconciling %v, want %v", tc.phase, got, tc.reconciling)
		}
		stalled := apimeta.FindStatusCondition(a.Status.Conditions, twv1.StalledCondition)
		if (stalled != nil) != tc.stalled || (stalled != nil && (stalled.Reason != tc.stalledReason || !strings.Contains(stalled.Message, tc.msgContains))) {
			t.Errorf("%q: Stalled = %+v, want %v %s", tc.phase, stalled, tc.stalled, tc.stalledReason)
		}
		if a.Status.ObservedGeneration != 3 {
			t.Errorf("%q: observedGeneration %d", tc.phase, a.Status.ObservedGeneration)
		}
	}
}
