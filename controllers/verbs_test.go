package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
)

// TestVerbStepsAreValidated: the API server refuses a Hover without a target
// and a Select without a target or an option, each teaching the corrected
// step, and admits Back, Forward and Reload with no fields; a Fill needs
// fields, each a target and its text, and fields go on a Fill step only; an
// Upload needs a target and files, each a relative path that stays inside the
// profile's upload directory, an absolute path.
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
	// Upload: a target and files, each a path inside the upload directory;
	// files on no other step.
	attach := &twv1.ActionTarget{Text: "Attach"}
	for _, c := range []struct {
		step twv1.ActionStep
		says string
	}{
		{twv1.ActionStep{Type: twv1.StepUpload, Files: []string{"resume.pdf"}}, "an Upload step needs a target (the file input, or its label) and files"},
		{twv1.ActionStep{Type: twv1.StepUpload, Target: attach}, "an Upload step needs a target (the file input, or its label) and files"},
		{twv1.ActionStep{Type: twv1.StepClick, Target: attach, Files: []string{"resume.pdf"}}, "files belong to an Upload step only"},
		{twv1.ActionStep{Type: twv1.StepUpload, Target: attach, Files: []string{"/etc/passwd"}}, "a file is a path relative to the profile's upload directory"},
		{twv1.ActionStep{Type: twv1.StepUpload, Target: attach, Files: []string{"../secret"}}, "a file is a path relative to the profile's upload directory"},
		{twv1.ActionStep{Type: twv1.StepUpload, Target: attach, Files: []string{"a/../../b"}}, "a file is a path relative to the profile's upload directory"},
		{twv1.ActionStep{Type: twv1.StepUpload, Target: attach, Files: []string{"a//b"}}, "a file is a path relative to the profile's upload directory"},
		{twv1.ActionStep{Type: twv1.StepUpload, Target: attach, Files: []string{`..\secret`}}, "a file is a path relative to the profile's upload directory"},
		{twv1.ActionStep{Type: twv1.StepUpload, Target: attach, Files: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}}, "must have at most 10 items"},
	} {
		err := create(c.step)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: got %v", c.step, err)
		g.Expect(err.Error()).To(ContainSubstring(c.says))
	}
	g.Expect(create(twv1.ActionStep{Type: twv1.StepUpload, Target: attach, Files: []string{"resume.pdf", "2026/receipt.png"}})).To(Succeed())
	// A profile's upload directory is an absolute path.
	p := &twv1.BrowserProfile{}
	p.Name = "verbs-upload-dir"
	p.Spec.UploadDirectory = "uploads"
	err := k8s.Create(context.Background(), p)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("uploadDirectory is an absolute path on the agent's machine"))

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

// TestUpload: an Upload puts a file of the profile's upload directory into
// the page's file input; a file the directory does not hold is refused
// (upload_not_allowed) with the call that works; a target that is no file
// input, or two files for an input that takes one, is refused by the page;
// once the admin takes the directory away, every Upload is refused with the
// admin's patch as the hint.
func TestUpload(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	startController(t)
	w := newActionWorld(t, g, "act-upload", agent.Options{})
	sa := w.agent
	upload := func(target string, files ...string) twv1.ActionStep {
		return twv1.ActionStep{Type: twv1.StepUpload, Target: &twv1.ActionTarget{Text: target}, Files: files}
	}
	tab := get(t, w.contacts).Status.TabID

	done := sa.Do("contacts", upload("Attachment", "resume.txt"))
	g.Expect(done.Status.Steps[0].Message).To(Equal(`the file input holds "resume.txt" (13 bytes)`))
	g.Expect(w.b.Uploaded(tab, "Attachment")).To(Equal([]string{"resume.txt"}))

	missing := sa.Act("contacts", upload("Attachment", "passport.pdf"))
	g.Expect(missing.Status.Phase).To(Equal(twv1.ActionRefused))
	g.Expect(missing.Status.Reason).To(Equal(twv1.ReasonUploadNotAllowed))
	g.Expect(missing.Status.Message).To(ContainSubstring(`the upload directory offers "resume.txt"`))
	g.Expect(sa.Follow(missing.Status.Hint)).To(Succeed(), "the hint is the call that works")

	notInput := sa.Act("contacts", upload("Search", "resume.txt"))
	g.Expect(notInput.Status.Reason).To(Equal(twv1.ReasonTargetNotFound))
	g.Expect(notInput.Status.Message).To(ContainSubstring("is not a file input"))
	two := sa.Act("contacts", upload("Attachment", "resume.txt", "resume.txt"))
	g.Expect(two.Status.Reason).To(Equal(twv1.ReasonTargetNotFound))
	g.Expect(two.Status.Message).To(ContainSubstring("takes one file"))

	// The admin takes the directory away.
	g.Expect(k8s.Patch(context.Background(), &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: w.profile}},
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"uploadDirectory":null}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		a := sa.Act("contacts", upload("Attachment", "resume.txt"))
		g.Expect(a.Status.Reason).To(Equal(twv1.ReasonUploadNotAllowed))
		g.Expect(a.Status.Message).To(ContainSubstring(`profile "act-upload" allows no uploads`))
		g.Expect(a.Status.Hint).To(HavePrefix(`kubectl patch browserprofile act-upload --type=merge -p '{"spec":{"uploadDirectory":`))
	}).Should(Succeed())
}
