package cdp_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestScriptedAgentIncidentOnChromium: an AI agent that knows only the API and
// follows the hint of every refusal runs the incident on real Chromium through
// BrowserActions, as a user with the shipped tabwarden-edit role: it observes
// the contacts page, clicks an address (a real click; the compose popup is
// adopted and listed on the action), is refused its next click until it
// acknowledges, follows the hint, clicks the next address, and finishes. The
// user's window is untouched and no page of the session is left.
func TestScriptedAgentIncidentOnChromium(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	user := userWindow(t, h, site.Path("/quiet?user=scripted"))
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t, "scripted")

	s := session(ns, "taxes", "scripted")
	g.Expect(u.Create(ctx, s)).To(Succeed())
	contacts := openWindow(ns, "contacts", "taxes", site.Path("/contacts"))
	g.Expect(u.Create(ctx, contacts)).To(Succeed())
	contactsTab := waitOpen(t, g, contacts)
	sa := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "taxes", Thread: s.Spec.Thread, Timeout: time.Minute}

	obs := sa.Do("contacts", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
	g.Expect(obs.Title).To(Equal(fixture.TitleContacts))
	var refs []string
	for _, c := range fixture.Contacts {
		for _, e := range obs.Elements {
			if e.Name == c {
				refs = append(refs, e.Ref)
			}
		}
	}
	g.Expect(refs).To(HaveLen(len(fixture.Contacts)), "every address is listed with a ref: %+v", obs.Elements)

	first := sa.Do("contacts", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: refs[0]}})
	g.Expect(first.Status.Spawned).To(HaveLen(1), "the compose popup the click spawned is listed on the action")
	g.Expect(first.Status.Spawned[0].URL).To(HavePrefix(site.Path("/compose")), "the listed spawn says where it went (window.open's page is created before it navigates)")
	compose := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first.Status.Spawned[0].Name}}
	g.Eventually(func(g Gomega) {
		g.Expect(u.Get(ctx, client.ObjectKeyFromObject(compose), compose)).To(Succeed())
		g.Expect(compose.Spec.Spawn.OpenerTabID).To(Equal(contactsTab))
		g.Expect(compose.Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())

	// The next click is refused until the compose window has a disposition;
	// the agent follows the hint and clicks again.
	sa.Refusals = nil
	second := sa.Do("contacts", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: fixture.Contacts[1]}})
	g.Expect(sa.Refusals).To(Equal([]string{twv1.ReasonUnacknowledgedSpawns}))
	g.Expect(second.Status.Spawned).To(HaveLen(1))
	g.Eventually(func() bool { _, open := pages(t, h)[compose.Spec.Spawn.TabID]; return open }).Should(BeFalse(), "the acknowledged compose window closed")

	// Finished: every page of the session closes; the user's window stays.
	g.Expect(u.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func() int { return pagesAt(t, h, site.Path("/compose")) + pagesAt(t, h, site.Path("/contacts")) }).Should(BeZero())
	g.Expect(pages(t, h)).To(HaveKey(user.ID), "the user's page is untouched")
}

func elementNamed(o *twv1.Observation, name string) *twv1.ObservedElement {
	for i := range o.Elements {
		if o.Elements[i].Name == name {
			return &o.Elements[i]
		}
	}
	return nil
}

// TestBrowserActionsOnChromium: BrowserActions, created by a user with the
// shipped tabwarden-edit role, drive a real page through the agent's CDP driver: observe, type by ref, press Enter, wait for the page's
// answer; an ambiguous text target is refused with candidates whose refs work;
// a ref of a page that navigated since is refused, never retargeted.
func TestBrowserActionsOnChromium(t *testing.T) {
	g, _, h := begin(t, 30*time.Second)
	p := sessionOnPage(t, g, h, "actions", "form", "/form", fixture.TitleForm)
	tab, agent := p.tab, p.agent

	obs := agent.Do("form", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
	g.Expect(obs).NotTo(BeNil())
	name := elementNamed(obs, "Name")
	g.Expect(name).NotTo(BeNil(), "observation %+v", obs)
	g.Expect(name.Role).To(Equal("textbox"))
	g.Expect(name.Ref).To(HavePrefix(obs.ID + "."))

	act := agent.Do("form",
		twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Ref: name.Ref}, Text: "Ada Lovelace"},
		twv1.ActionStep{Type: twv1.StepPress, Key: "Enter"},
		twv1.ActionStep{Type: twv1.StepWait, Text: fixture.SavedText + "Ada Lovelace"},
	)
	g.Expect(act.Status.Steps).To(HaveLen(3))
	g.Eventually(func() string { return pages(t, h)[tab].Title }).Should(Equal(fixture.TitleSaved))

	// Navigate, then a text matching two buttons: refused with both as candidates.
	act = agent.Act("form",
		twv1.ActionStep{Type: twv1.StepNavigate, URL: site.Path("/two-send")},
		twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Send"}},
	)
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonAmbiguousTarget))
	g.Expect(act.Status.Steps).To(HaveLen(2))
	g.Expect(act.Status.Steps[0].Phase).To(Equal(twv1.ActionSucceeded))
	cands := act.Status.Steps[1].Candidates
	g.Expect(cands).To(HaveLen(2))
	for _, c := range cands {
		g.Expect(c.Name).To(Equal("Send"))
		g.Expect(c.Ref).NotTo(BeEmpty())
	}
	g.Expect(pages(t, h)[tab].URL).To(HaveSuffix("/two-send"))
	agent.Do("form", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: cands[1].Ref}})
	g.Eventually(func() string { return pages(t, h)[tab].Title }).Should(Equal("Sent 2"))

	// The Name field's ref belongs to the /form document, which is gone.
	act = agent.Act("form", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: name.Ref}})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonStaleRef))
	g.Expect(act.Status.Hint).NotTo(BeEmpty())
	g.Consistently(func() string { return pages(t, h)[tab].Title }, time.Second).Should(Equal("Sent 2"))
}
