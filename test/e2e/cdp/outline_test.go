package cdp_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestOutlineOnChromium: an Observe BrowserAction, created by a user with the
// shipped tabwarden-edit role, returns the real page's content as an outline in
// status.observation.outline: the e-mail's subject, body and table, nothing the
// page hides, at most 32 KiB with truncated and nextOffset; Observe steps with
// outlineOffset read the rest. The outline's refs are the observation's: the
// Archive button's ref is its element's, clicks it, and is stale after a reload.
func TestOutlineOnChromium(t *testing.T) {
	g, _, h := begin(t, 30*time.Second)
	const older = 700
	p := sessionOnPage(t, g, h, "outline", "mail", "/reading?older=700", fixture.TitleReading)
	tab, agent := p.tab, p.agent

	act := agent.Do("mail", twv1.ActionStep{Type: twv1.StepObserve})
	o := act.Status.Observation
	g.Expect(o.Outline).NotTo(BeNil(), "observation %+v", o)
	out := o.Outline
	for _, want := range []string{`- heading "` + fixture.ReadingSubject + `" [level=2]`, fixture.ReadingBody, `- cell: "1200"`, fixture.ReadingItem(1)} {
		g.Expect(out.Text).To(ContainSubstring(want))
	}
	g.Expect(out.Text).NotTo(ContainSubstring(fixture.ReadingHidden))
	g.Expect(len(out.Text)).To(BeNumerically("<=", 32<<10))
	g.Expect(out.Offset).To(BeZero())
	g.Expect(int(out.Lines)).To(Equal(strings.Count(out.Text, "\n")))
	g.Expect(out.Truncated).To(BeTrue(), "%d older messages fit no single chunk", older)
	g.Expect(out.NextOffset).NotTo(BeNil())
	g.Expect(*out.NextOffset).To(Equal(out.Offset + out.Lines))
	g.Expect(act.Status.Steps[0].Observation.Outline).To(BeNil(), "only status.observation carries the outline")

	// The Archive button's ref in the outline is its element's.
	m := regexp.MustCompile(`button "Archive" \[ref=(o[0-9]+\.e[0-9]+)\]`).FindStringSubmatch(out.Text)
	g.Expect(m).NotTo(BeNil(), "outline:\n%s", out.Text)
	archive := elementNamed(o, "Archive")
	g.Expect(archive).NotTo(BeNil())
	g.Expect(m[1]).To(Equal(archive.Ref))

	// Paging reads the rest of the page, every older message once.
	text := out.Text
	for out.Truncated {
		next := *out.NextOffset
		act = agent.Do("mail", twv1.ActionStep{Type: twv1.StepObserve, OutlineOffset: &next})
		out = act.Status.Observation.Outline
		g.Expect(out.Offset).To(Equal(next))
		g.Expect(len(out.Text)).To(BeNumerically("<=", 32<<10))
		text += out.Text
	}
	for _, i := range []int{1, 350, older} {
		g.Expect(strings.Count(text, fixture.ReadingItem(i))).To(Equal(1), "older message %d", i)
	}

	// The first observation's outline ref still clicks (same document)...
	act = agent.Do("mail", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: m[1]}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "status %+v", act.Status)
	g.Eventually(func() string { return pages(t, h)[tab].Title }).Should(Equal(fixture.TitleArchived))
	// ...and is stale once the page reloaded.
	agent.Do("mail", twv1.ActionStep{Type: twv1.StepReload})
	stale := agent.Act("mail", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: m[1]}})
	g.Expect(stale.Status.Reason).To(Equal(twv1.ReasonStaleRef), "status %+v", stale.Status)
}
