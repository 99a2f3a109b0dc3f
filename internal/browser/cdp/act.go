package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/keys"
)

// Actions.
//
// Every step runs over the driver's own DevTools session on the page (attached
// once, kept while the page and the connection live) with two kinds of calls
// only:
//
//   - the bundled page script (extension/page.js), evaluated once in an isolated
//     world of the page's main frame (Page.createIsolatedWorld, worldName
//     "tabwarden") and then only called as fn(op, args) with JSON data, by the
//     page function's object id (world.go, install): observe, locate, focus,
//     select, field, fillFocus, scroll, hasText, info, find (and frameInfo and
//     frameHit, called with Runtime.callFunctionOn on an <iframe> element the
//     browser named: frames.go, which also runs the script in worlds of
//     cross-origin frames). Never the page's world, never caller-supplied code.
//     The world is created once per document (keyed by the frame's loaderId) and
//     again when the browser says it is gone; its state (document id, render
//     epoch, element ids) dies with it, so a navigation, reload or reconnection
//     makes earlier refs and points stale.
//   - real input: Input.dispatchMouseEvent (press and release at the located
//     point, no mouse move, so that it works on a background tab),
//     Input.insertText, Input.dispatchKeyEvent, and Page.navigate.
//
// Nothing here activates a target or brings a page to the front.

const (
	// worldName names the isolated world the page script runs in.
	worldName = "tabwarden"
	// attributionLinger keeps a mutating step's entry registered after the
	// step returned, for its count of announcements (announced); what it
	// announced and no page answered is dropped as the input returns
	// (attribute), so the linger attributes nothing.
	attributionLinger = time.Second
	// waitPoll is how often a Wait step looks for its text.
	waitPoll = 100 * time.Millisecond
	// defaultWait and maxWait bound a Wait step.
	defaultWait = 10 * time.Second
	maxWait     = 30 * time.Second
	// navigateTimeout bounds the wait for a navigated document's load.
	navigateTimeout = 30 * time.Second
	// selectorGrace is how long a selector target (tests, ClickSelector) may take
	// to appear: a page that was just opened may not have parsed it yet.
	selectorGrace = 5 * time.Second
	// maxElements caps an observation (the API lists at most 500).
	maxElements = 500
)

// scriptArgs are the page script's arguments, as JSON data: World for every
// op, and the one field each op reads (observe Max, locate and focus Target,
// scroll DX and DY, hasText Text); the others ignore the rest.
type scriptArgs struct {
	World  string        `json:"world"`
	Max    int           `json:"max"`
	Target *scriptTarget `json:"target,omitempty"`
	DX     int           `json:"dx"`
	DY     int           `json:"dy"`
	Text   string        `json:"text"`
	// OutlineOffset and OutlineBytes: observe's outline chunk.
	OutlineOffset int `json:"outlineOffset,omitempty"`
	OutlineBytes  int `json:"outlineBytes,omitempty"`
	// Files: an upload's files (page.js upload).
	Files []scriptFile `json:"files,omitempty"`
	// Frames: observe numbers the frame nodes it cannot reach (frames.go).
	Frames bool `json:"frames,omitempty"`
	// X and Y: frameHit's point.
	X float64 `json:"x,omitempty"`
	Y float64 `json:"y,omitempty"`
	// NoFrames: locate refuses (reasonHasFrames) before it scrolls anything
	// when the page holds a frame element (locateTextAlongside).
	NoFrames bool `json:"noFrames,omitempty"`
}

// scriptTarget is a step's target for locate and focus: a ref (with its
// document), a point (with its document and epoch), a text or a selector.
type scriptTarget struct {
	Ref      string  `json:"ref,omitempty"`
	Point    bool    `json:"point,omitempty"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	Document string  `json:"document"`
	Epoch    int64   `json:"epoch"`
	Text     string  `json:"text,omitempty"`
	Selector string  `json:"selector,omitempty"`
}

// Act implements browser.Browser: one curated step on a page recorded under
// req.Owner, by real input events and the bundled page script only. A page the
// step's own input makes appear while a mutating step (navigate, click, type,
// press) runs is attributed to req.Key when the driver has the evidence
// attributionLocked asks for; an announcement no page answered by the time the
// input is answered is dropped (attribute).
func (b *Browser) Act(ctx context.Context, req browser.ActRequest) (browser.ActResult, error) {
	c, err := b.current()
	if err != nil {
		return browser.ActResult{}, err
	}
	if !b.has(req.Page) {
		return browser.ActResult{}, fmt.Errorf("page %s: %w", req.Page, browser.ErrNotFound)
	}
	if err := b.ledger.MayAct(req.Owner, req.Page); err != nil {
		return browser.ActResult{}, err
	}
	step := req.Step
	if req.ClickSelector != "" {
		step = browser.Step{Kind: browser.StepClick, Target: browser.Target{Selector: req.ClickSelector}}
	}
	if err := validStep(step); err != nil {
		return browser.ActResult{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	ps, err := b.session(ctx, c, req.Page)
	if err != nil {
		return browser.ActResult{}, err
	}
	defer ps.mu.Unlock()
	// A JavaScript dialog blocks the page: only a dialog step runs while one
	// shows, and only while one shows.
	if err := b.dialogGate(ps, step.Kind); err != nil {
		return browser.ActResult{}, err
	}
	if err := ps.enabled(ctx); err != nil {
		return browser.ActResult{}, err
	}
	if err := b.awaitCommit(ctx, ps, req.Page); err != nil {
		return browser.ActResult{}, err
	}
	ps.allow = req.FrameAllowed
	defer func() { ps.allow = nil }()

	// A mutating step registers its page's evidence: the Page.windowOpen events
	// the page fires while the step runs, counted for ActResult.Spawns and, with
	// a key, given to the new pages they announce (attributionLocked).
	entry := int64(0)
	switch step.Kind {
	case browser.StepNavigate, browser.StepClick, browser.StepType, browser.StepPress, browser.StepBack, browser.StepForward, browser.StepReload, browser.StepSelect, browser.StepFill, browser.StepDialog, browser.StepUpload:
		var done func()
		entry, done = b.attribute(req.Key, req.Page)
		defer done()
	}
	// A dialog the step's input opens cancels stepCtx: the call waiting on the
	// page would wait until it is answered.
	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.beginStep(ps, cancel)
	res, err := b.step(stepCtx, ps, step)
	if entry != 0 {
		// The step's last command has been answered: every event the browser
		// sent before that reply has been handled (the reader hands events over
		// in order, before the replies that follow them), and an input event is
		// answered once the renderer handled it, so a window.open in a click
		// handler, a target=_blank link or form has announced its page by now.
		res.Spawns = b.announced(entry)
	}
	if d := b.endStep(ps); d != nil {
		// The step ran up to the input that made the page open d, which is
		// left for a dialog step.
		res.Dialog = d
		if err == nil || (stepCtx.Err() != nil && ctx.Err() == nil) {
			err = nil
		}
	}
	if err != nil && wire.IsGone(err) {
		b.dropSession(c, ps.id)
		if !b.has(req.Page) {
			return res, fmt.Errorf("page %s: %w", req.Page, browser.ErrNotFound)
		}
	}
	return res, err
}

// attribute registers a step keyed key on page as the evidence attribution
// looks for (attributionLocked; an empty key attributes nothing, and only
// counts the page's announcements); the returned func unregisters it after
// attributionLinger.
func (b *Browser) attribute(key, page string) (int64, func()) {
	b.mu.Lock()
	b.actSeq++
	entry := actEntry{key: key, id: b.actSeq, page: page, running: true}
	if t, ok := b.targets[page]; ok {
		entry.ctx = t.info.BrowserContextID
	}
	b.acts = append(b.acts, entry)
	b.mu.Unlock()
	return entry.id, func() {
		b.mu.Lock()
		for i := range b.acts {
			if b.acts[i].id == entry.id {
				b.acts[i].running = false // its input is done: later windowOpens are not its
				// Nor are the announcements no page answered by now. A page the
				// step's input opens is created before that input is answered
				// (window.open, a target=_blank link or form: Chromium creates
				// it inside the renderer's synchronous request for it, and
				// reports targetCreated before the input's reply), so what is
				// left was never created: a popup the blocker stopped (a second
				// window.open of one click), or a page that fired windowOpen
				// for nothing. Kept, it would hand the next page without an
				// opener in the context (the user's own new tab) to the step
				// for as long as the entry lingers: a time window, not proof.
				b.acts[i].opens, b.acts[i].navOpens = 0, 0
			}
		}
		b.mu.Unlock()
		time.AfterFunc(attributionLinger, func() {
			b.mu.Lock()
			b.acts = slices.DeleteFunc(b.acts, func(e actEntry) bool { return e.id == entry.id })
			b.mu.Unlock()
		})
	}
}

// announced is how many Page.windowOpen events the page of the step
// registered as id fired so far.
func (b *Browser) announced(id int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.acts {
		if e.id == id {
			return e.announced
		}
	}
	return 0
}

// ReportsSpawns implements browser.SpawnReporter: Act counts the
// Page.windowOpen events of the acted-on page in ActResult.Spawns.
func (b *Browser) ReportsSpawns() bool { return true }

// validStep checks a step's fields before anything touches the page.
func validStep(s browser.Step) error {
	switch s.Kind {
	case browser.StepObserve, browser.StepScroll:
		return nil
	case browser.StepBack, browser.StepForward, browser.StepReload:
		return nil
	case browser.StepDialog:
		if !s.Accept && s.Text != "" {
			return errors.New("act: a dialog step's Text answers a prompt, so it goes with Accept only")
		}
		return nil
	case browser.StepSelect:
		if s.Target == (browser.Target{}) || s.Text == "" {
			return errors.New(`act: a select needs a target and Text, for example Step{Kind: "select", Target: Target{Ref: "e5", Document: obs.Document}, Text: "Canada"}`)
		}
		return nil
	case browser.StepUpload:
		return browser.ValidUpload(s)
	case browser.StepFill:
		if len(s.Fields) == 0 {
			return errors.New(`act: a fill needs Fields, for example Step{Kind: "fill", Fields: []FillField{{Target: Target{Text: "Name"}, Text: "Ada"}}}`)
		}
		for i, f := range s.Fields {
			if f.Target == (browser.Target{}) || f.Text == "" {
				return fmt.Errorf("act: field %d of a fill needs a target and Text", i)
			}
		}
		return nil
	case browser.StepScreenshot:
		return validShot(s)
	case browser.StepHover:
		if s.Target == (browser.Target{}) {
			return errors.New(`act: a hover needs a target, for example Target{Ref: "e12", Document: obs.Document} or Target{Text: "Menu"}`)
		}
		return nil
	case browser.StepNavigate:
		return validURL(s.URL)
	case browser.StepClick:
		if s.Target == (browser.Target{}) {
			return errors.New(`act: a click needs a target, for example Target{Ref: "e12", Document: obs.Document} or Target{Text: "Send"}`)
		}
		return nil
	case browser.StepType:
		if s.Text == "" {
			return errors.New(`act: a type step needs Text, for example Step{Kind: "type", Target: Target{Ref: "e4", Document: obs.Document}, Text: "Ada"}`)
		}
		return nil
	case browser.StepPress:
		if _, err := keys.Parse(s.Key, false); err != nil {
			return fmt.Errorf("act: %w", err)
		}
		return nil
	case browser.StepWait:
		if s.Timeout > maxWait {
			return fmt.Errorf("act: a wait lasts at most %v, not %v", maxWait, s.Timeout)
		}
		if s.Text == "" && s.Timeout <= 0 {
			return errors.New(`act: a wait needs Text to wait for or a Timeout, for example Step{Kind: "wait", Text: "Saved"}`)
		}
		return nil
	}
	return fmt.Errorf("act: unknown step kind %q (observe, navigate, click, type, press, scroll or wait)", s.Kind)
}

// validURL allows http, https and about:blank.
func validURL(raw string) error {
	if raw == "about:blank" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("act: navigate to %q: the url must be http(s) or about:blank, for example https://example.com/form", raw)
	}
	return nil
}

// step runs one validated step on ps.
func (b *Browser) step(ctx context.Context, ps *pageSession, s browser.Step) (browser.ActResult, error) {
	switch s.Kind {
	case browser.StepObserve:
		max := s.MaxElements
		if max <= 0 {
			max = 200
		}
		max = min(max, maxElements)
		args := scriptArgs{Max: max, OutlineOffset: s.OutlineOffset, OutlineBytes: browser.OutlineChunkBytes}
		if b.hasFrames(ctx, ps) {
			o, err := b.observeFrames(ctx, ps, args, ps.allow)
			if err != nil {
				return browser.ActResult{}, err
			}
			return browser.ActResult{Observation: o}, nil
		}
		var o browser.PageObservation
		if err := b.run(ctx, ps, "observe", args, &o); err != nil {
			return browser.ActResult{}, err
		}
		return browser.ActResult{Observation: &o}, nil
	case browser.StepNavigate:
		return browser.ActResult{}, b.navigateStep(ctx, ps, s.URL)
	case browser.StepClick:
		session, p, err := b.locateIn(ctx, ps, "locate", s.Target)
		if err != nil {
			return browser.ActResult{}, err
		}
		return browser.ActResult{}, pressRelease(ctx, ps.c, session, p.X, p.Y)
	case browser.StepType:
		if s.Target != (browser.Target{}) {
			if _, _, err := b.locateIn(ctx, ps, "focus", s.Target); err != nil {
				return browser.ActResult{}, err
			}
		}
		_, err := call(ctx, ps.c, ps.id, wire.InsertText{Text: s.Text})
		return browser.ActResult{}, err
	case browser.StepPress:
		k, err := keys.Parse(s.Key, ps.mac)
		if err != nil {
			return browser.ActResult{}, fmt.Errorf("act: %w", err)
		}
		return browser.ActResult{}, press(ctx, ps.c, ps.id, k)
	case browser.StepScroll:
		var out struct{}
		return browser.ActResult{}, b.run(ctx, ps, "scroll", scriptArgs{DX: s.DeltaX, DY: s.DeltaY}, &out)
	case browser.StepWait:
		return browser.ActResult{}, b.wait(ctx, ps, s)
	case browser.StepBack, browser.StepForward, browser.StepReload:
		return browser.ActResult{}, b.historyStep(ctx, ps, s.Kind)
	case browser.StepHover:
		return browser.ActResult{}, b.hoverStep(ctx, ps, s.Target)
	case browser.StepSelect:
		return browser.ActResult{}, b.selectStep(ctx, ps, s.Target, s.Text)
	case browser.StepFill:
		return browser.ActResult{}, b.fillStep(ctx, ps, s.Fields)
	case browser.StepUpload:
		return browser.ActResult{}, b.uploadStep(ctx, ps, s.Target, s.Files)
	case browser.StepDialog:
		return browser.ActResult{}, b.answer(ctx, ps, s.Accept, s.Text)
	case browser.StepScreenshot:
		return b.screenshotStep(ctx, ps, s)
	}
	return browser.ActResult{}, fmt.Errorf("act: unknown step kind %q", s.Kind)
}

type point struct {
	X, Y float64
}

// locate runs locate (or focus) for a target; main is the page's main frame
// as just read (nil: not read; see runRead). Selector targets may take
// selectorGrace to appear (a page that was just opened).
func (b *Browser) locate(ctx context.Context, ps *pageSession, op string, t browser.Target, main *wire.Frame) (point, error) {
	args := scriptArgs{Target: targetArgs(t)}
	deadline := time.Now().Add(selectorGrace)
	for {
		var p point
		err := b.runRead(ctx, ps, main, op, args, &p)
		main = nil // a retry reads the tree again
		var ae *browser.ActError
		retry := t.Selector != "" && time.Now().Before(deadline) &&
			((errors.As(err, &ae) && ae.Reason == "target_not_found") || worldGone(err))
		if !retry {
			return p, err
		}
		select {
		case <-ctx.Done():
			return p, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// locateIn runs locate (or focus, field, fillFocus, select) for a target in
// the world it belongs to (frames.go: the page's, or a frame's the driver
// reaches) and returns where input at the target goes: a session and a point
// of that session's viewport.
func (b *Browser) locateIn(ctx context.Context, ps *pageSession, op string, t browser.Target) (string, point, error) {
	return b.locateText(ctx, ps, op, t, "")
}

func (b *Browser) locateText(ctx context.Context, ps *pageSession, op string, t browser.Target, text string) (string, point, error) {
	return b.locateArgs(ctx, ps, op, t, scriptArgs{Text: text})
}

// locateArgs is locateText with the op's other arguments (an upload's files);
// args.Target is set from t as routed.
func (b *Browser) locateArgs(ctx context.Context, ps *pageSession, op string, t browser.Target, args scriptArgs) (string, point, error) {
	if p, ok, err := b.locateTextAlongside(ctx, ps, op, t, args); ok {
		return ps.id, p, err
	}
	r, _, err := b.routeTarget(ctx, ps, t, ps.allow)
	if err != nil {
		return "", point{}, err
	}
	args.Target = targetArgs(r.target)
	if r.world.fw == nil {
		if op == "locate" || op == "focus" {
			p, err := b.locate(ctx, ps, op, r.target, r.main)
			return ps.id, p, err
		}
		var p point
		err := b.runRead(ctx, ps, r.main, op, args, &p)
		return ps.id, p, err
	}
	var p point
	if err := b.runIn(ctx, ps, r.world, op, args, &p); err != nil {
		return "", point{}, err
	}
	return b.framePoint(ctx, ps, r.world.fw, p.X, p.Y)
}

// locateTextAlongside locates a text target in one round trip when the page
// has a world already and no frame of another process: the frame tree is read
// alongside the page world's call (readAlongsideTree), which tells that the
// world is the page's document and whether the page has frames, where
// routeTarget would read the tree first (a text target is looked for in every
// world of a page with frames). ok false: not answered here (the page has
// frames, another document or no world yet); the caller routes the target.
func (b *Browser) locateTextAlongside(ctx context.Context, ps *pageSession, op string, t browser.Target, args scriptArgs) (point, bool, error) {
	if t.Text == "" || t.Ref != "" || op != "locate" || ps.fn == "" || b.hasChildSessions(ps) {
		return point{}, false, nil
	}
	// Sent before the driver knows whether the page has frames, locate must
	// not scroll a page whose target is looked for in every frame: it refuses
	// first when the page holds a frame element (page.js hasFrame).
	args.Target, args.NoFrames = targetArgs(t), true
	var raw json.RawMessage
	called, frames, err := b.readAlongsideTree(ctx, ps, op, args, &raw)
	if frames || (err == nil && !called) {
		return point{}, false, nil
	}
	var probe struct {
		Error *scriptError `json:"error"`
	}
	if err == nil && json.Unmarshal(raw, &probe) == nil && probe.Error != nil && probe.Error.Reason == reasonHasFrames {
		return point{}, false, nil
	}
	var p point
	if err == nil {
		if err = decodeScript(op, raw, &p); errors.Is(err, errWorldMismatch) {
			ps.world, ps.fn = 0, ""
			return point{}, false, nil
		}
	} else if worldGone(err) {
		ps.world, ps.fn = 0, ""
		return point{}, false, nil
	}
	return p, true, err
}

func targetArgs(t browser.Target) *scriptTarget {
	switch {
	case t.Ref != "":
		return &scriptTarget{Ref: t.Ref, Document: t.Document}
	case t.Point:
		return &scriptTarget{Point: true, X: t.X, Y: t.Y, Document: t.Document, Epoch: t.Epoch}
	case t.Text != "":
		return &scriptTarget{Text: t.Text}
	}
	return &scriptTarget{Selector: t.Selector}
}

// pressRelease is a real left click at x, y: press and release only (a mouse
// move to a background tab waits for a frame that never comes). The release
// goes out right behind the press (the session's input is handled in order):
// one round trip to the browser for the click, not two.
func pressRelease(ctx context.Context, c *wire.Conn, sess string, x, y float64) error {
	press := send(c, sess, wire.DispatchMouseEvent{Type: wire.MousePressed, X: x, Y: y, Button: wire.ButtonLeft, Buttons: 1, ClickCount: 1})
	_, rerr := call(ctx, c, sess, wire.DispatchMouseEvent{Type: wire.MouseReleased, X: x, Y: y, Button: wire.ButtonLeft, Buttons: 0, ClickCount: 1})
	if _, err := press(ctx); err != nil {
		return err
	}
	return rerr
}

// navigateStep loads u in the page and waits for the new document's load.
func (b *Browser) navigateStep(ctx context.Context, ps *pageSession, u string) error {
	r, err := call(ctx, ps.c, ps.id, wire.Navigate{URL: u})
	if err != nil {
		return err
	}
	if r.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", u, r.ErrorText)
	}
	if r.LoaderID == "" {
		return nil // same document (a fragment)
	}
	deadline := time.Now().Add(navigateTimeout)
	for {
		var info struct {
			ReadyState string `json:"readyState"`
		}
		err := b.run(ctx, ps, "info", scriptArgs{}, &info)
		if err == nil && ps.loader == r.LoaderID && info.ReadyState == "complete" {
			return nil
		}
		if err != nil && !worldGone(err) && !wire.IsGone(err) {
			return err
		}
		if time.Now().After(deadline) {
			if err == nil && ps.loader == r.LoaderID && info.ReadyState == "interactive" {
				return nil // loaded, but a resource never finished
			}
			return fmt.Errorf("navigate to %s: the page did not load within %v", u, navigateTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("navigate to %s: %w", u, ctx.Err())
		case <-time.After(waitPoll):
		}
	}
}

// wait polls for text every waitPoll until the step's timeout, or sleeps the
// timeout when there is no text.
func (b *Browser) wait(ctx context.Context, ps *pageSession, s browser.Step) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = defaultWait
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if s.Text == "" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		}
	}
	for {
		var r struct {
			Found bool `json:"found"`
		}
		err := b.run(ctx, ps, "hasText", scriptArgs{Text: s.Text}, &r)
		if err == nil && r.Found {
			return nil
		}
		if err != nil && !worldGone(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("wait: the text %q did not appear within %v", s.Text, timeout)
		case <-time.After(waitPoll):
		}
	}
}

// press sends keyDown (with the text it types) and keyUp of a key parsed by
// internal/browser/keys (the focus guard's reading too).
func press(ctx context.Context, c *wire.Conn, sess string, k keys.Chord) error {
	down := wire.DispatchKeyEvent{Type: "rawKeyDown", Key: k.Key, Code: k.Code, WindowsVirtualKeyCode: k.KeyCode, NativeVirtualKeyCode: k.KeyCode, Modifiers: k.Modifiers}
	if k.Text != "" {
		down.Type, down.Text, down.UnmodifiedText = "keyDown", k.Text, k.Text
	}
	if _, err := call(ctx, c, sess, down); err != nil {
		return err
	}
	_, err := call(ctx, c, sess, wire.DispatchKeyEvent{Type: "keyUp", Key: k.Key, Code: k.Code, WindowsVirtualKeyCode: k.KeyCode, NativeVirtualKeyCode: k.KeyCode, Modifiers: k.Modifiers})
	return err
}

// commitWait bounds how long a step waits for a page an Open just created to
// commit its url's document (awaitCommit).
const commitWait = 10 * time.Second

// awaitCommit holds a step on a page an Open created until the page has
// committed a document of its url: Open returns before that (leaveMarker), and
// no step may run on the marker's empty document, whose url holds the nonce
// that proves the page the driver's. The page's main frame, read from the
// page, is the truth (its Page.frameNavigated also ends the wait, and may have
// been missed across a reconnect).
func (b *Browser) awaitCommit(ctx context.Context, ps *pageSession, page string) error {
	deadline := time.Now().Add(commitWait)
	for {
		b.mu.Lock()
		t := b.targets[page]
		marker, refused := "", ""
		if t != nil {
			marker = t.marker
			if e := b.leavingLocked(t); e != nil {
				refused = e.refused // set only once createTarget answered with this page
			}
		}
		b.mu.Unlock()
		if marker == "" {
			return nil
		}
		if refused != "" {
			return fmt.Errorf("page %s: Chromium refused to load its url (%s); it stays blank, close it and open again", page, refused)
		}
		r, err := call(ctx, ps.c, ps.id, wire.GetFrameTree{})
		if err != nil {
			return err
		}
		if u := r.FrameTree.Frame.URL; u != "" && u != marker {
			b.mu.Lock()
			if t := b.targets[page]; t != nil && t.marker == marker {
				b.committedLocked(t)
			}
			b.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("page %s has not loaded its url within %v of its open: try the step again", page, commitWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
