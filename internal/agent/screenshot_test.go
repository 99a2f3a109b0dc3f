package agent

import (
	"strings"
	"testing"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestScreenshotAttempts: a PNG is taken once, as asked; a JPEG is taken at
// its quality, then lower (50, 30: never higher than asked), then at half and
// a quarter of the scale; too large, a PNG is refused with the JPEG call as
// its hint, a JPEG with an observation (to take one element).
func TestScreenshotAttempts(t *testing.T) {
	for _, c := range []struct {
		step twv1.ActionStep
		want []shotAttempt
	}{
		{twv1.ActionStep{Type: twv1.StepScreenshot}, []shotAttempt{{scale: 1}}},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImagePNG}, []shotAttempt{{scale: 1}}},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG}, []shotAttempt{{80, 1}, {50, 1}, {30, 1}, {30, 0.5}, {30, 0.25}}},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG, Quality: 40}, []shotAttempt{{40, 1}, {30, 1}, {30, 0.5}, {30, 0.25}}},
		{twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG, Quality: 10}, []shotAttempt{{10, 1}, {10, 0.5}, {10, 0.25}}},
	} {
		got := shotAttempts(c.step)
		if len(got) != len(c.want) {
			t.Errorf("%+v: %v, want %v", c.step, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%+v: %v, want %v", c.step, got, c.want)
			}
		}
	}
	act := &twv1.BrowserAction{}
	act.Namespace = "ns"
	act.Spec.SessionRef.Name, act.Spec.WindowRef.Name, act.Spec.Thread = "s", "w", "t"
	rf := screenshotTooLarge(act, twv1.ActionStep{Type: twv1.StepScreenshot}, 900_000)
	if rf.reason != twv1.ReasonScreenshotTooLarge || !strings.Contains(rf.hint, `"format":"JPEG"`) || !strings.Contains(rf.message, "900000 bytes") {
		t.Errorf("PNG too large: %+v", rf)
	}
	rf = screenshotTooLarge(act, twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageJPEG}, 900_000)
	if rf.reason != twv1.ReasonScreenshotTooLarge || !strings.Contains(rf.hint, `"type":"Observe"`) || !strings.Contains(rf.message, "one element") {
		t.Errorf("JPEG too large: %+v", rf)
	}
}
