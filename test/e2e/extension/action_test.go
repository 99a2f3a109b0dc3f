package extension_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestScriptedAgentIncidentThroughExtension: the incident through BrowserActions
// in the user's own Chrome (the real extension): an AI agent that knows only the
// API, as a user with the shipped tabwarden-edit role, observes the contacts page,
// clicks an address (a real click through chrome.debugger; the compose popup is
// adopted and listed on the action), is refused its next click until it
// acknowledges, follows the hint, clicks the next address, fills the form of a
// second page by ref and Enter, and finishes. The user's window is untouched and
// no page of the session is left.
func TestScriptedAgentIncidentThroughExtension(t *testing.T) {
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	userURL := fx.Path("/quiet?user=scripted&ns=" + ns)
	userTargets, _ := openUserWindow(t, userURL)
	t.Cleanup(func() {
		_ = devtools.closeTarget(context.Background(), userTargets[0]) // best-effort cleanup
	})
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t)

	s, contacts, contactsURL := contactsSession(g, u, ns, "taxes", "")
	g.Eventually(func(g Gomega) {
		get(t, contacts)
		g.Expect(contacts.Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(contacts.Status.Title).To(Equal(fixture.TitleContacts))
	}).Should(Succeed())
	sa := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "taxes", Thread: s.Spec.Thread, Timeout: time.Minute}

	started := time.Now()
	obs := sa.Do("contacts", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
	record(t, "BrowserAction observe (create → done)", time.Since(started))
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

	started = time.Now()
	first := sa.Do("contacts", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: refs[0]}})
	record(t, "BrowserAction click with spawn", time.Since(started))
	g.Expect(first.Status.Spawned).To(HaveLen(1), "the compose popup the click spawned is listed on the action")
	g.Expect(first.Status.Spawned[0].URL).To(ContainSubstring("/compose?to="), "the listed spawn says where it went")
	compose := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first.Status.Spawned[0].Name}}
	g.Eventually(func(g Gomega) {
		g.Expect(u.Get(ctx, client.ObjectKeyFromObject(compose), compose)).To(Succeed())
		g.Expect(compose.Spec.Spawn.OpenerTabID).To(Equal(contacts.Status.TabID))
		g.Expect(compose.Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())

	// The next click is refused until the compose window has a disposition; the
	// agent follows the hint and clicks again.
	sa.Refusals = nil
	second := sa.Do("contacts", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: fixture.Contacts[1]}})
	g.Expect(sa.Refusals).To(Equal([]string{twv1.ReasonUnacknowledgedSpawns}))
	g.Expect(second.Status.Spawned).To(HaveLen(1))
	composeURL := func(i int) string { return fx.Path("/compose?to=" + url.QueryEscape(fixture.Contacts[i])) }
	g.Eventually(func() bool { return hasPageURL(composeURL(0)) }).Should(BeFalse(), "the acknowledged compose window closed")

	// A form in a second window of the session (once the second compose window has a
	// disposition: new windows are held while a spawn is unacknowledged): type by ref,
	// Enter, wait.
	compose2 := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: second.Status.Spawned[0].Name}}
	g.Expect(u.Get(ctx, client.ObjectKeyFromObject(compose2), compose2)).To(Succeed())
	ack(t, compose2, twv1.DispositionClose)
	form := openWindow(ns, "form", "taxes", fx.Path("/form?ns="+ns))
	g.Expect(u.Create(ctx, form)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, form)
		g.Expect(form.Status.Title).To(Equal(fixture.TitleForm))
	}).Should(Succeed())
	sa.Refusals = nil
	fobs := sa.Do("form", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
	var name string
	for _, e := range fobs.Elements {
		if e.Name == "Name" {
			name = e.Ref
		}
	}
	g.Expect(name).NotTo(BeEmpty(), "observation %+v", fobs)
	done := sa.Do("form",
		twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Ref: name}, Text: "Ada Lovelace"},
		twv1.ActionStep{Type: twv1.StepPress, Key: "Enter"},
		twv1.ActionStep{Type: twv1.StepWait, Text: fixture.SavedText + "Ada Lovelace"},
	)
	g.Expect(done.Status.Steps).To(HaveLen(3))
	g.Eventually(func(g Gomega) {
		get(t, form)
		g.Expect(form.Status.Title).To(Equal(fixture.TitleSaved))
	}).Should(Succeed())

	// Finished: every page of the session closes; the user's window stays, its tab the
	// visible one.
	g.Expect(u.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func() bool {
		return hasPageURL(composeURL(1)) || hasPageURL(contactsURL) || hasPageURL(fx.Path("/form?ns="+ns))
	}).Should(BeFalse())
	g.Expect(chromePages(g)).To(HaveKeyWithValue(userTargets[0], userURL), "the user's page is untouched")
	g.Expect(pageFocus(g, userTargets[0]).Visibility).To(Equal("visible"))
}
