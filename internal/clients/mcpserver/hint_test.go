package mcpserver

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// TestHintsBecomeToolCalls: a guard's hint that creates a BrowserAction reaches
// the model as the act (or observe) call that does the same.
func TestHintsBecomeToolCalls(t *testing.T) {
	a := &twv1.BrowserAction{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "taxes-x1"},
		Spec: twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "taxes"}, Thread: "thread-42",
			WindowRef: twv1.ActionWindowReference{Name: "contacts"}},
	}
	h := &handlers{ops: &ops.Ops{Namespace: "team-a"}}
	cases := []struct {
		hint, want string
	}{
		{hint.Action(a, twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: "o3.e12"}}),
			`act {"session":"taxes","window":"contacts","thread":"thread-42","steps":[{"type":"Click","ref":"o3.e12"}]}`},
		{hint.Observe(a), `observe {"session":"taxes","window":"contacts","thread":"thread-42"}`},
		{hint.Action(a, twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Text: "Name's"}, Text: "Ada"}),
			`act {"session":"taxes","window":"contacts","thread":"thread-42","steps":[{"type":"Type","target_text":"Name's","text":"Ada"}]}`},
	}
	for _, c := range cases {
		err := h.teach(&ops.Error{Kind: ops.Refused, Reason: twv1.ReasonStaleRef, Message: "m", Hint: c.hint}, "taxes")
		e, _ := ops.AsError(err)
		if want := c.want + "\n  (from a shell: " + c.hint + ")"; e.Hint != want {
			t.Errorf("hint %s\nbecame %s\nwant   %s", c.hint, e.Hint, want)
		}
	}
	// A hint that creates a session becomes start_session.
	s := &twv1.BrowserSession{Spec: twv1.BrowserSessionSpec{Thread: "thread-7", Purpose: "say what this session is for", ProfileName: "local"}}
	s.APIVersion, s.Kind = twv1.GroupVersion.String(), "BrowserSession"
	s.GenerateName, s.Namespace = "session-", "team-a"
	created := hint.Create(s)
	err := h.teach(&ops.Error{Kind: ops.Refused, Reason: twv1.ReasonSessionOwnedByAnotherThread, Message: "m", Hint: created}, "taxes")
	if e, _ := ops.AsError(err); e.Hint != `start_session {"thread":"thread-7","purpose":"say what this session is for","profile":"local"}`+"\n  (from a shell: "+created+")" {
		t.Errorf("hint %s became %s", created, e.Hint)
	}
	// A hint that is not an action stays as it is.
	kept := hint.Resume("team-a", "taxes")
	err = h.teach(&ops.Error{Kind: ops.Refused, Reason: twv1.ReasonWaitingForUser, Message: "m", Hint: kept}, "taxes")
	if e, _ := ops.AsError(err); e.Hint != kept {
		t.Errorf("hint %s became %s", kept, e.Hint)
	}
}
