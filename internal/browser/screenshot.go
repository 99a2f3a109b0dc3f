package browser

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig reads JPEG
	_ "image/png"  // and PNG
)

// ReasonPageNotVisible refuses a screenshot of a page the browser does not
// show (a background tab): it draws no picture of it, and nothing is brought
// to the front to make it.
const ReasonPageNotVisible = "page_not_visible"

// ScreenshotOf is a driver's answer to a screenshot step whose image is data:
// without the data when it is larger than maxBytes (0: no bound).
func ScreenshotOf(format string, data []byte, maxBytes int) *Screenshot {
	s := &Screenshot{Format: format, Data: data, Size: len(data)}
	if maxBytes > 0 && len(data) > maxBytes {
		s.Data = nil
	}
	return s
}

// ImageConfig decodes an image's header: its format ("png" or "jpeg") and
// dimensions in pixels.
func ImageConfig(data []byte) (format string, width, height int, err error) {
	cfg, f, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", 0, 0, fmt.Errorf("screenshot: the image does not decode: %w", err)
	}
	return f, cfg.Width, cfg.Height, nil
}
