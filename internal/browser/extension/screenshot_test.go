package extension

import (
	"strings"
	"testing"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestScreenshotOverTheWire: a screenshot step carries its format (png by
// default), quality, scale and a size bound never above the API's, and its
// target as any step's (a ref of an earlier connection is stale here); the
// answer is checked against the step (format, data within the bound, a size
// alone only over it).
func TestScreenshotOverTheWire(t *testing.T) {
	ws, err := wireStepOf(browser.Step{Kind: browser.StepScreenshot}, 1)
	if err != nil || ws.Format != browser.FormatPNG || ws.MaxBytes != twv1.MaxScreenshotBytes || ws.Target != nil {
		t.Fatalf("wire step %+v, %v; want png, bound %d, no target", ws, err, twv1.MaxScreenshotBytes)
	}
	ws, err = wireStepOf(browser.Step{Kind: browser.StepScreenshot, Format: browser.FormatJPEG, Quality: 40, Scale: 0.5, MaxBytes: 10 << 20,
		Target: browser.Target{Ref: "e3", Document: "x1-d1"}}, 1)
	if err != nil || ws.Format != "jpeg" || ws.Quality != 40 || ws.Scale != 0.5 || ws.MaxBytes != twv1.MaxScreenshotBytes || ws.Target == nil || ws.Target.Document != "d1" {
		t.Fatalf("wire step %+v, %v", ws, err)
	}
	for _, st := range []browser.Step{
		{Kind: browser.StepScreenshot, Format: "gif"},
		{Kind: browser.StepScreenshot, Scale: 2},
		{Kind: browser.StepScreenshot, Quality: 101},
	} {
		if _, err := wireStepOf(st, 1); err == nil {
			t.Errorf("%+v: no error", st)
		}
	}
	if _, err := wireStepOf(browser.Step{Kind: browser.StepScreenshot, Target: browser.Target{Ref: "e3", Document: "x0-d1"}}, 1); err == nil || !strings.Contains(err.Error(), twv1.ReasonStaleRef) {
		t.Errorf("a ref of an earlier connection: %v, want stale_ref", err)
	}

	png := wireStep{Format: "png", MaxBytes: 10}
	if r, err := screenshotOf(browser.ActResult{}, &wireScreenshot{Format: "png", Size: 4, Data: []byte("abcd")}, png); err != nil || string(r.Screenshot.Data) != "abcd" {
		t.Errorf("an image within the bound: %+v, %v", r.Screenshot, err)
	}
	if r, err := screenshotOf(browser.ActResult{}, &wireScreenshot{Format: "png", Size: 12}, png); err != nil || !r.Screenshot.TooLarge() {
		t.Errorf("an image over the bound: %+v, %v; want its size only", r.Screenshot, err)
	}
	for what, s := range map[string]*wireScreenshot{
		"no screenshot":                nil,
		"another format":               {Format: "jpeg", Size: 4, Data: []byte("abcd")},
		"no data within the bound":     {Format: "png", Size: 4},
		"data over the bound":          {Format: "png", Size: 12, Data: []byte("abcdefghijkl")},
		"data of another size than it": {Format: "png", Size: 3, Data: []byte("abcd")},
	} {
		if _, err := screenshotOf(browser.ActResult{}, s, png); err == nil {
			t.Errorf("%s: no error", what)
		}
	}
}
