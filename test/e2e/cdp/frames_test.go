package cdp_test

import (
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestFramesThroughTheAPIOnChromium: BrowserActions created by a user reach a
// same-origin iframe and an open shadow root on real Chromium: the observation
// in the action's status names the frame in the ref (o<n>.f<k>.e<n>, which the
// CRD's pattern admits), Type and Click by that ref land in the frame (the page
// sees the typed value), text targets reach the shadow root, and once the
// frame navigates the old ref is refused stale_ref, never retargeted at the new
// document's look-alike button.
func TestFramesThroughTheAPIOnChromium(t *testing.T) {
	g, _, h := begin(t, 30*time.Second)
	p := sessionOnPage(t, g, h, "frames", "login", "/frames", "Frames")
	tab, agent := p.tab, p.agent
	title := func() string { return pages(t, h)[tab].Title }
	frameRef := regexp.MustCompile(`^o[0-9]+\.f[0-9]+\.e[0-9]+$`)

	var user, signIn, next *twv1.ObservedElement
	g.Eventually(func(g Gomega) {
		o := agent.Do("login", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
		user, signIn, next = elementNamed(o, "Frame user"), elementNamed(o, "Frame sign in"), elementNamed(o, "Next")
		g.Expect(user).NotTo(BeNil(), "observation %+v", o)
		g.Expect(signIn).NotTo(BeNil(), "observation %+v", o)
		g.Expect(next).NotTo(BeNil(), "observation %+v", o)
		g.Expect(elementNamed(o, "Shadow sign in")).NotTo(BeNil(), "observation %+v", o)
	}).Should(Succeed())
	for _, el := range []*twv1.ObservedElement{user, signIn, next} {
		g.Expect(el.Ref).To(MatchRegexp(frameRef.String()), "%s's ref names its frame", el.Name)
	}

	agent.Do("login",
		twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Ref: user.Ref}, Text: "ada"},
		twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: signIn.Ref}})
	g.Eventually(title).Should(Equal("Frame ada"))

	agent.Do("login",
		twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Text: "Shadow user"}, Text: "grace"},
		twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Shadow sign in"}})
	g.Eventually(title).Should(Equal("Shadow grace"))

	// The frame navigates; its old refs name a document it no longer shows.
	agent.Do("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: next.Ref}})
	g.Eventually(func() bool {
		o := agent.Do("login", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
		return elementNamed(o, "Back") != nil
	}).Should(BeTrue(), "the frame shows /frames/next")
	stale := agent.Act("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: signIn.Ref}})
	g.Expect(stale.Status.Reason).To(Equal(twv1.ReasonStaleRef), "status %+v", stale.Status)
	g.Consistently(title, "500ms").ShouldNot(Equal("Retargeted"))
}
