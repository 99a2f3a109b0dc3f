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

// TestUploadSteps: consecutive Upload steps of act with the same target are
// one Upload of their files (an input that takes several gets them at once);
// another target starts another Upload; an Upload reads back as one act step
// per file.
func TestUploadSteps(t *testing.T) {
	in := []Step{
		{Type: "upload", TargetText: "Attach photos", File: "a.png"},
		{Type: "Upload", TargetText: "Attach photos", File: "2026/b.png"},
		{Type: "Upload", Ref: "o2.e7", File: "resume.pdf"},
		{Type: "Observe"},
		{Type: "Upload", Ref: "o2.e7", File: "cover.pdf"},
	}
	got, err := apiSteps(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []twv1.ActionStep{
		{Type: twv1.StepUpload, Target: &twv1.ActionTarget{Text: "Attach photos"}, Files: []string{"a.png", "2026/b.png"}},
		{Type: twv1.StepUpload, Target: &twv1.ActionTarget{Ref: "o2.e7"}, Files: []string{"resume.pdf"}},
		{Type: twv1.StepObserve},
		{Type: twv1.StepUpload, Target: &twv1.ActionTarget{Ref: "o2.e7"}, Files: []string{"cover.pdf"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("apiSteps:\n got %+v\nwant %+v", got, want)
	}
	var back []Step
	for _, st := range got {
		back = append(back, stepsOf(st)...)
	}
	in[0].Type = "Upload"
	if !reflect.DeepEqual(back, in) {
		t.Errorf("stepsOf:\n got %+v\nwant %+v", back, in)
	}
}
