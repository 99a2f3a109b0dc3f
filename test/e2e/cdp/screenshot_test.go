package cdp_test

import (
	"bytes"
	"image/jpeg"
	"image/png"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestScreenshotOnChromium: a user with the shipped edit role takes a
// screenshot of the viewport (PNG) and of one element (JPEG) of a real page;
// each action's result names a BrowserScreenshot that the user reads and
// decodes, at the size Chromium lays out, while a user of another namespace
// cannot read it and the user cannot create one; once the action is deleted
// its screenshot is gone (collected by tabwarden's controller: envtest has no
// garbage collector).
func TestScreenshotOnChromium(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	w := sessionOnPage(t, g, h, "shot", "verbs", "/verbs", fixture.TitleVerbs)
	u := w.agent.C
	read := func(ref *twv1.ScreenshotReference) *twv1.BrowserScreenshot {
		t.Helper()
		g.Expect(ref).NotTo(BeNil())
		shot := &twv1.BrowserScreenshot{}
		g.Expect(u.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: ref.Name}, shot)).To(Succeed())
		g.Expect(int32(len(shot.Data))).To(Equal(ref.SizeBytes))
		return shot
	}

	viewport := w.agent.Do("verbs", twv1.ActionStep{Type: twv1.StepScreenshot})
	g.Expect(viewport.Status.Phase).To(Equal(twv1.ActionSucceeded), viewport.Status.Message)
	ref := viewport.Status.Steps[0].Screenshot
	shot := read(ref)
	img, err := png.DecodeConfig(bytes.NewReader(shot.Data))
	g.Expect(err).NotTo(HaveOccurred(), "the viewport is a PNG")
	g.Expect([]int32{int32(img.Width), int32(img.Height)}).To(Equal([]int32{ref.Width, ref.Height}))
	g.Expect(img.Width).To(BeNumerically(">", 300))
	g.Expect(img.Height).To(BeNumerically(">", 200))
	g.Expect(shot.ActionRef.UID).To(Equal(string(viewport.UID)))

	o := w.agent.Do("verbs", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
	menu := elementNamed(o, "Menu")
	g.Expect(menu).NotTo(BeNil())
	el := w.agent.Do("verbs", twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG, Quality: 60,
		Target: &twv1.ActionTarget{Ref: menu.Ref}})
	g.Expect(el.Status.Phase).To(Equal(twv1.ActionSucceeded), el.Status.Message)
	elRef := el.Status.Steps[0].Screenshot
	jc, err := jpeg.DecodeConfig(bytes.NewReader(read(elRef).Data))
	g.Expect(err).NotTo(HaveOccurred(), "the element is a JPEG")
	g.Expect(jc.Width).To(BeNumerically("~", menu.Width, 1), "the element's box")
	g.Expect(jc.Height).To(BeNumerically("~", menu.Height, 1), "the element's box")
	g.Expect(elRef.Quality).To(Equal(int32(60)))

	// Another namespace's user cannot read it; the user cannot write one.
	eve := testenv.UserClient(t, cfg, newNamespace(t), "eve")
	err = eve.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: ref.Name}, &twv1.BrowserScreenshot{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	forged := &twv1.BrowserScreenshot{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "forged", Labels: shot.Labels, OwnerReferences: shot.OwnerReferences},
		ActionRef: shot.ActionRef, Step: shot.Step, ProfileName: shot.ProfileName, Format: shot.Format, Width: shot.Width, Height: shot.Height, Data: shot.Data}
	err = u.Create(ctx, forged)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "only the agent writes screenshots: %v", err)

	// Gone with its action.
	g.Expect(u.Delete(ctx, viewport)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(u.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: ref.Name}, &twv1.BrowserScreenshot{}))
	}).Should(BeTrue(), "the screenshot goes with its action")
	g.Expect(u.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: elRef.Name}, &twv1.BrowserScreenshot{})).To(Succeed(), "another action's stays")
}

// TestScreenshotOfALyingBackgroundTabOnChromium: a page in a background tab
// that tells its own scripts it is shown (document.visibilityState "visible",
// document.hidden false) is still refused page_not_visible: the page script
// asks in tabwarden's isolated world, which the page cannot reach, so the page
// neither gets a capture that waits for a frame never drawn nor is brought to
// the front.
func TestScreenshotOfALyingBackgroundTabOnChromium(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	ns := newNamespace(t)
	u := testenv.UserClient(t, cfg, ns, "ada")
	startRoles(t, "liar")
	s := session(ns, "liar", "liar")
	s.Spec.Placement = twv1.PlacementTab
	g.Expect(u.Create(ctx, s)).To(Succeed())
	first := openWindow(ns, "first", "liar", site.Path("/landing?tab=1"))
	g.Expect(u.Create(ctx, first)).To(Succeed())
	waitOpen(t, g, first)
	liar := openWindow(ns, "liar", "liar", site.Path("/visible-liar"))
	g.Expect(u.Create(ctx, liar)).To(Succeed())
	tab := waitOpen(t, g, liar)
	g.Eventually(func() string { return pages(t, h)[tab].Title }).Should(Equal("Liar visible"), "the page's own world believes it is shown")

	agent := &testenv.ScriptedAgent{T: t, C: u, NS: ns, Session: "liar", Thread: s.Spec.Thread, Timeout: time.Minute}
	act := agent.Act("liar", twv1.ActionStep{Type: twv1.StepScreenshot})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "status %+v", act.Status)
	g.Expect(act.Status.Reason).To(Equal(twv1.ReasonPageNotVisible), "status %+v", act.Status)
	g.Expect(act.Status.Steps).To(Or(BeEmpty(), ContainElement(HaveField("Screenshot", BeNil()))))
	var shots twv1.BrowserScreenshotList
	g.Expect(k8s.List(ctx, &shots, client.InNamespace(ns))).To(Succeed())
	g.Expect(shots.Items).To(BeEmpty(), "nothing was captured")
}
