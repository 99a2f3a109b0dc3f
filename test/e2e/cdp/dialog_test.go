package cdp_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestDialogStepsOnChromium: a confirm() a Click makes a real page open is left
// open and shown in the action's result (type, message); the next step is
// refused dialog_open with a hint (a Dialog step) that answers it; a Dialog
// step with no dialog showing is refused no_dialog; a prompt is answered with
// the step's text, in the same action as the click that opened it, or
// dismissed. Nothing answers a dialog on the agent's behalf.
func TestDialogStepsOnChromium(t *testing.T) {
	g, _, h := begin(t, 30*time.Second)
	p := sessionOnPage(t, g, h, "dialogs", "dialog", "/dialog", fixture.TitleDialog)
	tab, agent := p.tab, p.agent
	title := func() string { return pages(t, h)[tab].Title }

	act := agent.Act("dialog", twv1.ActionStep{Type: twv1.StepDialog, Answer: twv1.DialogAccept})
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonNoDialog), "status %+v", act.Status)
	g.Expect(act.Status.Hint).NotTo(BeEmpty())

	act = agent.Act("dialog", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Delete"}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	g.Expect(act.Status.Steps[0].Dialog).To(Equal(&twv1.OpenDialog{Type: "confirm", Message: "Delete everything?"}))
	g.Expect(act.Status.Steps[0].Message).To(ContainSubstring("Dialog step"))
	g.Consistently(title, 500*time.Millisecond).Should(Equal(fixture.TitleDialog), "nobody answered the confirm")

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
}
