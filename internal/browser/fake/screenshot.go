package fake

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// ViewportWidth and ViewportHeight are the fake page's viewport in CSS pixels
// (one device pixel each): a viewport screenshot is that large.
const (
	ViewportWidth  = 800
	ViewportHeight = viewport
)

// SetScreenshotNoise makes the pictures of every page at url random noise
// (seeded: still deterministic), which compresses badly: a PNG of the
// viewport is larger than the API's bound, and a JPEG shrinks only with its
// quality and scale.
func (b *Browser) SetScreenshotNoise(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noisy == nil {
		b.noisy = map[string]bool{}
	}
	b.noisy[url] = true
}

// screenshotLocked is the screenshot step: a deterministic picture of the
// viewport (or of the target element's box), as the step's format, scale and
// quality say. It never scrolls.
func (b *Browser) screenshotLocked(t *tab, step browser.Step) (browser.ActResult, error) {
	w, h := ViewportWidth, ViewportHeight
	x0, y0 := 0, 0
	if step.Target != (browser.Target{}) {
		tg := step.Target
		if tg.Selector != "" {
			tg = browser.Target{Text: tg.Selector}
		}
		idx, err := b.locateLocked(t, tg)
		if err != nil {
			return browser.ActResult{}, err
		}
		y := elementHeight*idx - t.scrollY
		if y < 0 || y+elementHeight > viewport {
			return browser.ActResult{}, &browser.ActError{Reason: "target_not_found", Message: "the element is outside the viewport: scroll to it first (a Scroll step); a screenshot never scrolls"}
		}
		x0, y0, w, h = 10, y, 200, elementHeight
	}
	scale := step.Scale
	if scale <= 0 || scale > 1 {
		scale = 1
	}
	w, h = max(1, int(float64(w)*scale)), max(1, int(float64(h)*scale))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	noise := b.noisy[t.url]
	rnd := rand.New(rand.NewPCG(uint64(len(t.url)), uint64(t.epoch)))
	for y := range h {
		for x := range w {
			c := color.RGBA{uint8((x + x0) * 255 / ViewportWidth), uint8((y + y0) * 255 / ViewportHeight), uint8(t.epoch * 40), 255}
			if noise {
				v := rnd.Uint32()
				c = color.RGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	format := step.Format
	switch format {
	case browser.FormatJPEG:
		q := step.Quality
		if q <= 0 {
			q = 80
		}
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
			return browser.ActResult{}, err
		}
	default:
		format = browser.FormatPNG
		if err := png.Encode(&buf, img); err != nil {
			return browser.ActResult{}, err
		}
	}
	return browser.ActResult{Screenshot: browser.ScreenshotOf(format, buf.Bytes(), step.MaxBytes)}, nil
}
