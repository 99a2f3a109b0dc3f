package extension_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestFillThroughExtension: a Fill BrowserAction in the user's own Chrome (the
// real extension), as a user with the shipped tabwarden-edit role: the form's
// fields are filled in one step, by ref and by label, replacing what a field
// held; a Fill with one field that is no text field is refused naming it, and
// types into none.
func TestFillThroughExtension(t *testing.T) {
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t)
	s := session(ns, "fill")
	g.Expect(u.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "verbs", "fill", fx.Path("/verbs?ns="+ns))
	g.Expect(u.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, w)
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(w.Status.Title).To(Equal(fixture.TitleVerbs))
	}).Should(Succeed())
	agent := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "fill", Thread: s.Spec.Thread, Timeout: time.Minute}
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
