package extension_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestFillThroughExtension: a Fill BrowserAction in the user's own Chrome (the
// real extension), as a user with the shipped tabwarden-edit role: the form's
// fields are filled in one step, by ref and by label, replacing what a field
// held; a Fill with one field that is no text field is refused naming it, and
// types into none.
func TestFillThroughExtension(t *testing.T) {
	g, _ := begin(t, 100*time.Millisecond)
	agent := sessionOnPage(t, g, "fill", "verbs", "/verbs", fixture.TitleVerbs).agent
	observe := twv1.ActionStep{Type: twv1.StepObserve}

	o := agent.Do("verbs", observe).Status.Observation
	var name string
	for _, e := range o.Elements {
		if e.Name == "Name" {
			name = e.Ref
		}
	}
	g.Expect(name).NotTo(BeEmpty(), "observation %+v", o)
	act := agent.Do("verbs", twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
		{Target: &twv1.ActionTarget{Ref: name}, Text: "Ada Lovelace"},
		{Target: &twv1.ActionTarget{Text: "Email"}, Text: "ada@example.com"},
	}}, observe)
	g.Expect(act.Status.Observation.Title).To(Equal(fixture.TitleFilled + "Ada Lovelace|ada@example.com"))

	act = agent.Act("verbs", twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
		{Target: &twv1.ActionTarget{Ref: name}, Text: "Grace Hopper"},
		{Target: &twv1.ActionTarget{Text: "Account"}, Text: "x"},
	}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonTargetNotFound))
	g.Expect(act.Status.Message).To(And(ContainSubstring("field 1"), ContainSubstring("read-only"), ContainSubstring("no field was filled")))
	g.Expect(act.Status.Hint).NotTo(BeEmpty())
	g.Expect(agent.Do("verbs", observe).Status.Observation.Title).To(Equal(fixture.TitleFilled+"Ada Lovelace|ada@example.com"), "nothing was typed")
}
