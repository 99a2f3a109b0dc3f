package extension_test

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

// TestScreenshotThroughExtension: through the real extension (chrome.debugger
// Page.captureScreenshot, no tab activated), a user with the shipped edit role
// takes a screenshot of the viewport (PNG) and of one element (JPEG) of a real page;
// each action's result names a BrowserScreenshot that the user reads and
// decodes, at the size Chromium lays out, while a user of another namespace
// cannot read it and the user cannot create one; once the action is deleted
// its screenshot is gone (collected by tabwarden's controller: envtest has no
// garbage collector).
func TestScreenshotThroughExtension(t *testing.T) {
	g, ctx := begin(t, 200*time.Millisecond)
	w := sessionOnPage(t, g, "shot", "verbs", "/verbs", fixture.TitleVerbs)
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
	var menu *twv1.ObservedElement
	for i := range o.Elements {
		if o.Elements[i].Name == "Menu" {
			menu = &o.Elements[i]
		}
	}
	g.Expect(menu).NotTo(BeNil(), "observation %+v", o)
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
