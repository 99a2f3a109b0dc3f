package agent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestSlimSessionKeepsWhatTheAgentReads: the agent's cached session keeps its
// placement, phase, end reason and whether it is admitted; the other
// conditions and the messages, which the agent never reads, are gone.
func TestSlimSessionKeepsWhatTheAgentReads(t *testing.T) {
	for _, admitted := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse} {
		s := &twv1.BrowserSession{}
		s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		s.Spec.Thread, s.Spec.ProfileName = "t", "p"
		s.Status.ProfileName, s.Status.Phase, s.Status.EndReason = "p", twv1.SessionPhase("Finishing"), twv1.ReasonIdleTimeout
		s.Status.Conditions = []metav1.Condition{
			{Type: "Registered", Status: metav1.ConditionTrue, Reason: "Registered", Message: "Thread t drives profile p"},
			{Type: twv1.AdmittedCondition, Status: admitted, Reason: "Admitted", Message: "BrowserProfile p admits namespace n"},
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "CleaningUp", Message: "The session ended but still owns 5 open page(s)"},
		}
		wantRevoked, wantEnded := revoked(s), s.Ended()
		o, err := SlimSession(s)
		if err != nil {
			t.Fatal(err)
		}
		slim := o.(*twv1.BrowserSession)
		if revoked(slim) != wantRevoked || slim.Ended() != wantEnded || !slim.IdledOut() {
			t.Errorf("Admitted=%s: revoked %v, ended %v, idled out %v after the transform; want %v, %v, true", admitted, revoked(slim), slim.Ended(), slim.IdledOut(), wantRevoked, wantEnded)
		}
		if slim.Status.ProfileName != "p" || slim.Status.Phase != "Finishing" || slim.Spec.Thread != "t" {
			t.Errorf("placement, phase or spec lost: %+v %+v", slim.Spec, slim.Status)
		}
		if len(slim.Status.Conditions) != 1 || slim.Status.Conditions[0].Message != "" || slim.ManagedFields != nil {
			t.Errorf("kept more than the Admitted condition's status: %+v, managedFields %v", slim.Status.Conditions, slim.ManagedFields)
		}
	}
}
