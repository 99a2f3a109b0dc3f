package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestVerbStepsAreValidated: the API server refuses a Hover without a target
// and a Select without a target or an option, each teaching the corrected
// step, and admits Back, Forward and Reload with no fields; a Fill needs
// fields, each a target and its text, and fields go on a Fill step only.
func TestVerbStepsAreValidated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	create := func(steps ...twv1.ActionStep) error {
		act := &twv1.BrowserAction{}
		act.Namespace, act.GenerateName = ns, "verbs-"
		act.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "s"}, Thread: "t",
			WindowRef: twv1.ActionWindowReference{Name: "w"}, Steps: steps}
		return k8s.Create(context.Background(), act)
	}
	menu := &twv1.ActionTarget{Text: "Menu"}
	for _, c := range []struct {
		step twv1.ActionStep
		says string
	}{
		{twv1.ActionStep{Type: twv1.StepHover}, "a Hover step needs a target"},
		{twv1.ActionStep{Type: twv1.StepSelect, Text: "Canada"}, "a Select step needs a target (the drop-down) and text"},
		{twv1.ActionStep{Type: twv1.StepSelect, Target: menu}, "a Select step needs a target (the drop-down) and text"},
	} {
		err := create(c.step)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: got %v", c.step, err)
		g.Expect(err.Error()).To(ContainSubstring(c.says))
	}
	// Fill: fields, each a target and text, and fields on no other step.
	for _, c := range []struct {
		step twv1.ActionStep
		says string
	}{
		{twv1.ActionStep{Type: twv1.StepFill}, "a Fill step needs fields"},
		{twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{}}, "a Fill step needs fields"},
		{twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{{Target: &twv1.ActionTarget{Text: "Name"}}}}, "fields[0].text"},
		{twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{{Text: "Ada"}}}, "each field of a Fill names its target"},
		{twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{{Target: &twv1.ActionTarget{Text: "Name", Ref: "o3.e4"}, Text: "Ada"}}}, "a target is exactly one of ref"},
		{twv1.ActionStep{Type: twv1.StepTypeText, Text: "Ada", Fields: []twv1.FillField{{Target: &twv1.ActionTarget{Text: "Name"}, Text: "Ada"}}}, "fields belong to a Fill step only"},
	} {
		err := create(c.step)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: got %v", c.step, err)
		g.Expect(err.Error()).To(ContainSubstring(c.says))
	}
	g.Expect(create(
		twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
			{Target: &twv1.ActionTarget{Text: "Name"}, Text: "Ada"},
			{Target: &twv1.ActionTarget{Ref: "o3.e4"}, Text: "ada@example.com"},
		}},
	)).To(Succeed())
	g.Expect(create(
		twv1.ActionStep{Type: twv1.StepBack}, twv1.ActionStep{Type: twv1.StepForward}, twv1.ActionStep{Type: twv1.StepReload},
		twv1.ActionStep{Type: twv1.StepHover, Target: menu}, twv1.ActionStep{Type: twv1.StepSelect, Target: menu, Text: "Canada"},
	)).To(Succeed())
}

// TestOutlineOffsetIsValidated: the API server takes outlineOffset on an
// Observe step only, never negative, and admits an Observe that pages on.
func TestOutlineOffsetIsValidated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	create := func(steps ...twv1.ActionStep) error {
		act := &twv1.BrowserAction{}
		act.Namespace, act.GenerateName = ns, "outline-"
		act.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "s"}, Thread: "t",
			WindowRef: twv1.ActionWindowReference{Name: "w"}, Steps: steps}
		return k8s.Create(context.Background(), act)
	}
	off := func(n int32) *int32 { return &n }
	for _, c := range []struct {
		step twv1.ActionStep
		says string
	}{
		{twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Send"}, OutlineOffset: off(10)}, "only an Observe step takes it"},
		{twv1.ActionStep{Type: twv1.StepObserve, OutlineOffset: off(-1)}, "outlineOffset"},
	} {
		err := create(c.step)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: got %v", c.step, err)
		g.Expect(err.Error()).To(ContainSubstring(c.says))
	}
	g.Expect(create(twv1.ActionStep{Type: twv1.StepObserve, OutlineOffset: off(400)}, twv1.ActionStep{Type: twv1.StepObserve})).To(Succeed())
}

// TestDialogStepIsValidated: the API server refuses a Dialog step without an
// answer, or with one it does not know, answer on any other step, and text
// with Dismiss (text answers a prompt, so it goes with Accept), each teaching
// the corrected step; it admits Accept (with or without text) and Dismiss.
func TestDialogStepIsValidated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	create := func(steps ...twv1.ActionStep) error {
		act := &twv1.BrowserAction{}
		act.Namespace, act.GenerateName = ns, "dialog-"
		act.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "s"}, Thread: "t",
			WindowRef: twv1.ActionWindowReference{Name: "w"}, Steps: steps}
		return k8s.Create(context.Background(), act)
	}
	for _, c := range []struct {
		step twv1.ActionStep
		says string
	}{
		{twv1.ActionStep{Type: twv1.StepDialog}, "a Dialog step needs answer, Accept or Dismiss"},
		{twv1.ActionStep{Type: twv1.StepDialog, Text: "Ada"}, "a Dialog step needs answer"},
		{twv1.ActionStep{Type: twv1.StepDialog, Answer: "OK"}, `Unsupported value: "OK"`},
		{twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogDismiss, Text: "Ada"}, "goes with answer Accept only"},
		{twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Delete"}, Answer: twv1.DialogAccept}, "answer belongs to a Dialog step only"},
		{twv1.ActionStep{Type: twv1.StepObserve, Answer: twv1.DialogDismiss}, "answer belongs to a Dialog step only"},
	} {
		err := create(c.step)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: got %v", c.step, err)
		g.Expect(err.Error()).To(ContainSubstring(c.says))
	}
	g.Expect(create(
		twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogAccept},
		twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogAccept, Text: "Ada"},
		twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogDismiss},
	)).To(Succeed())
}
