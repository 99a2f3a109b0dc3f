package browsertest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Screens is implemented by every world: it reads, as the browser lays the
// page out (not through the driver under test), the page's viewport and the
// box of the one element selector names, in device pixels.
type Screens interface {
	Viewport(t testing.TB, id string) (width, height int)
	Box(t testing.TB, id, selector string) (width, height int)
}

// Screenshot takes the viewport and one element of a background tab, as PNG
// and JPEG and at half the scale: each decodes as its format, at the size the
// browser lays out; an image over MaxBytes comes back without its data; a
// target not on the page is refused (target_not_found); and the background
// tab stays in the background (nothing is focused or activated).
func testScreenshot(t *testing.T, e *env) {
	sc, ok := e.w.(Screens)
	if !ok {
		t.Fatal("the world reads no viewport (browsertest.Screens): every world must")
	}
	win, user := e.userWindow(1)
	// A page in a window of its own: shown, and so drawn.
	p := e.open(browser.OpenRequest{Key: "k", NewWindow: true})
	shootOn := func(page string, s browser.Step) (*browser.Screenshot, error) {
		s.Kind = browser.StepScreenshot
		r, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: page, Step: s})
		if err == nil && r.Screenshot == nil {
			err = errors.New("no screenshot in the result")
		}
		return r.Screenshot, err
	}
	shoot := func(s browser.Step) (*browser.Screenshot, error) { return shootOn(p.ID, s) }
	link := browser.Target{Selector: ActSpawnSelector}
	var shot *browser.Screenshot
	e.eventually("a screenshot of "+ActSpawnSelector, func() error {
		// A page that was just opened may not have parsed the link yet.
		var err error
		shot, err = shoot(browser.Step{Format: browser.FormatPNG, Target: link})
		return err
	})
	near := func(got, want int) bool { return got >= want-1 && got <= want+1 }
	check := func(what string, s *browser.Screenshot, format string, w, h int) {
		t.Helper()
		f, gw, gh, err := browser.ImageConfig(s.Data)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if f != format || s.Format != format || s.Size != len(s.Data) {
			t.Errorf("%s: a %s image said to be %s, size %d (%d bytes)", what, f, s.Format, s.Size, len(s.Data))
		}
		if !near(gw, w) || !near(gh, h) {
			t.Errorf("%s: %dx%d, want %dx%d", what, gw, gh, w, h)
		}
	}
	bw, bh := sc.Box(t, p.ID, ActSpawnSelector)
	check("the link as PNG", shot, browser.FormatPNG, bw, bh)
	vw, vh := sc.Viewport(t, p.ID)
	if bw >= vw || bh >= vh {
		t.Fatalf("the link's box %dx%d is not inside the %dx%d viewport", bw, bh, vw, vh)
	}
	// A viewport shot is the viewport as it is when the shot is taken, which
	// the browser's own UI may change meanwhile (the extension's debugger bar
	// comes and goes with a step's attach, and takes the top of the window):
	// the shot must match the viewport measured around it, once that holds
	// still.
	viewportShot := func(what string, step browser.Step, format string, div int) {
		t.Helper()
		e.eventually(what, func() error {
			w0, h0 := sc.Viewport(t, p.ID)
			s, err := shoot(step)
			if err != nil {
				return err
			}
			w1, h1 := sc.Viewport(t, p.ID)
			if w0 != w1 || h0 != h1 {
				return fmt.Errorf("the viewport changed during the shot: %dx%d, then %dx%d", w0, h0, w1, h1)
			}
			f, gw, gh, err := browser.ImageConfig(s.Data)
			if err != nil {
				return err
			}
			if f != format || s.Format != format || s.Size != len(s.Data) {
				t.Errorf("%s: a %s image said to be %s, size %d (%d bytes)", what, f, s.Format, s.Size, len(s.Data))
			}
			if !near(gw, w0/div) || !near(gh, h0/div) {
				return fmt.Errorf("%dx%d, want %dx%d", gw, gh, w0/div, h0/div)
			}
			return nil
		})
	}
	viewportShot("the viewport (png by default)", browser.Step{}, browser.FormatPNG, 1)
	viewportShot("the viewport as JPEG", browser.Step{Format: browser.FormatJPEG, Quality: 50}, browser.FormatJPEG, 1)
	s, err := shoot(browser.Step{Format: browser.FormatJPEG, Target: link})
	noErr(t, "the link as JPEG", err)
	check("the link as JPEG", s, browser.FormatJPEG, bw, bh)
	viewportShot("the viewport at half the scale", browser.Step{Format: browser.FormatJPEG, Quality: 50, Scale: 0.5}, browser.FormatJPEG, 2)

	s, err = shoot(browser.Step{MaxBytes: 100})
	noErr(t, "a viewport over 100 bytes", err)
	if !s.TooLarge() || s.Size <= 100 {
		t.Errorf("a viewport over 100 bytes came back with %d bytes of data, size %d: want no data, its size", len(s.Data), s.Size)
	}
	_, err = shoot(browser.Step{Target: browser.Target{Text: "no element reads this"}})
	var ae *browser.ActError
	if !errors.As(err, &ae) || ae.Reason != "target_not_found" {
		t.Fatalf("a screenshot of nothing: %v, want target_not_found", err)
	}
	if f, ok := e.w.(Focus); ok {
		// A background tab is not drawn: refused, and left in the background
		// (bringing it to the front would take the user's focus).
		bg := e.open(browser.OpenRequest{Key: "bg", WindowID: win})
		e.eventually("a screenshot of a background tab is refused", func() error {
			r, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "bg", Page: bg.ID, Step: browser.Step{Kind: browser.StepScreenshot}})
			if !errors.As(err, &ae) || ae.Reason != browser.ReasonPageNotVisible {
				return fmt.Errorf("%v (%+v), want %s", err, r.Screenshot, browser.ReasonPageNotVisible)
			}
			return nil
		})
		if !f.Visible(t, user[0]) {
			t.Error("the user's tab is no longer the visible tab of its window after a screenshot")
		}
		if bg.WindowID == win && f.Visible(t, bg.ID) {
			t.Error("the background tab became visible")
		}
	}
	t.Logf("viewport %dx%d, link %dx%d", vw, vh, bw, bh)
}
