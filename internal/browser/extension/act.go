package extension

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// Bounds of what an act sends and accepts (docs/extension-protocol.md "act").
const (
	maxCandidates  = 32
	maxObserved    = 1000
	maxActText     = 10_000
	maxActURL      = 8192
	maxWait        = 2 * time.Minute
	maxElementName = 512
	// maxOutlineNodes and maxOutlineOffset bound an observation's outline.
	maxOutlineNodes  = 5000
	maxOutlineOffset = 1_000_000
	// maxFrameChecks and maxFrameURL bound an act's frameCheck answer.
	maxFrameChecks = 64
	maxFrameURL    = 8192
)

// guardReasons are the act refusals that are the page's state, returned as
// *browser.ActError.
// url_not_allowed: an element of a frame the url policy refuses
// (ActRequest.FrameAllowed).
var guardReasons = map[string]bool{
	twv1.ReasonURLNotAllowed:    true,
	twv1.ReasonStaleRef:         true,
	twv1.ReasonStaleCoordinates: true,
	twv1.ReasonAmbiguousTarget:  true,
	twv1.ReasonTargetNotFound:   true,
	twv1.ReasonNoHistory:        true,
	twv1.ReasonDialogOpen:       true,
	twv1.ReasonNoDialog:         true,

	twv1.ReasonPageNotVisible: true,
}

// Act implements browser.Browser with the `act` command: the extension checks that
// the tab is recorded under req.Owner (ErrNotOwned otherwise; ErrNotFound when the
// owner's tab is gone) and runs the step with real input through chrome.debugger,
// evaluating nothing but its bundled page script. Pages that appear without an
// opener while the step runs (and briefly after) are reported with Attributed =
// req.Key, and Adopt with Parent req.Key accepts them.
//
// Documents are scoped to the extension connection: an observation's Document is
// "x<epoch>-<page document>", and a ref or point from an earlier connection is
// refused here (stale_ref, stale_coordinates) without reaching the page.
func (d *Driver) Act(ctx context.Context, req browser.ActRequest) (browser.ActResult, error) {
	h := d.h
	if req.Owner == "" {
		return browser.ActResult{}, fmt.Errorf("extension act: an owner is required (the key the page is recorded under): %w", browser.ErrNotOwned)
	}
	tid, ok := parseID(req.Page)
	if !ok {
		return browser.ActResult{}, fmt.Errorf("extension act: page %q: %w", req.Page, browser.ErrNotFound)
	}
	step := req.Step
	if req.ClickSelector != "" {
		step = browser.Step{Kind: browser.StepClick, Target: browser.Target{Selector: req.ClickSelector}}
	}
	h.mu.Lock()
	s := h.sess
	h.mu.Unlock()
	if s == nil {
		return browser.ActResult{}, fmt.Errorf("extension act: %w", browser.ErrNotConnected)
	}
	ws, err := wireStepOf(step, s.epoch)
	if err != nil {
		return browser.ActResult{}, err
	}
	// A wait runs in the extension for up to its timeout: the command's deadline
	// covers it.
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.opts.CommandTimeout+step.Timeout)
		defer cancel()
	}
	var r actResult
	args := actArgs{Key: req.Key, Owner: req.Owner, TabID: tid, Step: ws}
	if req.FrameAllowed != nil {
		args.Frames = &wireFramePolicy{Allowed: []string{}, Refused: []string{}}
	}
	var sent *session
	for try := 0; ; try++ {
		r = actResult{}
		sent, err = h.commandOn(ctx, "act", args, &r)
		if err != nil || len(r.FrameCheck) == 0 {
			break
		}
		// Frames the url policy has not answered for: ask it, and act again.
		if try >= 3 || args.Frames == nil || len(r.FrameCheck) > maxFrameChecks {
			return browser.ActResult{}, fmt.Errorf("extension act: the page's frames kept changing under the url policy's check (%d urls)", len(r.FrameCheck))
		}
		for _, u := range r.FrameCheck {
			if len(u) > maxFrameURL {
				return browser.ActResult{}, fmt.Errorf("extension act: a frame url of %d bytes", len(u))
			}
			if req.FrameAllowed(u) == nil {
				args.Frames.Allowed = append(args.Frames.Allowed, u)
			} else {
				args.Frames.Refused = append(args.Frames.Refused, u)
			}
		}
	}
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && guardReasons[ce.Reason] {
			ae := &browser.ActError{Reason: ce.Reason, Message: ce.Message, Candidates: ce.Candidates}
			if len(ce.Candidates) > 0 && ce.Document != "" {
				// The candidates' ids are refs of this connection's view of the page.
				ae.Document, ae.Epoch = docPrefix(sent.epoch)+ce.Document, ce.Epoch
			}
			return browser.ActResult{}, ae
		}
		return browser.ActResult{}, err
	}
	res := browser.ActResult{SpawnsUnknown: r.Spawns == nil}
	if r.Spawns != nil {
		if *r.Spawns < 0 || *r.Spawns > 1000 {
			return browser.ActResult{}, fmt.Errorf("extension act: spawns %d is out of range", *r.Spawns)
		}
		res.Spawns = *r.Spawns
	}
	if d := r.Dialog; d != nil {
		if d.Type != "alert" && d.Type != "confirm" && d.Type != "prompt" {
			return browser.ActResult{}, fmt.Errorf("extension act: dialog type %q is none of alert, confirm, prompt", d.Type)
		}
		res.Dialog = &browser.Dialog{Type: d.Type, Message: clipString(d.Message, maxDialogText), DefaultPrompt: clipString(d.DefaultPrompt, maxDialogText)}
	}
	if step.Kind == browser.StepScreenshot {
		return screenshotOf(res, r.Screenshot, ws)
	}
	if r.Observation == nil {
		if step.Kind == browser.StepObserve {
			return browser.ActResult{}, errors.New("extension act: observe answered without an observation")
		}
		return res, nil
	}
	res.Observation = r.Observation.seam(sent.epoch)
	return res, nil
}

// ReportsSpawns implements browser.SpawnReporter: the extension counts the
// Page.windowOpen events of the acted-on tab on the step's debugger session
// (ActResult.Spawns; SpawnsUnknown for a step run without one).
func (d *Driver) ReportsSpawns() bool { return true }

// docPrefix scopes a page document id to the connection that observed it.
func docPrefix(epoch int64) string { return "x" + strconv.FormatInt(epoch, 10) + "-" }

// pageDocument strips the connection prefix of a document id of this connection;
// ok is false for a document of another connection (or not ours at all).
func pageDocument(doc string, epoch int64) (string, bool) {
	rest, ok := strings.CutPrefix(doc, docPrefix(epoch))
	return rest, ok && rest != ""
}

// wireStepOf checks a step and turns it into the command's step. A ref or point
// of an earlier connection is refused here as the guard the page would name.
func wireStepOf(st browser.Step, epoch int64) (wireStep, error) {
	ws := wireStep{Kind: string(st.Kind)}
	bad := func(format string, args ...any) (wireStep, error) {
		return wireStep{}, fmt.Errorf("extension act: "+format, args...)
	}
	switch st.Kind {
	case browser.StepObserve:
		if st.MaxElements < 0 || st.MaxElements > maxObserved {
			return bad("maxElements %d is out of range; give 1-%d (0 means 200)", st.MaxElements, maxObserved)
		}
		ws.MaxElements = st.MaxElements
		if st.OutlineOffset < 0 || st.OutlineOffset > maxOutlineOffset {
			return bad("outlineOffset %d is out of range; give 0-%d", st.OutlineOffset, maxOutlineOffset)
		}
		ws.OutlineOffset = st.OutlineOffset
	case browser.StepNavigate:
		if st.URL == "" || len(st.URL) > maxActURL {
			return bad("navigate needs a url (http(s) or about:blank, at most %d characters)", maxActURL)
		}
		ws.URL = st.URL
	case browser.StepClick, browser.StepType, browser.StepHover, browser.StepSelect:
		if st.Kind == browser.StepType || st.Kind == browser.StepSelect {
			if st.Text == "" || len(st.Text) > maxActText {
				return bad("%s needs text (at most %d characters)", st.Kind, maxActText)
			}
			ws.Text = st.Text
		}
		if st.Target == (browser.Target{}) {
			if st.Kind != browser.StepType {
				return bad("%s needs a target: a ref with its document, a text, a selector, or a point", st.Kind)
			}
			break
		}
		t, err := wireTargetOf(st.Target, epoch)
		if err != nil {
			return wireStep{}, err
		}
		ws.Target = t
	case browser.StepUpload:
		if err := browser.ValidUpload(st); err != nil {
			return wireStep{}, err
		}
		if len(st.Files) > maxUploadFiles {
			return bad("upload takes at most %d files", maxUploadFiles)
		}
		t, err := wireTargetOf(st.Target, epoch)
		if err != nil {
			return wireStep{}, err
		}
		ws.Target = t
		for _, f := range st.Files {
			ws.Files = append(ws.Files, wireFile{Name: f.Name, Type: f.Type, LastModified: f.LastModified, Data: f.Data})
		}
	case browser.StepFill:
		if len(st.Fields) == 0 || len(st.Fields) > maxFillFields {
			return bad("fill needs 1-%d fields, each a target and its text", maxFillFields)
		}
		for i, f := range st.Fields {
			if f.Target == (browser.Target{}) || f.Text == "" || len(f.Text) > maxActText {
				return bad("field %d of a fill needs a target and text (at most %d characters)", i, maxActText)
			}
			t, err := wireTargetOf(f.Target, epoch)
			if err != nil {
				return wireStep{}, browser.FieldError(i, err, browser.FilledBefore(0))
			}
			ws.Fields = append(ws.Fields, wireField{Target: t, Text: f.Text})
		}
	case browser.StepPress:
		if st.Key == "" || len(st.Key) > 64 {
			return bad(`press needs a key: a name (Enter, Tab, Escape, ...) or one character, with modifiers like "Shift+Tab"`)
		}
		ws.Key = st.Key
	case browser.StepScroll:
		if st.DeltaX == 0 && st.DeltaY == 0 {
			return bad("scroll needs deltaX or deltaY (CSS pixels)")
		}
		ws.DeltaX, ws.DeltaY = st.DeltaX, st.DeltaY
	case browser.StepScreenshot:
		if err := shotStep(&ws, st, epoch); err != nil {
			return wireStep{}, err
		}
	case browser.StepBack, browser.StepForward, browser.StepReload:
		// No fields: the tab's own history.
	case browser.StepDialog:
		if len(st.Text) > maxActText || (st.Text != "" && !st.Accept) {
			return bad("a dialog step's text (at most %d characters) answers a prompt, so it goes with Accept only", maxActText)
		}
		accept := st.Accept
		ws.Accept, ws.Text = &accept, st.Text
	case browser.StepWait:
		if st.Timeout < 0 || st.Timeout > maxWait {
			return bad("wait timeout %v is out of range; at most %v", st.Timeout, maxWait)
		}
		if st.Text == "" && st.Timeout == 0 {
			return bad("wait needs text to wait for, or a timeout to sleep")
		}
		if len(st.Text) > 1024 {
			return bad("wait text is longer than 1024 characters")
		}
		ws.Text = st.Text
		ws.TimeoutMs = st.Timeout.Milliseconds()
		if st.Timeout > 0 && ws.TimeoutMs == 0 {
			ws.TimeoutMs = 1
		}
	default:
		return bad("unknown step kind %q; use observe, navigate, click, type, press, scroll, wait, back, forward, reload, hover, select, fill, dialog, screenshot or upload", st.Kind)
	}
	return ws, nil
}

// maxDialogText bounds a dialog's message and default prompt (the API keeps 1024).
const maxDialogText = 4096

// clipString is s cut to at most n bytes.
func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// maxUploadFiles bounds an upload step (the API lists at most 10 files).
const maxUploadFiles = 10

// maxFillFields bounds a fill step (the API lists at most 20 fields).
const maxFillFields = 20

// wireTargetOf is a target as the command carries it. A ref or point of an
// earlier connection is refused here as the guard the page would name.
func wireTargetOf(tg browser.Target, epoch int64) (*wireTarget, error) {
	t := &wireTarget{Ref: tg.Ref, Text: tg.Text, Selector: tg.Selector}
	if tg.Ref != "" || tg.Point {
		doc, ok := pageDocument(tg.Document, epoch)
		if !ok {
			if tg.Ref != "" {
				return nil, &browser.ActError{Reason: twv1.ReasonStaleRef, Message: fmt.Sprintf(
					"ref %s is from document %q, which this extension connection (%s…) did not observe (the extension reconnected since): observe again",
					tg.Ref, tg.Document, docPrefix(epoch))}
			}
			return nil, &browser.ActError{Reason: twv1.ReasonStaleCoordinates, Message: fmt.Sprintf(
				"the point (%v, %v) is from document %q, which this extension connection (%s…) did not observe (the extension reconnected since): observe again",
				tg.X, tg.Y, tg.Document, docPrefix(epoch))}
		}
		t.Document = doc
	}
	if tg.Point {
		t.Point, t.X, t.Y, t.Epoch = true, tg.X, tg.Y, tg.Epoch
	}
	return t, nil
}

func (e wireElement) seam() browser.Element {
	return browser.Element{ID: clip(e.ID, 32), Role: clip(e.Role, 64), Name: clip(e.Name, maxElementName),
		X: e.X, Y: e.Y, Width: e.Width, Height: e.Height}
}

// seam converts an observation of the connection epoch.
func (o *wireObservation) seam(epoch int64) *browser.PageObservation {
	out := &browser.PageObservation{
		Document: docPrefix(epoch) + clip(o.Document, 128), Epoch: o.Epoch,
		URL: clip(o.URL, maxActURL), Title: clip(o.Title, 1024),
		ScrollX: o.ScrollX, ScrollY: o.ScrollY, Truncated: o.Truncated,
	}
	for i, e := range o.Elements {
		if i == maxObserved {
			out.Truncated = true
			break
		}
		out.Elements = append(out.Elements, e.seam())
	}
	out.OutlineOffset, out.OutlineMore = max(o.OutlineOffset, 0), o.OutlineMore
	for i, n := range o.Outline {
		if i == maxOutlineNodes {
			out.OutlineMore = true
			break
		}
		out.Outline = append(out.Outline, browser.OutlineNode{Depth: min(max(n.Depth, 0), 64), Role: clip(n.Role, 64),
			Name: clip(n.Name, maxElementName), Text: clip(n.Text, 8192), ID: clip(n.ID, 32), Level: n.Level,
			Checked: n.Checked, Disabled: n.Disabled})
	}
	return out
}
