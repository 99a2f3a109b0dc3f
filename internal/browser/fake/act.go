package fake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/keys"
)

// Element is an interactive element of a fake site's page (SetSite).
type Element struct {
	Role, Name string
	// Spawn, when set, is the url a click on the element opens in a new popup
	// window whose opener is the page (window.open, a mailto compose window).
	Spawn string
	// NoOpener makes the spawned page a tab without an opener (rel=noopener,
	// a download viewer): the driver attributes it to the running action.
	NoOpener bool
	// Tab makes the spawned page a tab next to the page, with the page as its
	// opener (a target=_blank link), instead of a popup window.
	Tab bool
	// Dialog, when set, is the JavaScript dialog a click on the element opens
	// (alert, confirm, prompt), left open for a dialog step.
	Dialog *Dialog
	// Navigate, when set, is the url a click loads in the page itself.
	Navigate string
	// Options makes the element a drop-down offering these labels (select).
	Options []string
	// File makes the element a file input (upload); Multiple lets it take
	// more than one file.
	File, Multiple bool
	// Hidden leaves the element out of observations and the outline (a
	// display:none node): it cannot be targeted either.
	Hidden bool
	// Text is the element's outline text (a field's value); for page text
	// (no Role) Node, when its Role is set, is the outline node as is.
	Text string
	Node browser.OutlineNode
}

// An Element with no Role is page text (Name is the text): it is in the outline
// only, never an interactive element.

// elementHeight is the height of every fake element; element i (0-based) sits
// at y = 40*i - scrollY, x = 10, 200 wide, in a 600-pixel viewport.
const (
	elementHeight = 40
	viewport      = 600
)

// SetSite gives every page at url (now and later) these elements, in order.
func (b *Browser) SetSite(url string, elements ...Element) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sites[url] = elements
}

// Typed returns what was typed into a page, and the keys pressed.
func (b *Browser) Typed(page string) (string, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tabs[page]; ok {
		return t.typed, append([]string(nil), t.pressed...)
	}
	return "", nil
}

// Rerender changes a page's DOM as a script would: coordinates read before are stale.
func (b *Browser) Rerender(page string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tabs[page]; ok {
		t.epoch++
	}
}

func (t *tab) document() string { return t.id + "/d" + strconv.FormatInt(t.doc, 10) }

func (b *Browser) visibleLocked(t *tab) []browser.Element {
	var out []browser.Element
	for i, e := range b.sites[t.url] {
		if e.Role == "" || e.Hidden {
			continue
		}
		y := elementHeight*i - t.scrollY
		if y < 0 || y+elementHeight > viewport {
			continue
		}
		out = append(out, browser.Element{ID: "e" + strconv.Itoa(i+1), Role: e.Role, Name: e.Name, X: 10, Y: y, Width: 200, Height: elementHeight})
	}
	return out
}

// Act implements browser.Browser over the fake sites' elements: observe lists the
// visible ones, clicks spawn or navigate as the element says, and refs, points
// and text targets are checked as the real drivers check them.
func (b *Browser) Act(ctx context.Context, req browser.ActRequest) (res browser.ActResult, err error) {
	step := req.Step
	if req.ClickSelector != "" {
		step = browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: req.ClickSelector}}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected {
		return browser.ActResult{}, browser.ErrNotConnected
	}
	t, ok := b.tabs[req.Page]
	if !ok {
		return browser.ActResult{}, browser.ErrNotFound
	}
	if err := b.ledger.MayAct(req.Owner, req.Page); err != nil {
		return browser.ActResult{}, err
	}
	if rf := b.dialogGateLocked(t, step); rf != nil {
		return browser.ActResult{}, rf
	}
	b.actKey, b.actPage, b.actSpawns = req.Key, req.Page, 0
	defer func() {
		res.Spawns = b.actSpawns
		b.actKey, b.actPage, b.actSpawns = "", "", 0
	}()
	switch step.Kind {
	case browser.StepObserve:
		els := b.visibleLocked(t)
		o := &browser.PageObservation{Document: t.document(), Epoch: t.epoch, URL: t.url, Title: t.title, ScrollY: t.scrollY, Elements: els}
		if max := step.MaxElements; max > 0 && len(els) > max {
			o.Elements, o.Truncated = els[:max], true
		}
		b.outlineLocked(t, o, step.OutlineOffset)
		return browser.ActResult{Observation: o}, nil
	case browser.StepNavigate:
		b.loadLocked(t, step.URL)
		return browser.ActResult{}, nil
	case browser.StepBack, browser.StepForward, browser.StepReload:
		return browser.ActResult{}, b.historyLocked(t, step.Kind)
	case browser.StepHover:
		tg := step.Target
		if tg.Selector != "" {
			// The fake's elements are named by what the suite selects (as ClickSelector).
			tg = browser.Target{Text: tg.Selector}
		}
		idx, err := b.locateLocked(t, tg)
		if err != nil {
			return browser.ActResult{}, err
		}
		t.hovered = b.sites[t.url][idx].Name
		return browser.ActResult{}, nil
	case browser.StepSelect:
		return browser.ActResult{}, b.selectLocked(t, step)
	case browser.StepUpload:
		return browser.ActResult{}, b.uploadLocked(t, step)
	case browser.StepDialog:
		b.answerLocked(t, step.Accept, step.Text)
		return browser.ActResult{}, nil
	case browser.StepFill:
		return browser.ActResult{}, b.fillLocked(t, step)
	case browser.StepScreenshot:
		return b.screenshotLocked(t, step)
	case browser.StepScroll:
		t.scrollY = max(0, t.scrollY+step.DeltaY)
		t.epoch++
		return browser.ActResult{}, nil
	case browser.StepClick, browser.StepType:
		idx := -1
		if step.Kind == browser.StepClick || step.Target != (browser.Target{}) {
			var err error
			if idx, err = b.locateLocked(t, step.Target); err != nil {
				return browser.ActResult{}, err
			}
		}
		if step.Kind == browser.StepType {
			t.typed += step.Text
			return browser.ActResult{}, nil
		}
		e := b.sites[t.url][idx]
		switch {
		case e.Spawn != "" && e.NoOpener:
			b.newTabLocked(t.window, e.Spawn, "")
		case e.Spawn != "" && e.Tab:
			b.newTabLocked(t.window, e.Spawn, t.id)
		case e.Spawn != "":
			b.newWindowLocked(e.Spawn, t.id, true)
		case e.Navigate != "":
			b.loadLocked(t, e.Navigate)
		case e.Dialog != nil:
			d := e.Dialog.Dialog
			t.dialog, t.shown = d.Type, &shownDialog{Dialog: d, from: e.Dialog, at: time.Now()}
			return browser.ActResult{Dialog: &d}, nil
		}
		return browser.ActResult{}, nil
	case browser.StepPress:
		// The drivers' one reading of a key (internal/browser/keys).
		if _, err := keys.Parse(step.Key, false); err != nil {
			return browser.ActResult{}, fmt.Errorf("act: %w", err)
		}
		t.pressed = append(t.pressed, step.Key)
		return browser.ActResult{}, nil
	case browser.StepWait:
		if step.Text == "" {
			b.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(step.Timeout):
			}
			b.mu.Lock()
			return browser.ActResult{}, ctx.Err()
		}
		if strings.Contains(t.title, step.Text) {
			return browser.ActResult{}, nil
		}
		for _, e := range b.sites[t.url] {
			if strings.Contains(e.Name, step.Text) {
				return browser.ActResult{}, nil
			}
		}
		return browser.ActResult{}, fmt.Errorf("wait: text %q did not appear on %s", step.Text, t.url)
	}
	return browser.ActResult{}, fmt.Errorf("fake: unknown step kind %q", step.Kind)
}

// ReportsSpawns implements browser.SpawnReporter: a click's spawn is created,
// and its event sent, before Act returns.
func (b *Browser) ReportsSpawns() bool { return true }

// locateLocked finds a target's element index on t's page, refusing as the real
// drivers do.
func (b *Browser) locateLocked(t *tab, tg browser.Target) (int, error) {
	site := b.sites[t.url]
	switch {
	case tg.Ref != "":
		i, err := strconv.Atoi(strings.TrimPrefix(tg.Ref, "e"))
		if tg.Document != t.document() || err != nil || i < 1 || i > len(site) {
			return 0, &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("ref %s is from document %s; the page now shows %s", tg.Ref, tg.Document, t.document())}
		}
		return i - 1, nil
	case tg.Point:
		if tg.Document != t.document() || tg.Epoch != t.epoch {
			return 0, &browser.ActError{Reason: "stale_coordinates", Message: "the page scrolled, navigated or re-rendered since the observation"}
		}
		for _, e := range b.visibleLocked(t) {
			if int(tg.X) >= e.X && int(tg.X) < e.X+e.Width && int(tg.Y) >= e.Y && int(tg.Y) < e.Y+e.Height {
				i, _ := strconv.Atoi(e.ID[1:])
				return i - 1, nil
			}
		}
		return 0, &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("no element at (%v, %v)", tg.X, tg.Y)}
	case tg.Text != "":
		vis := b.visibleLocked(t)
		var exact, contains []browser.Element
		for _, e := range vis {
			switch {
			case e.Name == tg.Text:
				exact = append(exact, e)
			case strings.Contains(e.Name, tg.Text):
				contains = append(contains, e)
			}
		}
		if len(exact) == 0 {
			exact = contains
		}
		switch len(exact) {
		case 0:
			return 0, &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("no visible element reads %q", tg.Text)}
		case 1:
			i, _ := strconv.Atoi(exact[0].ID[1:])
			return i - 1, nil
		}
		return 0, &browser.ActError{Reason: "ambiguous_target", Message: fmt.Sprintf("%d visible elements read %q", len(exact), tg.Text), Candidates: exact, Document: t.document(), Epoch: t.epoch}
	}
	return 0, &browser.ActError{Reason: "target_not_found", Message: "no target"}
}

// outlineLocked synthesizes the page's outline from its model: the title as a
// heading, then every element in order (not only the ones in the viewport), an
// interactive one with its id (a ref of the observation's document), text as a
// text node; hidden elements are left out. The chunk from offset is bounded
// like a real driver's.
func (b *Browser) outlineLocked(t *tab, o *browser.PageObservation, offset int) {
	var all []browser.OutlineNode
	depth := 0
	if t.title != "" {
		all = append(all, browser.OutlineNode{Role: "heading", Name: t.title, Level: 1})
		depth = 1
	}
	for i, e := range b.sites[t.url] {
		switch {
		case e.Hidden:
		case e.Role == "" && e.Node.Role != "":
			n := e.Node
			n.Depth += depth
			all = append(all, n)
		case e.Role == "":
			all = append(all, browser.OutlineNode{Depth: depth, Role: "text", Text: e.Name})
		default:
			all = append(all, browser.OutlineNode{Depth: depth, Role: e.Role, Name: e.Name, Text: e.Text, ID: "e" + strconv.Itoa(i+1)})
		}
	}
	offset = max(offset, 0)
	o.OutlineOffset = offset
	if offset >= len(all) {
		return
	}
	_, n := browser.FormatOutline(all[offset:], "o00000000000000", browser.OutlineChunkBytes)
	o.Outline = all[offset : offset+n]
	o.OutlineMore = offset+n < len(all)
}
