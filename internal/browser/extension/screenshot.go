package extension

import (
	"errors"
	"fmt"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// maxShotBytes is the largest image an act answers with (the API's bound):
// its base64 fits the host's frame (DefaultMaxFrameBytes).
const maxShotBytes = twv1.MaxScreenshotBytes

// shotStep fills in a screenshot step: format, quality, scale, the size bound
// and the optional target.
func shotStep(ws *wireStep, st browser.Step, epoch int64) error {
	ws.Format = st.Format
	if ws.Format == "" {
		ws.Format = browser.FormatPNG
	}
	if ws.Format != browser.FormatPNG && ws.Format != browser.FormatJPEG {
		return fmt.Errorf("extension act: a screenshot is png or jpeg, not %q", st.Format)
	}
	if st.Quality < 0 || st.Quality > 100 || st.Scale < 0 || st.Scale > 1 || st.MaxBytes < 0 {
		return fmt.Errorf("extension act: a screenshot's quality is 0-100 and its scale in (0, 1]: %d, %v", st.Quality, st.Scale)
	}
	ws.Quality, ws.Scale = st.Quality, st.Scale
	ws.MaxBytes = maxShotBytes
	if st.MaxBytes > 0 && st.MaxBytes < maxShotBytes {
		ws.MaxBytes = st.MaxBytes
	}
	if st.Target != (browser.Target{}) {
		t, err := wireTargetOf(st.Target, epoch)
		if err != nil {
			return err
		}
		ws.Target = t
	}
	return nil
}

// screenshotOf checks the act's screenshot against the step that asked for it.
func screenshotOf(res browser.ActResult, s *wireScreenshot, ws wireStep) (browser.ActResult, error) {
	switch {
	case s == nil:
		return browser.ActResult{}, errors.New("extension act: screenshot answered without an image")
	case s.Format != ws.Format:
		return browser.ActResult{}, fmt.Errorf("extension act: asked for a %s screenshot, answered a %q one", ws.Format, s.Format)
	case len(s.Data) == 0 && s.Size <= ws.MaxBytes:
		return browser.ActResult{}, fmt.Errorf("extension act: a screenshot of %d bytes answered without its data", s.Size)
	case len(s.Data) > ws.MaxBytes || (len(s.Data) > 0 && len(s.Data) != s.Size):
		return browser.ActResult{}, fmt.Errorf("extension act: a screenshot of %d bytes (said %d) over the %d asked for", len(s.Data), s.Size, ws.MaxBytes)
	}
	res.Screenshot = &browser.Screenshot{Format: s.Format, Data: s.Data, Size: s.Size}
	return res, nil
}
