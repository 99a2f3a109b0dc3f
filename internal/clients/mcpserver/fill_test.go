package mcpserver

import (
	"reflect"
	"testing"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestFillSteps: consecutive Fill steps of act are one Fill step of the
// BrowserAction (its fields checked before any is typed into), and a Fill
// step reads back as one act step per field.
func TestFillSteps(t *testing.T) {
	in := []Step{
		{Type: "Observe"},
		{Type: "fill", Ref: "o1.e4", Text: "Ada"},
		{Type: "Fill", TargetText: "Email", Text: "ada@example.com"},
		{Type: "Click", TargetText: "Send"},
		{Type: "Fill", TargetText: "Notes", Text: "hi"},
	}
	got, err := apiSteps(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []twv1.ActionStep{
		{Type: twv1.StepObserve},
		{Type: twv1.StepFill, Fields: []twv1.FillField{{Target: &twv1.ActionTarget{Ref: "o1.e4"}, Text: "Ada"}, {Target: &twv1.ActionTarget{Text: "Email"}, Text: "ada@example.com"}}},
		{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Send"}},
		{Type: twv1.StepFill, Fields: []twv1.FillField{{Target: &twv1.ActionTarget{Text: "Notes"}, Text: "hi"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("apiSteps:\n got %+v\nwant %+v", got, want)
	}
	var back []Step
	for _, st := range got {
		back = append(back, stepsOf(st)...)
	}
	in[1].Type = "Fill"
	if !reflect.DeepEqual(back, in) {
		t.Errorf("stepsOf:\n got %+v\nwant %+v", back, in)
	}
}
