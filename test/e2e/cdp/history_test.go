package cdp_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestHistoryStepsOnChromium: Back, Forward and Reload BrowserActions, created
// by a user with the shipped tabwarden-edit role, walk a real page's history
// through the agent's CDP driver: each lands where the browser's buttons would,
// makes refs of the old document stale, and a move with no entry that way is
// refused (no_history) with a hint, loading nothing. The user's tab stays the
// visible one.
func TestHistoryStepsOnChromium(t *testing.T) {
	g, _, h := begin(t, 30*time.Second)
	p := sessionOnPage(t, g, h, "history", "form", "/form", fixture.TitleForm)
	tab, agent := p.tab, p.agent
	observe := twv1.ActionStep{Type: twv1.StepObserve}

	// Nothing before the opened page: the page the driver opens through is not
	// the page's history.
	act := agent.Act("form", twv1.ActionStep{Type: twv1.StepBack})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonNoHistory))
	g.Expect(act.Status.Message).To(ContainSubstring("Navigate"))
	g.Expect(act.Status.Hint).NotTo(BeEmpty())
	g.Expect(pages(t, h)[tab].URL).To(Equal(site.Path("/form")), "a refused Back loads nothing")

	o := agent.Do("form", observe).Status.Observation
	name := elementNamed(o, "Name")
	g.Expect(name).NotTo(BeNil(), "observation %+v", o)

	// Navigate, Back: the form again, in a new document (its old refs are stale).
	act = agent.Do("form", twv1.ActionStep{Type: twv1.StepNavigate, URL: site.Path("/two-send")}, twv1.ActionStep{Type: twv1.StepBack}, observe)
	g.Expect(act.Status.Observation.URL).To(Equal(site.Path("/form")))
	g.Expect(act.Status.Observation.Title).To(Equal(fixture.TitleForm))
	stale := agent.Act("form", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: name.Ref}})
	g.Expect(stale.Status.Reason).To(Equal(twv1.ReasonStaleRef), "status %+v", stale.Status)

	// Forward: /two-send; Reload: the same url, a new document; Forward again:
	// nothing ahead.
	act = agent.Do("form", twv1.ActionStep{Type: twv1.StepForward}, observe)
	g.Expect(act.Status.Observation.URL).To(Equal(site.Path("/two-send")))
	send := elementNamed(act.Status.Observation, "Send")
	g.Expect(send).NotTo(BeNil())
	act = agent.Do("form", twv1.ActionStep{Type: twv1.StepReload}, observe)
	g.Expect(act.Status.Observation.URL).To(Equal(site.Path("/two-send")))
	stale = agent.Act("form", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: send.Ref}})
	g.Expect(stale.Status.Reason).To(Equal(twv1.ReasonStaleRef), "a ref from before the reload: %+v", stale.Status)
	act = agent.Act("form", twv1.ActionStep{Type: twv1.StepForward})
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonNoHistory), "status %+v", act.Status)
	g.Consistently(func() string { return pages(t, h)[tab].URL }, time.Second).Should(Equal(site.Path("/two-send")))
}
