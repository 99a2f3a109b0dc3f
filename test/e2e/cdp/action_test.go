package cdp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

func elementNamed(o *twv1.Observation, name string) *twv1.ObservedElement {
	for i := range o.Elements {
		if o.Elements[i].Name == name {
			return &o.Elements[i]
		}
	}
	return nil
}

// TestBrowserActionsOnChromium: BrowserActions drive a real page through the
// agent's CDP driver: observe, type by ref, press Enter, wait for the page's
// answer; an ambiguous text target is refused with candidates whose refs work;
// a ref of a page that navigated since is refused, never retargeted.
func TestBrowserActionsOnChromium(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	ctx := context.Background()
	h := hand(t)
	ns := newNamespace(t)
	startController(t)
	startAgent(t, "actions", chrome.WebSocketURL, false)
	s := session(ns, "form", "actions")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "form", "form", site.Path("/form"))
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	tab := waitOpen(t, g, w)
	g.Eventually(func() string { return pages(t, h)[tab].Title }).Should(Equal(fixture.TitleForm))
	agent := &testenv.ScriptedAgent{T: t, C: k8s, NS: ns, Session: "form", Thread: s.Spec.Thread}

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

// TestBrowserActionSpawnIsListed: a click in an action that opens a popup lists
// the spawned window in the action's status, and the session's next mutating
// step waits for its acknowledgement (the scripted agent follows the hint).
func TestBrowserActionSpawnIsListed(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	ctx := context.Background()
	h := hand(t)
	ns := newNamespace(t)
	startController(t)
	startAgent(t, "action-spawn", chrome.WebSocketURL, false)
	s := session(ns, "contacts", "action-spawn")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "contacts", "contacts", site.Path("/contacts"))
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	tab := waitOpen(t, g, w)
	agent := &testenv.ScriptedAgent{T: t, C: k8s, NS: ns, Session: "contacts", Thread: s.Spec.Thread}

	act := agent.Do("contacts", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: fixture.Contacts[0]}})
	g.Expect(act.Status.Spawned).To(HaveLen(1), "status %+v", act.Status)
	compose := spawnedOf(ns, "contacts", tab)
	g.Expect(compose).NotTo(BeNil())
	g.Expect(compose.Name).To(Equal(act.Status.Spawned[0].Name))
	g.Eventually(func() string { return get(t, compose).Status.URL }).Should(HavePrefix(site.Path("/compose")))
	var composeTab string
	g.Eventually(func() string {
		for id, p := range pages(t, h) {
			if p.OpenerID == tab && strings.Contains(p.URL, "/compose") {
				composeTab = id
			}
		}
		return composeTab
	}).ShouldNot(BeEmpty())

	// The next click waits for a disposition; the agent follows the hint and clicks.
	agent.Do("contacts", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: fixture.Contacts[1]}})
	g.Expect(agent.Refusals).To(ContainElement(twv1.ReasonUnacknowledgedSpawns))
	g.Eventually(func() any { return pages(t, h) }).ShouldNot(HaveKey(composeTab), "the hint closed the first compose window")
}
