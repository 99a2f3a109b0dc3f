package extension_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestDialogStepsThroughExtension: in the user's own Chrome (the real
// extension), a confirm() a Click makes the page open is left open and shown
// in the action's result; the next step is refused dialog_open with a hint (a
// Dialog step) that answers it; a Dialog step with none showing is refused
// no_dialog; a prompt is answered with the step's text in the same action as
// the click that opened it, or dismissed. Nothing answers on the agent's
// behalf, and the tab's debugger session is gone once the dialog is answered.
func TestDialogStepsThroughExtension(t *testing.T) {
	g, _ := begin(t, 100*time.Millisecond)
	p := sessionOnPage(t, g, "dialogs", "dialog", "/dialog", fixture.TitleDialog)
	agent := p.agent
	w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "dialog"}}
	title := func() string { return get(t, w).Status.Title }

	act := agent.Act("dialog", twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogAccept})
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonNoDialog), "status %+v", act.Status)
	g.Expect(act.Status.Hint).NotTo(BeEmpty())

	act = agent.Act("dialog", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Delete"}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	g.Expect(act.Status.Steps[0].Dialog).To(Equal(&twv1.OpenDialog{Type: "confirm", Message: "Delete everything?"}))
	g.Expect(act.Status.Steps[0].Message).To(ContainSubstring("Dialog step"))
	g.Consistently(title, time.Second).Should(Equal(fixture.TitleDialog), "nobody answered the confirm")
	page, err := devtools.pageByURL(context.Background(), p.url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(extensionAttached(g, page.TargetID)).To(BeTrue(), "the session that saw the dialog is kept for the answer")

	act = agent.Act("dialog", twv1.ActionStep{Type: twv1.StepObserve})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonDialogOpen))
	g.Expect(act.Status.Message).To(ContainSubstring(`confirm "Delete everything?"`))
	g.Expect(act.Status.Hint).To(ContainSubstring(`"type":"Dialog"`))
	g.Expect(agent.Follow(act.Status.Hint)).To(Succeed(), "the hint answers the dialog")
	g.Eventually(title).Should(Equal("Kept"), "the hint dismissed the confirm")

	// Click, answer and observe in one action: the prompt gets the step's text.
	act = agent.Do("dialog",
		twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Rename"}},
		twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogAccept, Text: "Ada"},
		twv1.ActionStep{Type: twv1.StepObserve})
	g.Expect(act.Status.Steps[0].Dialog).To(Equal(&twv1.OpenDialog{Type: "prompt", Message: "New name?", DefaultPrompt: "draft"}))
	g.Eventually(title).Should(Equal("Renamed Ada"))
	agent.Do("dialog",
		twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Rename"}},
		twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogDismiss})
	g.Eventually(title).Should(Equal("Not renamed"))
	g.Expect(agent.Do("dialog", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation.Title).To(Equal("Not renamed"))
	g.Eventually(func() bool { return extensionAttached(g, page.TargetID) }).Should(BeFalse(), "detached once answered")
}
