package cdp_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestFillOnChromium: a Fill BrowserAction, created by a user with the shipped
// tabwarden-edit role, fills a real form's fields in one step through the
// agent's CDP driver (by ref and by label, replacing what a field held); a
// Fill with one field that is no text field is refused naming it, and types
// into none; a ref from before a reload is stale, as for any target.
func TestFillOnChromium(t *testing.T) {
	g, _, h := begin(t, 30*time.Second)
	p := sessionOnPage(t, g, h, "fill", "verbs", "/verbs", fixture.TitleVerbs)
	agent := p.agent
	observe := twv1.ActionStep{Type: twv1.StepObserve}

	o := agent.Do("verbs", observe).Status.Observation
	name := elementNamed(o, "Name")
	g.Expect(name).NotTo(BeNil(), "observation %+v", o)
	act := agent.Do("verbs", twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
		{Target: &twv1.ActionTarget{Ref: name.Ref}, Text: "Ada Lovelace"},
		{Target: &twv1.ActionTarget{Text: "Email"}, Text: "ada@example.com"},
	}}, observe)
	g.Expect(act.Status.Observation.Title).To(Equal(fixture.TitleFilled + "Ada Lovelace|ada@example.com"))

	act = agent.Act("verbs", twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
		{Target: &twv1.ActionTarget{Ref: name.Ref}, Text: "Grace Hopper"},
		{Target: &twv1.ActionTarget{Text: "Menu"}, Text: "x"},
	}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonTargetNotFound))
	g.Expect(act.Status.Message).To(And(ContainSubstring("field 1"), ContainSubstring("not a text field"), ContainSubstring("no field was filled")))
	g.Expect(act.Status.Hint).NotTo(BeEmpty())
	g.Expect(agent.Do("verbs", observe).Status.Observation.Title).To(Equal(fixture.TitleFilled+"Ada Lovelace|ada@example.com"), "nothing was typed")

	act = agent.Act("verbs", twv1.ActionStep{Type: twv1.StepReload}, twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
		{Target: &twv1.ActionTarget{Text: "Email"}, Text: "grace@example.com"},
		{Target: &twv1.ActionTarget{Ref: name.Ref}, Text: "Grace Hopper"},
	}})
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonStaleRef), "status %+v", act.Status)
	g.Expect(act.Status.Message).To(ContainSubstring("field 1"))
}
