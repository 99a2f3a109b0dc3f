package controllers_test

import (
	"bytes"
	"context"
	"image/jpeg"
	"image/png"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestScreenshotStepsAreValidated: the API server takes format and quality on
// a Screenshot step only, quality with JPEG only and in 1-100, a format of the
// enum only, and admits a Screenshot of the viewport or of a target.
func TestScreenshotStepsAreValidated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	create := func(steps ...twv1.ActionStep) error {
		act := &twv1.BrowserAction{}
		act.Namespace, act.GenerateName = ns, "shot-"
		act.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "s"}, Thread: "t",
			WindowRef: twv1.ActionWindowReference{Name: "w"}, Steps: steps}
		return k8s.Create(context.Background(), act)
	}
	for _, c := range []struct {
		step twv1.ActionStep
		says string
	}{
		{twv1.ActionStep{Type: twv1.StepObserve, Format: twv1.ImagePNG}, "format and quality belong to a Screenshot step only"},
		{twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Send"}, Quality: 50}, "format and quality belong to a Screenshot step only"},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Quality: 50}, "quality applies to a JPEG screenshot only"},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImagePNG, Quality: 50}, "quality applies to a JPEG screenshot only"},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG, Quality: 101}, "quality"},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Format: "GIF"}, "format"},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Target: &twv1.ActionTarget{Text: "Send", Ref: "o3.e4"}}, "a target is exactly one of ref"},
	} {
		err := create(c.step)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: got %v", c.step, err)
		g.Expect(err.Error()).To(ContainSubstring(c.says))
	}
	g.Expect(create(
		twv1.ActionStep{Type: twv1.StepScreenshot},
		twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImagePNG, Target: &twv1.ActionTarget{Ref: "o3.e4"}},
		twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG, Quality: 60},
	)).To(Succeed())
}

// TestScreenshotObject: a Screenshot step's image goes to a BrowserScreenshot
// that the step's result names (never to the action's status), which a user
// of the namespace reads through the shipped roles and a user of another
// namespace cannot; nobody but the agent of the action's profile creates one,
// nobody changes one, a forgery by another profile's agent is collected, and
// the screenshot is collected by tabwarden's controller once its action is
// deleted (envtest runs no garbage collector). Too large an image is refused
// as a PNG (screenshot_too_large, teaching JPEG), and taken smaller as a JPEG.
func TestScreenshotObject(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	startController(t)
	w := newActionWorld(t, g, "shots", agent.Options{})
	ctx := context.Background()

	// The viewport, as a PNG.
	act := w.agent.Do("contacts", twv1.ActionStep{Type: twv1.StepScreenshot})
	g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), act.Status.Message)
	ref := act.Status.Steps[0].Screenshot
	g.Expect(ref).NotTo(BeNil())
	g.Expect(ref.Format).To(Equal(twv1.ImagePNG))
	g.Expect([]int32{ref.Width, ref.Height}).To(Equal([]int32{fake.ViewportWidth, fake.ViewportHeight}))
	g.Expect(act.Status.Steps[0].Message).To(ContainSubstring(ref.Name))
	shot := &twv1.BrowserScreenshot{}
	g.Expect(w.user.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: ref.Name}, shot)).To(Succeed(), "the user who reads the action reads its screenshot")
	g.Expect(shot.ActionRef).To(Equal(twv1.ScreenshotActionReference{Name: act.Name, UID: string(act.UID)}))
	g.Expect(shot.ProfileName).To(Equal(w.profile))
	g.Expect(shot.OwnerReferences).To(ConsistOf(HaveField("UID", act.UID)))
	g.Expect(int32(len(shot.Data))).To(Equal(ref.SizeBytes))
	img, err := png.DecodeConfig(bytes.NewReader(shot.Data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]int{img.Width, img.Height}).To(Equal([]int{fake.ViewportWidth, fake.ViewportHeight}))

	// One element, as a JPEG.
	el := w.agent.Do("contacts", twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG, Quality: 70, Target: &twv1.ActionTarget{Text: "Search"}})
	g.Expect(el.Status.Phase).To(Equal(twv1.ActionSucceeded), el.Status.Message)
	elRef := el.Status.Steps[0].Screenshot
	g.Expect(elRef.Format).To(Equal(twv1.ImageJPEG))
	g.Expect(elRef.Quality).To(Equal(int32(70)))
	elShot := &twv1.BrowserScreenshot{}
	g.Expect(w.user.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: elRef.Name}, elShot)).To(Succeed())
	jc, err := jpeg.DecodeConfig(bytes.NewReader(elShot.Data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]int{jc.Width, jc.Height}).To(Equal([]int{200, 40}), "the element's box")

	// Another namespace's user cannot read it.
	other := testenv.UserClient(t, cfg, newNamespace(t), "eve")
	err = other.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: ref.Name}, &twv1.BrowserScreenshot{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)

	// Nobody but the agent of the action's profile creates one.
	forged := func(name string) *twv1.BrowserScreenshot {
		return &twv1.BrowserScreenshot{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name, Labels: map[string]string{twv1.ProfileLabel: w.profile},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserAction", Name: act.Name, UID: act.UID, Controller: ptr.To(true)}}},
			ActionRef: shot.ActionRef, Step: ptr.To[int32](0), ProfileName: w.profile, Format: twv1.ImagePNG, Width: shot.Width, Height: shot.Height, Data: shot.Data,
		}
	}
	err = w.user.Create(ctx, forged("forged-by-user"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a user may not create a screenshot: %v", err)
	err = k8s.Create(ctx, forged("forged-by-admin"))
	g.Expect(access.Denied(err, "tabwarden-screenshot")).To(BeTrue(), "not even an administrator: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("{type: Screenshot}"), "the refusal says how to take one")
	// Its content never changes, an administrator's write included.
	changed := shot.DeepCopy()
	changed.Data = elShot.Data
	err = k8s.Update(ctx, changed)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("a BrowserScreenshot is what the agent saw; it cannot be changed"))
	// The agent of another profile may create only its own profile's
	// screenshots, and one for an action it did not run is collected.
	otherAgent, err := client.New(access.As(cfg, access.AgentUser("not-"+w.profile), access.AgentGroup), client.Options{Scheme: k8s.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	err = otherAgent.Create(ctx, forged("forged-by-agent"))
	g.Expect(access.Denied(err, "tabwarden-screenshot")).To(BeTrue(), "another profile's agent naming this profile: %v", err)
	own := forged("forged-by-other-agent")
	own.ProfileName, own.Labels[twv1.ProfileLabel] = "not-"+w.profile, "not-"+w.profile
	g.Expect(otherAgent.Create(ctx, own)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(own), &twv1.BrowserScreenshot{}))
	}).Should(BeTrue(), "a screenshot of another profile's agent than the action's is collected")
	// The agent never deletes one.
	err = otherAgent.Delete(ctx, own)
	g.Expect(apierrors.IsForbidden(err) || apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)

	// Too large: a PNG is refused with the JPEG call as the hint; a JPEG is
	// taken at a lower quality until it fits.
	w.b.SetScreenshotNoise(contactsURL)
	big := w.agent.Act("contacts", twv1.ActionStep{Type: twv1.StepScreenshot})
	g.Expect(big.Status.Phase).To(Equal(twv1.ActionRefused), big.Status.Message)
	g.Expect(big.Status.Reason).To(Equal(twv1.ReasonScreenshotTooLarge))
	g.Expect(big.Status.Hint).To(ContainSubstring(`"format":"JPEG"`))
	g.Expect(big.Status.Steps[0].Screenshot).To(BeNil())
	fit := w.agent.Do("contacts", twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG, Quality: 100})
	g.Expect(fit.Status.Phase).To(Equal(twv1.ActionSucceeded), fit.Status.Message)
	fitRef := fit.Status.Steps[0].Screenshot
	g.Expect(fitRef.Quality).To(BeNumerically("<", 100))
	g.Expect(fitRef.SizeBytes).To(BeNumerically("<=", twv1.MaxScreenshotBytes))
	g.Expect(fit.Status.Steps[0].Message).To(ContainSubstring("to fit"))

	// Collected with the action.
	g.Expect(w.user.Delete(ctx, act)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(w.user.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: ref.Name}, &twv1.BrowserScreenshot{}))
	}).Should(BeTrue(), "the screenshot goes with its action")
	g.Expect(w.user.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: elRef.Name}, &twv1.BrowserScreenshot{})).To(Succeed(), "another action's screenshot stays")
}
