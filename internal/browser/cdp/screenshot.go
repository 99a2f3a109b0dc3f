package cdp

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// shotBox is the page script's shotBox: what a screenshot takes, in viewport
// CSS pixels, the page's scroll offset and the device pixel ratio.
type shotBox struct {
	X, Y, Width, Height float64
	PageX               float64 `json:"pageX"`
	PageY               float64 `json:"pageY"`
	DPR                 float64 `json:"dpr"`
	// Hidden: the page is not shown (a background tab, a minimized window).
	Hidden bool `json:"hidden"`
}

// validShot checks a screenshot step's format, quality and scale.
func validShot(s browser.Step) error {
	switch {
	case s.Format != "" && s.Format != browser.FormatPNG && s.Format != browser.FormatJPEG:
		return fmt.Errorf("act: a screenshot is png or jpeg, not %q", s.Format)
	case s.Quality < 0 || s.Quality > 100:
		return fmt.Errorf("act: a screenshot's quality is 1-100, not %d", s.Quality)
	case s.Scale < 0 || s.Scale > 1:
		return fmt.Errorf("act: a screenshot's scale is in (0, 1], not %v", s.Scale)
	}
	return nil
}

// screenshotStep takes the viewport, or the target element's box in it, with
// Page.captureScreenshot. Chromium draws no frame of a hidden page (a
// background tab): its capture waits for one that never comes, and the only
// cure, bringing the tab to the front, is what tabwarden never does. A hidden
// page is refused (page_not_visible) before anything is captured. Nothing
// scrolls either (the page script refuses an element outside the viewport).
func (b *Browser) screenshotStep(ctx context.Context, ps *pageSession, s browser.Step) (browser.ActResult, error) {
	args := scriptArgs{}
	if s.Target != (browser.Target{}) {
		args.Target = targetArgs(s.Target)
	}
	var box shotBox
	if err := b.run(ctx, ps, "shotBox", args, &box); err != nil {
		return browser.ActResult{}, err
	}
	if box.Hidden {
		return browser.ActResult{}, notVisible()
	}
	format := s.Format
	if format == "" {
		format = browser.FormatPNG
	}
	scale := s.Scale
	if scale <= 0 {
		scale = 1
	}
	req := wire.CaptureScreenshot{Format: format}
	if format == browser.FormatJPEG {
		req.Quality = s.Quality
		if req.Quality == 0 {
			req.Quality = 80
		}
	}
	if s.Target != (browser.Target{}) || scale != 1 {
		req.Clip = &wire.Viewport{X: box.PageX + box.X, Y: box.PageY + box.Y, Width: box.Width, Height: box.Height, Scale: scale}
	}
	r, err := call(ctx, ps.c, ps.id, req)
	if err != nil {
		return browser.ActResult{}, fmt.Errorf("screenshot: %w", err)
	}
	data, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return browser.ActResult{}, fmt.Errorf("screenshot: the image does not decode: %w", err)
	}
	return browser.ActResult{Screenshot: browser.ScreenshotOf(format, data, s.MaxBytes)}, nil
}

// notVisible is the refusal of a screenshot of a hidden page.
func notVisible() error {
	return &browser.ActError{Reason: browser.ReasonPageNotVisible, Message: "the page is not shown (a background tab, or a minimized window): Chromium draws no picture of a hidden page, and tabwarden never brings a tab to the front (the user's focus is theirs). Observe reads the page's text without a picture; a window opened in a window of its own (the session's default placement) shows its page"}
}
