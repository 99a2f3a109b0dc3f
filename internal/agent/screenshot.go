package agent

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

// Screenshots. The image of a Screenshot step never goes into the action's
// status (every watcher of actions would carry it): the agent writes it to a
// BrowserScreenshot in the action's namespace, owned by the action, and the
// step's result names it. The image is bounded (twv1.MaxScreenshotBytes): a
// JPEG too large is taken again at a lower quality, then at a smaller scale; a
// PNG too large, or a JPEG still too large as small as shotAttempts go, is
// refused (screenshot_too_large) with a smaller call as the hint.

// shotAttempt is one way of taking a screenshot: a JPEG quality and a scale.
type shotAttempt struct {
	quality int
	scale   float64
}

// shotAttempts are the ways a step's screenshot is taken, in order, until one
// fits: as asked, then (JPEG only) at lower qualities, then at smaller scales.
func shotAttempts(step twv1.ActionStep) []shotAttempt {
	if step.Format != twv1.ImageJPEG {
		return []shotAttempt{{scale: 1}}
	}
	q := 80
	if step.Quality != 0 {
		q = int(step.Quality)
	}
	out := []shotAttempt{{quality: q, scale: 1}}
	for _, lower := range []int{50, 30} {
		if lower < q {
			out = append(out, shotAttempt{quality: lower, scale: 1})
		}
	}
	low := min(q, 30)
	return append(out, shotAttempt{quality: low, scale: 0.5}, shotAttempt{quality: low, scale: 0.25})
}

// screenshot runs a Screenshot step through the driver, attempt after attempt
// until the image fits; it returns the last answer and the attempt it took.
func (run *actionRun) screenshot(ctx context.Context, step twv1.ActionStep, req browser.ActRequest) (browser.ActResult, shotAttempt, error) {
	var out browser.ActResult
	var err error
	var at shotAttempt
	for _, at = range shotAttempts(step) {
		req.Step.Quality, req.Step.Scale, req.Step.MaxBytes = at.quality, at.scale, twv1.MaxScreenshotBytes
		out, err = run.agent.opts.Browser.Act(ctx, req)
		if err != nil || out.Screenshot == nil || !out.Screenshot.TooLarge() {
			break
		}
	}
	return out, at, err
}

// screenshotTooLarge refuses a Screenshot whose image does not fit even taken
// as small as shotAttempts go; the hint is a smaller call.
func screenshotTooLarge(act *twv1.BrowserAction, step twv1.ActionStep, size int) *refusal {
	if step.Format == twv1.ImageJPEG {
		return refuse(twv1.ReasonScreenshotTooLarge, hint.Observe(act),
			"the JPEG screenshot is %d bytes even at quality 30 and a quarter of the scale, more than the %d a screenshot may hold (it is stored in the API): observe, then take one element ({type: Screenshot, format: JPEG, target: {ref: <ref>}})",
			size, twv1.MaxScreenshotBytes)
	}
	fixed := step.DeepCopy()
	fixed.Format, fixed.Quality = twv1.ImageJPEG, 70
	return refuse(twv1.ReasonScreenshotTooLarge, hint.Action(act, *fixed),
		"the PNG screenshot is %d bytes, more than the %d a screenshot may hold (it is stored in the API): take it as a JPEG, whose quality and scale tabwarden lowers until it fits",
		size, twv1.MaxScreenshotBytes)
}

// storeScreenshot writes the image of step i to a BrowserScreenshot owned by
// the action and returns the step result's reference to it. The name is
// generated (the action's name and the step, and a random suffix): a
// screenshot of an earlier action of the same name that was not collected
// yet never stands in the way.
func (run *actionRun) storeScreenshot(ctx context.Context, i int, shot *browser.Screenshot, at shotAttempt) (*twv1.ScreenshotReference, error) {
	a, act := run.agent, run.act
	format, w, h, err := browser.ImageConfig(shot.Data)
	if err != nil {
		return nil, err
	}
	f := twv1.ImagePNG
	switch format {
	case "png":
	case "jpeg":
		f = twv1.ImageJPEG
	default:
		return nil, fmt.Errorf("screenshot: the driver returned a %s image", format)
	}
	prefix := act.Name
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	obj := &twv1.BrowserScreenshot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    act.Namespace,
			GenerateName: prefix + "-" + strconv.Itoa(i) + "-",
			Labels:       map[string]string{twv1.ProfileLabel: a.opts.Profile},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: twv1.GroupVersion.String(), Kind: "BrowserAction", Name: act.Name, UID: act.UID, Controller: ptr.To(true),
			}},
		},
		ActionRef:   twv1.ScreenshotActionReference{Name: act.Name, UID: string(act.UID)},
		Step:        ptr.To(int32(i)),
		ProfileName: a.opts.Profile,
		Format:      f,
		Width:       int32(w),
		Height:      int32(h),
		Data:        shot.Data,
	}
	if err := a.client.Create(ctx, obj); err != nil {
		return nil, fmt.Errorf("screenshot: storing the image: %w", err)
	}
	ref := &twv1.ScreenshotReference{Name: obj.Name, Format: f, Width: int32(w), Height: int32(h), SizeBytes: int32(len(shot.Data)),
		ScalePercent: int32(at.scale*100 + 0.5)}
	if f == twv1.ImageJPEG && at.quality > 0 {
		ref.Quality = int32(at.quality)
	}
	return ref, nil
}

// screenshotResult is the result of a Screenshot step the driver ran: the
// image stored and named, or screenshot_too_large.
func (run *actionRun) screenshotResult(ctx context.Context, res twv1.StepResult, i int, step twv1.ActionStep, shot *browser.Screenshot, at shotAttempt) (twv1.StepResult, *refusal, error) {
	if shot == nil || (len(shot.Data) == 0 && !shot.TooLarge()) {
		err := fmt.Errorf("screenshot: the driver returned no image")
		res.Phase, res.Reason, res.Message = twv1.ActionFailed, twv1.ReasonStepFailed, err.Error()
		return res, nil, err
	}
	if shot.TooLarge() {
		rf := screenshotTooLarge(run.act, step, shot.Size)
		res.Phase, res.Reason, res.Message = twv1.ActionRefused, rf.reason, truncate(rf.message, 2048)
		return res, rf, nil
	}
	ref, err := run.storeScreenshot(ctx, i, shot, at)
	if err != nil {
		res.Phase, res.Reason, res.Message = twv1.ActionFailed, twv1.ReasonStepFailed, truncate(err.Error(), 2048)
		return res, nil, err
	}
	res.Phase, res.Screenshot = twv1.ActionSucceeded, ref
	res.Message = fmt.Sprintf("screenshot %s: %s %dx%d, %d bytes", ref.Name, ref.Format, ref.Width, ref.Height, ref.SizeBytes)
	if at != shotAttempts(step)[0] {
		res.Message += fmt.Sprintf(" (taken at quality %d, scale %d%% to fit %d bytes)", ref.Quality, ref.ScalePercent, twv1.MaxScreenshotBytes)
	}
	return res, nil, nil
}
