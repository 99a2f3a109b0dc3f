package extension_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestHistoryStepsThroughExtension: Back, Forward and Reload BrowserActions in
// the user's own Chrome (the real extension), as a user with the shipped
// tabwarden-edit role: each lands where the browser's history says, makes refs
// of the old document stale, and a move with no entry that way is refused
// (no_history) with a hint, loading nothing.
func TestHistoryStepsThroughExtension(t *testing.T) {
	g, _ := begin(t, 100*time.Millisecond)
	p := sessionOnPage(t, g, "hist", "form", "/form", fixture.TitleForm)
	agent, formURL, sendURL := p.agent, p.url, fx.Path("/two-send?ns="+p.ns)
	observe := twv1.ActionStep{Type: twv1.StepObserve}

	act := agent.Act("form", twv1.ActionStep{Type: twv1.StepBack})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonNoHistory))
	g.Expect(act.Status.Message).To(ContainSubstring("Navigate"))
	g.Expect(act.Status.Hint).NotTo(BeEmpty())

	o := agent.Do("form", observe).Status.Observation
	g.Expect(o.URL).To(Equal(formURL), "a refused Back loads nothing")
	var name string
	for _, e := range o.Elements {
		if e.Name == "Name" {
			name = e.Ref
		}
	}
	g.Expect(name).NotTo(BeEmpty(), "observation %+v", o)

	act = agent.Do("form", twv1.ActionStep{Type: twv1.StepNavigate, URL: sendURL}, twv1.ActionStep{Type: twv1.StepBack}, observe)
	g.Expect(act.Status.Observation.URL).To(Equal(formURL))
	g.Expect(act.Status.Observation.Title).To(Equal(fixture.TitleForm))
	stale := agent.Act("form", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: name}})
	g.Expect(stale.Status.Reason).To(Equal(twv1.ReasonStaleRef), "status %+v", stale.Status)

	act = agent.Do("form", twv1.ActionStep{Type: twv1.StepForward}, twv1.ActionStep{Type: twv1.StepReload}, observe)
	g.Expect(act.Status.Observation.URL).To(Equal(sendURL))
	act = agent.Act("form", twv1.ActionStep{Type: twv1.StepForward})
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonNoHistory), "status %+v", act.Status)
	g.Expect(agent.Do("form", observe).Status.Observation.URL).To(Equal(sendURL), "a refused Forward loads nothing")
}
