package extension_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestActThroughExtension drives a background tab of the user's window through the
// real extension (chrome.debugger in headless Chromium, loaded with
// --load-extension): observe, type and press Enter into a form, click by text, the
// guards (ambiguous_target, stale_ref after a navigation), a window.open spawn
// adopted through its opener, a rel=noopener tab adopted through its attribution to
// the act, and a refusal on the user's own tab. The user's active tab stays the
// visible one, and the acted-on tab is never activated.
func TestActThroughExtension(t *testing.T) {
	g, ctx := begin(t, 200*time.Millisecond)
	d := host.Driver()
	run := fmt.Sprint(time.Now().UnixNano())

	// The user's window, with the user's own active tab.
	userURL := fx.Path("/quiet?user=act&run=" + run)
	userTargets, userWindowID := openUserWindow(t, userURL)
	t.Cleanup(func() {
		_ = devtools.closeTarget(context.Background(), userTargets[0]) // best-effort cleanup
	})
	var userTab string
	g.Eventually(func(g Gomega) {
		snap, err := d.Snapshot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range snap.Pages {
			if p.URL == userURL {
				userTab = p.ID
			}
		}
		g.Expect(userTab).NotTo(BeEmpty())
	}).Should(Succeed())

	// The agent's page: a background tab opened in the user's window.
	owner := "uid-act-" + run
	formURL := fx.Path("/form?run=" + run)
	page, err := d.Open(ctx, browser.OpenRequest{Key: owner, URL: formURL, WindowID: userWindowID})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _, _ = d.Cleanup(context.Background(), owner) })
	tab := page.ID
	agentTarget := pageTarget(g, formURL)
	act := func(key string, st browser.Step) (browser.ActResult, error) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return d.Act(cctx, browser.ActRequest{Key: key, Owner: owner, Page: tab, Step: st})
	}
	key := func(n int) string { return fmt.Sprintf("tw-act/%s/step-%d", run, n) }

	// observe: the form's field and button, named as a user reads them.
	var obs *browser.PageObservation
	started := time.Now()
	g.Eventually(func(g Gomega) {
		r, err := act(key(1), browser.Step{Kind: browser.StepObserve})
		g.Expect(err).NotTo(HaveOccurred())
		obs = r.Observation
		g.Expect(obs.URL).To(Equal(formURL))
		g.Expect(obs.Elements).To(ContainElement(And(HaveField("Role", "textbox"), HaveField("Name", "Name"))))
		g.Expect(obs.Elements).To(ContainElement(And(HaveField("Role", "button"), HaveField("Name", "Save"))))
	}).Should(Succeed())
	record(t, "act: first observe of a new tab", time.Since(started))
	g.Expect(obs.Title).To(Equal(fixture.TitleForm))
	g.Expect(obs.Document).To(HavePrefix(fmt.Sprintf("x%d-", d.Epoch())), "documents are scoped to the extension connection")

	// type into the field by its label, press Enter: the form submits.
	started = time.Now()
	_, err = act(key(2), browser.Step{Kind: browser.StepType, Target: browser.Target{Text: "Name"}, Text: "Ada Lovelace"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = act(key(3), browser.Step{Kind: browser.StepPress, Key: "Enter"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = act(key(4), browser.Step{Kind: browser.StepWait, Text: fixture.SavedText + "Ada Lovelace", Timeout: 20 * time.Second})
	g.Expect(err).NotTo(HaveOccurred(), "the submitted form shows the typed name")
	record(t, "act: type + Enter + wait", time.Since(started))
	g.Eventually(func(g Gomega) {
		snap, err := d.Snapshot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		p, ok := snap.Page(tab)
		g.Expect(ok).To(BeTrue())
		g.Expect(p.Title).To(Equal(fixture.TitleSaved))
	}).Should(Succeed())

	// navigate, then click by text: the unique exact match is clicked.
	sendURL := fx.Path("/two-send?run=" + run)
	_, err = act(key(5), browser.Step{Kind: browser.StepNavigate, URL: sendURL})
	g.Expect(err).NotTo(HaveOccurred())
	r, err := act(key(6), browser.Step{Kind: browser.StepObserve})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Observation.URL).To(Equal(sendURL), "navigate returns once the page loaded")
	g.Expect(r.Observation.Document).NotTo(Equal(obs.Document), "a navigation makes a new document")
	twoSend := r.Observation
	started = time.Now()
	_, err = act(key(7), browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Send later"}})
	g.Expect(err).NotTo(HaveOccurred())
	record(t, "act: click by text (background tab)", time.Since(started))
	g.Eventually(func() string { return titleOf(g, tab) }).Should(Equal("Sent later"))

	// ambiguous_target: two buttons read "Send"; nothing is clicked, both are listed.
	_, err = act(key(8), browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Send"}})
	var ae *browser.ActError
	g.Expect(errors.As(err, &ae)).To(BeTrue(), "got %v", err)
	g.Expect(ae.Reason).To(Equal(twv1.ReasonAmbiguousTarget))
	g.Expect(ae.Candidates).To(HaveLen(2))
	g.Expect(ae.Candidates).To(HaveEach(HaveField("Name", "Send")))
	g.Consistently(func() string { return titleOf(g, tab) }).WithTimeout(time.Second).Should(Equal("Sent later"))
	// The candidates are refs of the page as it is: the second one clicks #send-2.
	g.Expect(ae.Document).To(Equal(twoSend.Document))
	_, err = act(key(8), browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: ae.Candidates[1].ID, Document: ae.Document}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string { return titleOf(g, tab) }).Should(Equal("Sent 2"))

	// A ref works in its document; after a navigation it is stale, never re-aimed.
	var send2 string
	for _, e := range twoSend.Elements {
		if e.Name == "Send" {
			send2 = e.ID // elements are in document order: the last "Send" is #send-2
		}
	}
	g.Expect(send2).NotTo(BeEmpty())
	_, err = act(key(9), browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Send later"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string { return titleOf(g, tab) }).Should(Equal("Sent later"))
	_, err = act(key(9), browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: send2, Document: twoSend.Document}})
	g.Expect(err).NotTo(HaveOccurred(), "a ref from an observation three acts ago, same document")
	g.Eventually(func() string { return titleOf(g, tab) }).Should(Equal("Sent 2"))
	_, err = act(key(10), browser.Step{Kind: browser.StepNavigate, URL: sendURL + "&again=1"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = act(key(11), browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: send2, Document: twoSend.Document}})
	g.Expect(errors.As(err, &ae)).To(BeTrue(), "got %v", err)
	g.Expect(ae.Reason).To(Equal(twv1.ReasonStaleRef))
	g.Consistently(func() string { return titleOf(g, tab) }).WithTimeout(time.Second).Should(Equal(fixture.TitleTwoSend))

	// So far (observe, type, press, navigate, clicks that open nothing) the user's tab
	// stayed the visible one of its window, and the acted-on tab was never activated.
	g.Expect(pageFocus(g, userTargets[0]).Visibility).To(Equal("visible"), "the user's active tab stays active")
	g.Expect(pageFocus(g, agentTarget).Visibility).To(Equal("hidden"), "the acted-on tab was never activated")

	// window.open from a click: the spawn's opener is the agent's tab (Chrome's tabs API
	// names the window's active tab, the user's; the extension reports the page that
	// really opened it, as Page.windowOpen told its debugger); adopted via its opener.
	openURL := fx.Path("/window-open?run=" + run)
	_, err = act(key(12), browser.Step{Kind: browser.StepNavigate, URL: openURL})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = act(key(13), browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Open tab"}})
	g.Expect(err).NotTo(HaveOccurred())
	spawn := findPage(g, func(p browser.Page) bool { return p.OpenerID == tab })
	g.Expect(spawn.Attributed).To(BeEmpty(), "a spawn with an opener belongs to its opener")
	spawnOwner := "uid-act-spawn-" + run
	t.Cleanup(func() { _, _ = d.Cleanup(context.Background(), spawnOwner) })
	g.Expect(d.Adopt(ctx, browser.AdoptRequest{Key: spawnOwner, ID: spawn.ID, Parent: key(13)})).To(MatchError(browser.ErrNotObserved),
		"a spawn with an opener is not the act's")
	g.Expect(d.Adopt(ctx, browser.AdoptRequest{Key: spawnOwner, ID: spawn.ID, Parent: owner})).To(Succeed())

	// A rel=noopener link: the new tab has no opener; it is attributed to the act.
	started = time.Now()
	_, err = act(key(14), browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Open noopener"}})
	g.Expect(err).NotTo(HaveOccurred())
	orphan := findPage(g, func(p browser.Page) bool { return p.Attributed == key(14) })
	record(t, "act: noopener click → attributed tab", time.Since(started))
	g.Expect(orphan.OpenerID).To(BeEmpty())
	g.Eventually(func() string {
		return findPage(g, func(p browser.Page) bool { return p.ID == orphan.ID }).URL
	}).Should(HavePrefix(fx.Path("/landing")), "the attributed tab is the link's page")
	orphanOwner := "uid-act-orphan-" + run
	t.Cleanup(func() { _, _ = d.Cleanup(context.Background(), orphanOwner) })
	g.Expect(d.Bind(ctx, browser.BindRequest{Key: "uid-act-thief-" + run, ID: orphan.ID})).To(MatchError(browser.ErrInUse),
		"nobody binds the act's tab before its session adopts it")
	g.Expect(d.Adopt(ctx, browser.AdoptRequest{Key: orphanOwner, ID: orphan.ID, Parent: owner})).To(MatchError(browser.ErrNotObserved))
	g.Expect(d.Adopt(ctx, browser.AdoptRequest{Key: orphanOwner, ID: orphan.ID, Parent: key(14)})).To(Succeed())
	g.Eventually(func(g Gomega) {
		snap, err := d.Snapshot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		rec, ok := snap.RecordOf(orphan.ID)
		g.Expect(ok).To(BeTrue())
		g.Expect(rec).To(Equal(browser.Record{Key: orphanOwner, Page: orphan.ID, Kind: browser.RecordSpawned, Parent: key(14)}))
	}).Should(Succeed())

	// A confirm() the click opens blocks the page until answered: left open and returned
	// with the step (nothing answers on the agent's behalf), later steps refused until a
	// dialog step answers it; the page goes on.
	dialogURL := fx.Path("/dialog?run=" + run)
	_, err = act(key(15), browser.Step{Kind: browser.StepNavigate, URL: dialogURL})
	g.Expect(err).NotTo(HaveOccurred())
	res, err := act(key(16), browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Delete"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Dialog).To(Equal(&browser.Dialog{Type: "confirm", Message: "Delete everything?"}))
	_, err = act(key(17), browser.Step{Kind: browser.StepObserve})
	g.Expect(errors.As(err, &ae) && ae.Reason == browser.ReasonDialogOpen).To(BeTrue(), "observe while the confirm shows: %v", err)
	_, err = act(key(18), browser.Step{Kind: browser.StepDialog})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string { return titleOf(g, tab) }).Should(Equal("Kept"), "the dialog step cancelled the confirm")
	_, err = act(key(19), browser.Step{Kind: browser.StepObserve})
	g.Expect(err).NotTo(HaveOccurred(), "the page is not blocked")

	// The user's tab: refused, untouched.
	_, err = d.Act(ctx, browser.ActRequest{Key: key(20), Owner: owner, Page: userTab, Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Do nothing"}}})
	g.Expect(err).To(MatchError(browser.ErrNotOwned))
	userSess, err := devtools.attach(ctx, userTargets[0])
	g.Expect(err).NotTo(HaveOccurred())
	var label string
	g.Expect(devtools.eval(ctx, userSess, `document.getElementById("noop").textContent`, &label)).To(Succeed())
	devtools.detach(ctx, userSess)
	g.Expect(label).To(Equal("Do nothing"), "nothing clicked the user's button")

	// The acted-on tab was never activated (the page's own window.open, a user gesture,
	// opens its tab in the foreground: that is Chrome's choice, not tabwarden's), and the
	// extension's debugger is gone from it: every act detached.
	g.Expect(pageFocus(g, agentTarget).Visibility).To(Equal("hidden"), "the acted-on tab was never activated")
	g.Eventually(func() bool { return extensionAttached(g, agentTarget) }).Should(BeFalse())
}

// titleOf is the title of a tab as the extension reports it.
func titleOf(g Gomega, tab string) string {
	snap, err := host.Driver().Snapshot(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	p, _ := snap.Page(tab)
	return p.Title
}

// findPage waits for exactly one page of the extension's snapshot matching pred.
func findPage(g Gomega, pred func(browser.Page) bool) browser.Page {
	var found browser.Page
	g.Eventually(func(g Gomega) {
		snap, err := host.Driver().Snapshot(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		var ps []browser.Page
		for _, p := range snap.Pages {
			if pred(p) {
				ps = append(ps, p)
			}
		}
		g.Expect(ps).To(HaveLen(1))
		found = ps[0]
	}).Should(Succeed())
	return found
}

// extensionAttached reports whether any debugger client is attached to the target
// now (this test's own sessions are detached by then).
func extensionAttached(g Gomega, target string) bool {
	ts, err := devtools.targets(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	for _, t := range ts {
		if t.TargetID == target {
			return t.Attached
		}
	}
	g.Expect(target).To(BeEmpty(), "the target is gone")
	return false
}
