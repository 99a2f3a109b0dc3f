// Frames the page script cannot walk itself: cross-origin frames in the page's
// process and out-of-process frames (OOPIFs, under site isolation).

package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// The page script, in the isolated world of the page's main frame, walks the
// page's document, open shadow roots and same-origin frames (refs e<n> and
// f<k>.e<n>). Any other frame (another origin, in the page's process or in a
// process of its own) is reached by the driver:
//
//   - Discovery. Every page session auto-attaches (Target.setAutoAttach,
//     flatten, filter iframe) and so does every child session it accepts: the
//     browser announces each out-of-process frame of the page as an iframe
//     target (its targetId is its frameId) on the session of the frame that
//     holds it. Nothing else is accepted: a target that is not an iframe, or
//     announced on a session that is not this page's, is detached at once; a
//     child session is used only while its frame hangs, through frames the
//     driver knows, under the page's main frame (Page.getFrameTree of each
//     session), and while the browser names its <iframe> element in the parent
//     (DOM.getFrameOwner). A page cannot make the driver attach to anything:
//     it only ever attaches where the browser announces a frame of this page.
//   - Placement. For each frame, its <iframe> element (DOM.getFrameOwner, the
//     browser's answer, resolved into tabwarden's world of the frame's parent
//     with DOM.resolveNode) is asked by the page script (frameInfo, the same
//     bundled function, with the element as its receiver) whether that world
//     reads the frame (then the page script walks it: nothing more to do), where
//     its content box is in that world's viewport and which part of it shows.
//     The offsets add up frame in frame into the page's viewport; the clips
//     intersect.
//   - A frame the page script cannot read gets a world of its own
//     (Page.createIsolatedWorld with its frameId, on the session of its local
//     root: the page's for an in-process frame, its own for an OOPIF) and a
//     label x<k>, new for every document of every frame (frameId, loaderId) and
//     never reused on the page's session. Its elements are refs x<k>.e<n> (or
//     x<k>.f<j>.e<n>: a same-origin frame inside it), their boxes offset into
//     the page's viewport and clipped to the frame's visible part; its outline
//     is spliced under its iframe node (observe numbers the frame nodes it
//     cannot reach; frameInfo says which number an <iframe> element got).
//   - A ref x<k>.… is resolved by the driver only: the label must be one this
//     page session handed out, the page must still show the observed document,
//     and frame k must still show the document the label names (a frame that
//     navigated, or whose parent did, has a new loader or is gone: stale_ref).
//     The rest of the ref goes to that frame's page script with that world's
//     document id, which refuses a replaced element as on the page itself.
//   - Input. The frame's page script scrolls the target into view and finds a
//     point of it that nothing in its own document covers; the driver then
//     checks, world by world up to the page's, that a click at that point lands
//     on the frame's <iframe> element (frameHit): a page covering the frame is
//     refused as a covered element is. Mouse events go to the session of the
//     frame's local root at that root's coordinates (an OOPIF's own session:
//     the browser routes nothing it cannot hit-test, in a background tab
//     either); typing goes to the page's session, which delivers it to the
//     focused frame, after the frame's page script focused the field and
//     checked that it holds the focus of its document.
//   - Policy. ActRequest.FrameAllowed (the agent's url policy) is asked for
//     every such frame's url: a refused frame is not observed (its outline node
//     says why) and a step on it is refused with the policy's error.

const (
	// frameObjects is the object group of the <iframe> elements resolved for
	// placement; released after each use.
	frameObjects = "tabwarden-frames"
	// frameOutlineBytes bounds each frame's outline spliced into an
	// observation.
	frameOutlineBytes = 16 << 10
	// maxFrames bounds the frames placed per page.
	maxFrames = 64
)

// childTarget is an out-of-process frame the browser attached the driver to
// under a page's session.
type childTarget struct {
	session string // its flattened session
	frameID string // its frame (== its targetId)
	parent  string // the frame that holds it (parentFrameId)
	via     string // the session that announced it: the page's or another accepted child's
}

// frameWorld is a frame document the driver reaches with a world of its own.
type frameWorld struct {
	label   string // x<k>
	frameID string
	loader  string
	session string // the session of the frame's local root
	world   int64
	fn      string // the page function's object id in the world (install)
	nonce   string
	doc     string // the page script's document id in that world
}

// frameNode is a frame of the page as the browser reports it.
type frameNode struct {
	id, parent, loader, url string
	session                 string // the session of its local root
	root                    string // its local root frame
}

// rect is a rectangle in the page's viewport.
type rect struct{ Left, Top, Right, Bottom float64 }

func (r rect) inter(o rect) rect {
	return rect{max(r.Left, o.Left), max(r.Top, o.Top), min(r.Right, o.Right), min(r.Bottom, o.Bottom)}
}

func (r rect) empty() bool { return r.Right <= r.Left || r.Bottom <= r.Top }

func (r rect) has(x, y float64) bool { return x >= r.Left && x < r.Right && y >= r.Top && y < r.Bottom }

var everywhere = rect{-1e9, -1e9, 1e9, 1e9}

// worldRef names a world the page script runs in: the page's (fw nil) or a
// frame's.
type worldRef struct {
	fw *frameWorld
}

func (w worldRef) key() string {
	if w.fw == nil {
		return ""
	}
	return w.fw.label
}

// placed is a frame of the page where the driver found it.
type placed struct {
	node      frameNode
	host      worldRef // the world that reads the document holding its <iframe>
	owner     int64    // its <iframe> element (backendNodeId), in node.parent's session
	reachable bool     // host reads the frame's own document too
	fw        *frameWorld
	slot      int // the outline number its host gave its frame node
	off       struct{ X, Y float64 }
	clip      rect
	refused   error // the url policy refuses it
}

// frameView is the page's frames, placed.
type frameView struct {
	top    frameNode
	frames []*placed
	byID   map[string]*placed
}

// own returns the frames with worlds of their own that can be shown.
func (v *frameView) own() []*placed {
	var out []*placed
	for _, p := range v.frames {
		if p.fw != nil && p.refused == nil {
			out = append(out, p)
		}
	}
	return out
}

// hostOf is the world that reads the document of frame id (the page's main
// frame's, a frame world's, or the world that reads a same-origin frame), where
// that world's viewport sits in the page's (its offset) and which part of the
// document shows (clip); ok false when the frame is not placed or not read.
func (v *frameView) hostOf(id string) (w worldRef, off struct{ X, Y float64 }, clip rect, ok bool) {
	if id == v.top.id {
		return worldRef{}, off, everywhere, true
	}
	p := v.byID[id]
	if p == nil || p.refused != nil || (p.fw == nil && !p.reachable) {
		return worldRef{}, off, rect{}, false
	}
	if p.fw != nil {
		return worldRef{fw: p.fw}, p.off, p.clip, true
	}
	w, off, _, ok = v.hostOf(p.node.parent)
	return w, off, p.clip, ok
}

// placedOf is the placed frame of world fw, or nil.
func (v *frameView) placedOf(fw *frameWorld) *placed {
	for _, p := range v.frames {
		if p.fw != nil && p.fw == fw {
			return p
		}
	}
	return nil
}

// onFrameAttached handles Target.attachedToTarget on a session: an
// out-of-process frame of a page the driver acts on. Anything else is
// detached.
func (b *Browser) onFrameAttached(c *wire.Conn, on string, ev *wire.AttachedToTarget) {
	b.mu.Lock()
	var owner *pageSession
	for _, ps := range b.sessions {
		if ps.c != c || ps.id == "" {
			continue
		}
		if ps.id == on {
			owner = ps
			break
		}
		if _, ok := ps.children[on]; ok {
			owner = ps
			break
		}
	}
	ok := owner != nil && ev.TargetInfo.Type == "iframe" && ev.TargetInfo.TargetID != "" && ev.SessionID != ""
	if ok {
		if owner.children == nil {
			owner.children = map[string]*childTarget{}
		}
		owner.children[ev.SessionID] = &childTarget{session: ev.SessionID, frameID: ev.TargetInfo.TargetID, parent: ev.TargetInfo.ParentFrameID, via: on}
	}
	b.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if !ok {
			b.log.Info("detaching a target the browser attached that is not a frame of a driven page", "type", ev.TargetInfo.Type, "url", ev.TargetInfo.URL)
			_, _ = wire.Call(ctx, c, "", wire.DetachFromTarget{SessionID: ev.SessionID})
			return
		}
		// Its own out-of-process frames are announced on its session.
		_, _ = wire.Call(ctx, c, ev.SessionID, autoAttach())
		// A window the frame opens is announced (Page.windowOpen) on the
		// frame's own session only: the page's step that clicked in it
		// counts it as the page's (onWindowOpen).
		_, _ = wire.Call(ctx, c, ev.SessionID, wire.PageEnable{})
	}()
}

// onFrameDetached forgets a child session the browser ended.
func (b *Browser) onFrameDetached(c *wire.Conn, session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ps := range b.sessions {
		if ps.c == c {
			delete(ps.children, session)
		}
	}
}

func autoAttach() wire.SetAutoAttach {
	return wire.SetAutoAttach{AutoAttach: true, Flatten: true, Filter: []wire.TargetFilter{{Type: "iframe"}}}
}

// frameNodes lists the page's frames: its session's frame tree and those of
// the child sessions whose frames hang under it. The main frame comes first,
// then parents before their children.
func (b *Browser) frameNodes(ctx context.Context, ps *pageSession) (frameNode, []frameNode, error) {
	tree, err := call(ctx, ps.c, ps.id, wire.GetFrameTree{})
	if err != nil {
		return frameNode{}, nil, err
	}
	top := frameNode{id: tree.FrameTree.Frame.ID, loader: tree.FrameTree.Frame.LoaderID, url: tree.FrameTree.Frame.URL, session: ps.id, root: tree.FrameTree.Frame.ID}
	all := map[string]frameNode{}
	var walk func(t wire.FrameTree, parent, session, root string)
	walk = func(t wire.FrameTree, parent, session, root string) {
		for _, c := range t.ChildFrames {
			all[c.Frame.ID] = frameNode{id: c.Frame.ID, parent: parent, loader: c.Frame.LoaderID, url: c.Frame.URL, session: session, root: root}
			walk(c, c.Frame.ID, session, root)
		}
	}
	walk(tree.FrameTree, top.id, ps.id, top.id)
	b.mu.Lock()
	var kids []childTarget
	for _, ct := range ps.children {
		kids = append(kids, *ct)
	}
	b.mu.Unlock()
	for _, ct := range kids {
		t, err := call(ctx, ps.c, ct.session, wire.GetFrameTree{})
		if err != nil || t.FrameTree.Frame.ID != ct.frameID {
			continue // gone, or not the frame the browser announced
		}
		parent := ct.parent
		if parent == "" {
			parent = t.FrameTree.Frame.ParentID
		}
		if parent == "" || parent == ct.frameID {
			continue
		}
		all[ct.frameID] = frameNode{id: ct.frameID, parent: parent, loader: t.FrameTree.Frame.LoaderID, url: t.FrameTree.Frame.URL, session: ct.session, root: ct.frameID}
		walk(t.FrameTree, ct.frameID, ct.session, ct.frameID)
	}
	// Only frames that hang under the main frame, parents first.
	var out []frameNode
	level := []string{top.id}
	seen := map[string]bool{top.id: true}
	for len(level) > 0 && len(out) < maxFrames {
		var next []string
		for _, p := range level {
			for id, n := range all {
				if n.parent == p && !seen[id] {
					seen[id] = true
					out = append(out, n)
					next = append(next, id)
				}
			}
		}
		level = next
	}
	return top, out, nil
}

// frameWorldOf returns the world of frame n's current document, labelled once
// per (frame, document); labels are never reused on the page's session.
func (ps *pageSession) frameWorldOf(n frameNode) *frameWorld {
	for _, fw := range ps.frames {
		if fw.frameID == n.id && fw.loader == n.loader && fw.session == n.session {
			return fw
		}
	}
	if ps.frames == nil {
		ps.frames = map[string]*frameWorld{}
	}
	ps.nextFrame++
	fw := &frameWorld{label: "x" + strconv.Itoa(ps.nextFrame), frameID: n.id, loader: n.loader, session: n.session}
	ps.frames[fw.label] = fw
	return fw
}

// frameInfo is the page script's answer about an <iframe> element.
type frameInfo struct {
	Reachable bool    `json:"reachable"`
	Slot      int     `json:"slot"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Clip      rect    `json:"clip"`
	Hit       bool    `json:"hit"`
	What      string  `json:"what"`
	Error     *scriptError
}

// place finds and places the page's frames (see the top of this file). allow
// is the url policy (nil: every frame).
func (b *Browser) place(ctx context.Context, ps *pageSession, allow func(string) error) (*frameView, error) {
	top, nodes, err := b.frameNodes(ctx, ps)
	if err != nil {
		return nil, err
	}
	v := &frameView{top: top, byID: map[string]*placed{}}
	current := map[[2]string]bool{}
	for _, n := range nodes {
		current[[2]string{n.id, n.loader}] = true
	}
	for label, fw := range ps.frames {
		if !current[[2]string{fw.frameID, fw.loader}] {
			delete(ps.frames, label) // that document is gone: its refs are stale
		}
	}
	sessions := map[string]bool{}
	defer func() {
		for s := range sessions {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = call(ctx, ps.c, s, wire.ReleaseObjectGroup{ObjectGroup: frameObjects})
			cancel()
		}
	}()
	for _, n := range nodes {
		host, hoff, hclip, ok := v.hostOf(n.parent)
		if !ok {
			continue // under a frame not placed: not shown, refused or unreadable
		}
		parentSession := ps.id
		if n.parent != top.id {
			parentSession = v.byID[n.parent].node.session
		}
		own, err := call(ctx, ps.c, parentSession, wire.GetFrameOwner{FrameID: n.id})
		if err != nil || own.BackendNodeID == 0 {
			continue // the browser names no <iframe> for it there
		}
		var fi frameInfo
		sessions[b.worldSession(ps, host)] = true
		if err := b.callOnElement(ctx, ps, host, own.BackendNodeID, "frameInfo", scriptArgs{}, &fi); err != nil {
			b.log.V(1).Info("placing a frame", "frame", n.id, "err", err)
			continue
		}
		p := &placed{node: n, host: host, owner: own.BackendNodeID, reachable: fi.Reachable, slot: fi.Slot}
		p.off.X, p.off.Y = hoff.X+fi.X, hoff.Y+fi.Y
		p.clip = hclip.inter(rect{fi.Clip.Left + hoff.X, fi.Clip.Top + hoff.Y, fi.Clip.Right + hoff.X, fi.Clip.Bottom + hoff.Y})
		v.byID[n.id] = p
		v.frames = append(v.frames, p)
		if fi.Reachable {
			continue
		}
		if allow != nil {
			if err := allow(n.url); err != nil {
				p.refused = err
				continue
			}
		}
		p.fw = ps.frameWorldOf(n)
		if err := b.ensureFrameWorld(ctx, ps, p.fw); err != nil {
			// No world there (a sandboxed frame without scripts, a frame on its way
			// out): it stays as the page script describes it, unreached.
			b.log.V(1).Info("a world in a frame", "frame", n.id, "err", err)
			p.fw = nil
		}
	}
	return v, nil
}

// worldSession is the session a world lives on.
func (b *Browser) worldSession(ps *pageSession, w worldRef) string {
	if w.fw == nil {
		return ps.id
	}
	return w.fw.session
}

// ensureFrameWorld makes sure fw has its isolated world, in its document.
func (b *Browser) ensureFrameWorld(ctx context.Context, ps *pageSession, fw *frameWorld) error {
	if fw.fn != "" {
		return nil
	}
	w, err := call(ctx, ps.c, fw.session, wire.CreateIsolatedWorld{FrameID: fw.frameID, WorldName: worldName})
	if err != nil {
		return err
	}
	nonce := newNonce()
	var info struct {
		Document string       `json:"document"`
		Error    *scriptError `json:"error"`
	}
	fn, err := b.install(ctx, ps.c, fw.session, w.ExecutionContextID, nonce, &info, "")
	if err != nil {
		return err
	}
	if info.Error != nil {
		return info.Error.err("init")
	}
	fw.world, fw.fn, fw.nonce, fw.doc = w.ExecutionContextID, fn, nonce, info.Document
	return nil
}

// runIn runs op in world w: the page's (run) or a frame's.
func (b *Browser) runIn(ctx context.Context, ps *pageSession, w worldRef, op string, args scriptArgs, out any) error {
	if w.fw == nil {
		return b.run(ctx, ps, op, args, out)
	}
	fw := w.fw
	if err := b.ensureFrameWorld(ctx, ps, fw); err != nil {
		if worldGone(err) {
			return &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("frame %s no longer shows the document observed: observe again", fw.label)}
		}
		return err
	}
	args.World = fw.nonce
	var raw json.RawMessage
	if err := b.callFn(ctx, ps.c, fw.session, fw.fn, op, args, &raw); err != nil {
		if worldGone(err) {
			fw.world, fw.fn = 0, ""
			return &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("frame %s no longer shows the document observed (it navigated): observe again", fw.label)}
		}
		return err
	}
	var probe struct {
		Error *scriptError `json:"error"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("page script %s: %w", op, err)
	}
	if probe.Error != nil {
		if probe.Error.Reason == reasonWorldMismatch {
			fw.world, fw.fn = 0, ""
			return &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("frame %s no longer shows the document observed: observe again", fw.label)}
		}
		e := probe.Error
		for i := range e.Candidates {
			e.Candidates[i].ID = fw.label + "." + e.Candidates[i].ID
		}
		return e.err(op)
	}
	return json.Unmarshal(raw, out)
}

// callOnElement runs op of the page script in world w with the element
// backendNodeID (an <iframe> the browser named) as its receiver.
func (b *Browser) callOnElement(ctx context.Context, ps *pageSession, w worldRef, node int64, op string, args scriptArgs, out *frameInfo) error {
	var session, nonce, fn string
	var ctxID int64
	if w.fw != nil {
		session, ctxID, nonce, fn = w.fw.session, w.fw.world, w.fw.nonce, w.fw.fn
	} else {
		if err := b.ensureWorld(ctx, ps); err != nil {
			return err
		}
		session, ctxID, nonce, fn = ps.id, ps.world, ps.nonce, ps.fn
	}
	if ctxID == 0 || fn == "" {
		return errors.New("no isolated world")
	}
	obj, err := call(ctx, ps.c, session, wire.ResolveNode{BackendNodeID: node, ExecutionContextID: ctxID, ObjectGroup: frameObjects})
	if err != nil {
		return err
	}
	args.World = nonce
	opJSON, _ := json.Marshal(op)
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return err
	}
	r, err := call(ctx, ps.c, session, wire.CallFunctionOn{
		// The page function (install's object: it runs in the driver's world
		// or fails), with the element as this. The element is passed by its
		// object id, which V8 refuses from any other context than the
		// function's: an element a stale context id resolved elsewhere fails
		// the call instead of running anything there.
		FunctionDeclaration: "function (op, args, el) { return this.call(el, op, args); }",
		ObjectID:            fn,
		Arguments:           []wire.CallArgument{{Value: opJSON}, {Value: argsJSON}, {ObjectID: obj.Object.ObjectID}},
		ReturnByValue:       true, Silent: true,
	})
	if err != nil {
		return err
	}
	if d := r.ExceptionDetails; d != nil {
		return fmt.Errorf("page script %s threw: %s %s", op, d.Text, d.Exception.Description)
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("page script %s: decode %s: %w", op, r.Result.Value, err)
	}
	if out.Error != nil {
		return out.Error.err(op)
	}
	return nil
}

// scriptNode is an outline node as the page script returns it: Frame numbers
// a frame node it could not reach (observe with frames).
type scriptNode struct {
	browser.OutlineNode
	Frame int `json:"frame"`
}

type scriptObservation struct {
	browser.PageObservation
	Outline []scriptNode `json:"outline"`
}

// observeFrames is observe on a page with frames: the page's own observation,
// and the elements and outline of every frame the driver reaches itself,
// spliced in (see the top of this file).
func (b *Browser) observeFrames(ctx context.Context, ps *pageSession, args scriptArgs, allow func(string) error) (*browser.PageObservation, error) {
	args.Frames = true
	var top scriptObservation
	if err := b.run(ctx, ps, "observe", args, &top); err != nil {
		return nil, err
	}
	v, err := b.place(ctx, ps, allow)
	if err != nil {
		return nil, err
	}
	for _, p := range v.own() {
		if p.slot == 0 && !p.clip.empty() {
			// The frame committed its cross-origin document after the page's
			// observe walked it (it still showed its initial empty one): once
			// more, so that its outline has a node to go under.
			top = scriptObservation{}
			if err := b.run(ctx, ps, "observe", args, &top); err != nil {
				return nil, err
			}
			if v, err = b.place(ctx, ps, allow); err != nil {
				return nil, err
			}
			break
		}
	}
	o := top.PageObservation
	outlines := map[string][]scriptNode{"": top.Outline}
	type slotKey struct {
		host string
		slot int
	}
	bySlot := map[slotKey]*placed{}
	for _, p := range v.frames {
		if p.reachable || p.slot == 0 {
			continue
		}
		bySlot[slotKey{p.host.key(), p.slot}] = p
	}
	for _, p := range v.own() {
		if p.clip.empty() {
			continue
		}
		var fo scriptObservation
		left := max(args.Max-len(o.Elements), 1)
		if err := b.runIn(ctx, ps, worldRef{fw: p.fw}, "observe", scriptArgs{Max: left, OutlineBytes: frameOutlineBytes, Frames: true}, &fo); err != nil {
			b.log.V(1).Info("observing a frame", "frame", p.fw.label, "err", err)
			continue
		}
		p.fw.doc = fo.Document
		for _, el := range fo.Elements {
			el.ID = p.fw.label + "." + el.ID
			el.X += int(p.off.X)
			el.Y += int(p.off.Y)
			box := rect{float64(el.X), float64(el.Y), float64(el.X + el.Width), float64(el.Y + el.Height)}
			if box.inter(p.clip).empty() || len(o.Elements) >= args.Max {
				if len(o.Elements) >= args.Max {
					o.Truncated = true
				}
				continue
			}
			o.Elements = append(o.Elements, el)
		}
		for i := range fo.Outline {
			if fo.Outline[i].ID != "" {
				fo.Outline[i].ID = p.fw.label + "." + fo.Outline[i].ID
			}
		}
		outlines[p.fw.label] = fo.Outline
	}
	var out []browser.OutlineNode
	var splice func(key string, depth int, seen map[string]bool)
	splice = func(key string, depth int, seen map[string]bool) {
		if seen[key] {
			return
		}
		seen[key] = true
		for _, n := range outlines[key] {
			node := n.OutlineNode
			node.Depth += depth
			p := bySlot[slotKey{key, n.Frame}]
			if n.Frame != 0 && p != nil {
				switch {
				case p.refused != nil:
					node.Text = "a frame tabwarden does not observe: " + p.refused.Error()
				case p.fw != nil && outlines[p.fw.label] != nil:
					node.Text = ""
				}
			}
			out = append(out, node)
			if n.Frame != 0 && p != nil && p.fw != nil && p.refused == nil {
				splice(p.fw.label, node.Depth+1, seen)
			}
		}
	}
	splice("", 0, map[string]bool{})
	o.Outline = out
	return &o, nil
}

// splitFrameRef splits a ref x<k>.<rest> into its frame label and the ref the
// frame's page script knows; ok false for a ref of the page's own world.
func splitFrameRef(ref string) (label, rest string, ok bool) {
	if !strings.HasPrefix(ref, "x") {
		return "", "", false
	}
	label, rest, ok = strings.Cut(ref, ".")
	if !ok || len(label) < 2 || rest == "" {
		return "", "", false
	}
	if _, err := strconv.ParseUint(label[1:], 10, 32); err != nil {
		return "", "", false
	}
	return label, rest, true
}

// route is where a target is resolved: the page's world (fw nil, target as
// given) or a frame's (target rewritten for it).
type route struct {
	world  worldRef
	target browser.Target
	// main is the page's main frame as routing read it, just before (nil:
	// not read): the page's world is checked against it (runRead) instead of
	// a second read of the frame tree.
	main *wire.Frame
}

// hasFrames says whether the page may have frames the driver reaches itself
// (child sessions, or a frame in the page's tree), for the fast path.
func (b *Browser) hasFrames(ctx context.Context, ps *pageSession) bool {
	frames, _ := b.pageFrames(ctx, ps)
	return frames
}

// pageFrames is hasFrames with the page's main frame, when it read the frame
// tree to tell (nil otherwise).
func (b *Browser) pageFrames(ctx context.Context, ps *pageSession) (frames bool, main *wire.Frame) {
	if b.hasChildSessions(ps) {
		return true, nil
	}
	tree, err := call(ctx, ps.c, ps.id, wire.GetFrameTree{})
	if err != nil {
		return false, nil
	}
	return len(tree.FrameTree.ChildFrames) > 0, &tree.FrameTree.Frame
}

// hasChildSessions says whether the browser attached the driver to frames of
// the page (out-of-process frames).
func (b *Browser) hasChildSessions(ps *pageSession) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(ps.children) > 0
}

// routeTarget resolves which world a target belongs to. A ref x<k>.… is
// checked against the page's current document and frame k's (stale_ref when
// either changed); a text target is looked for in every world (one match in
// all: that world; more: ambiguous_target with every candidate).
func (b *Browser) routeTarget(ctx context.Context, ps *pageSession, t browser.Target, allow func(string) error) (route, *frameView, error) {
	label, rest, isFrame := splitFrameRef(t.Ref)
	if t.Ref != "" && !isFrame {
		return route{target: t}, nil, nil
	}
	if t.Ref == "" && t.Text == "" {
		return route{target: t}, nil, nil
	}
	if t.Ref == "" {
		if frames, main := b.pageFrames(ctx, ps); !frames {
			return route{target: t, main: main}, nil, nil
		}
	}
	if isFrame {
		fw := ps.frames[label]
		if fw == nil {
			return route{}, nil, &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("ref %s names frame %s, which no observation of this page showed: observe again", t.Ref, label)}
		}
		var info struct {
			Document string `json:"document"`
		}
		if err := b.run(ctx, ps, "info", scriptArgs{}, &info); err != nil {
			return route{}, nil, err
		}
		if t.Document != info.Document {
			return route{}, nil, &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("ref %s is from document %s; the page now shows document %s (it navigated or reloaded): observe again", t.Ref, t.Document, info.Document)}
		}
	}
	v, err := b.place(ctx, ps, nil)
	if err != nil {
		return route{}, nil, err
	}
	if isFrame {
		fw := ps.frames[label]
		p := v.placedOf(fw)
		if p == nil || fw == nil {
			return route{}, nil, &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("ref %s names frame %s, which has since navigated or been removed (a ref never names the frame's new document): observe again", t.Ref, label)}
		}
		if err := frameAllowed(allow, p); err != nil {
			return route{}, nil, err
		}
		return route{world: worldRef{fw: fw}, target: browser.Target{Ref: rest, Document: fw.doc}}, v, nil
	}
	// A text target: every world.
	type hit struct {
		w     worldRef
		p     *placed
		cands []browser.Element
	}
	var hits []hit
	total := 0
	var firstErr error
	worlds := []hit{{}}
	for _, p := range v.own() {
		if !p.clip.empty() {
			worlds = append(worlds, hit{w: worldRef{fw: p.fw}, p: p})
		}
	}
	for _, h := range worlds {
		var out struct {
			Found browser.Element `json:"found"`
		}
		err := b.runIn(ctx, ps, h.w, "find", scriptArgs{Target: targetArgs(t)}, &out)
		var ae *browser.ActError
		switch {
		case err == nil:
			if h.p != nil {
				out.Found.ID = h.p.fw.label + "." + out.Found.ID
			}
			h.cands = []browser.Element{out.Found}
		case errors.As(err, &ae) && ae.Reason == "ambiguous_target":
			h.cands = ae.Candidates
		case errors.As(err, &ae) && ae.Reason == "target_not_found":
			if h.p == nil {
				firstErr = err
			}
			continue
		default:
			if h.p == nil {
				return route{}, nil, err
			}
			continue
		}
		if h.p != nil {
			for i := range h.cands {
				if !strings.HasPrefix(h.cands[i].ID, h.p.fw.label+".") {
					h.cands[i].ID = h.p.fw.label + "." + h.cands[i].ID
				}
				h.cands[i].X += int(h.p.off.X)
				h.cands[i].Y += int(h.p.off.Y)
			}
		}
		total += len(h.cands)
		hits = append(hits, h)
	}
	switch total {
	case 0:
		if firstErr == nil {
			firstErr = &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("no visible interactive element reads %q: observe to see what the page offers", t.Text)}
		}
		return route{}, nil, firstErr
	case 1:
		h := hits[0]
		if h.p != nil {
			if err := frameAllowed(allow, h.p); err != nil {
				return route{}, nil, err
			}
		}
		return route{world: h.w, target: t}, v, nil
	}
	var cands []browser.Element
	for _, h := range hits {
		cands = append(cands, h.cands...)
	}
	var info struct {
		Document string `json:"document"`
		Epoch    int64  `json:"epoch"`
	}
	_ = b.run(ctx, ps, "info", scriptArgs{}, &info)
	return route{}, nil, &browser.ActError{
		Reason:     "ambiguous_target",
		Message:    fmt.Sprintf("%d visible elements read %q, in the page and its frames: target one of them by ref", total, t.Text),
		Candidates: cands, Document: info.Document, Epoch: info.Epoch,
	}
}

func frameAllowed(allow func(string) error, p *placed) error {
	if allow == nil {
		return nil
	}
	if err := allow(p.node.url); err != nil {
		return &browser.ActError{Reason: ReasonURLNotAllowed, Message: fmt.Sprintf("the element is in a frame of %s: %v", p.node.url, err)}
	}
	return nil
}

// ReasonURLNotAllowed is the refusal of a step on a frame whose url the
// session's url policy refuses (ActRequest.FrameAllowed).
const ReasonURLNotAllowed = "url_not_allowed"

// framePoint turns a point of frame world fw's viewport (its page script's
// answer) into where input goes: the session of fw's local root and the point
// in that root's viewport. It places the frames again (the script may have
// scrolled) and refuses a point the page's viewport does not show of the
// frame, or where a click would land on something covering the frame.
func (b *Browser) framePoint(ctx context.Context, ps *pageSession, fw *frameWorld, x, y float64) (string, point, error) {
	v, err := b.place(ctx, ps, nil)
	if err != nil {
		return "", point{}, err
	}
	p := v.placedOf(fw)
	if p == nil {
		return "", point{}, &browser.ActError{Reason: "stale_ref", Message: fmt.Sprintf("frame %s has since navigated or been removed: observe again", fw.label)}
	}
	tx, ty := p.off.X+x, p.off.Y+y
	if !p.clip.has(tx, ty) {
		return "", point{}, &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("the element is in frame %s, outside the part of the frame the page's viewport shows: scroll the page to it and observe again", fw.label)}
	}
	// Up the chain: each frame's <iframe> must be what a click there hits.
	for q := p; ; {
		_, hoff, _, ok := v.hostOf(q.node.parent)
		if !ok {
			return "", point{}, &browser.ActError{Reason: "target_not_found", Message: "the element's frame is no longer shown: observe again"}
		}
		var fi frameInfo
		err := b.callOnElement(ctx, ps, q.host, q.owner, "frameHit", scriptArgs{X: tx - hoff.X, Y: ty - hoff.Y}, &fi)
		_, _ = call(ctx, ps.c, b.worldSession(ps, q.host), wire.ReleaseObjectGroup{ObjectGroup: frameObjects})
		if err != nil {
			return "", point{}, err
		}
		if !fi.Hit {
			return "", point{}, &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("the element is in a frame that %s covers at its point (an overlay over the frame?): observe again", fi.What)}
		}
		if q.host.fw == nil {
			break
		}
		if q = v.placedOf(q.host.fw); q == nil {
			return "", point{}, &browser.ActError{Reason: "target_not_found", Message: "the element's frame is no longer shown: observe again"}
		}
	}
	// The local root: the page (its session) or an out-of-process frame.
	root := v.byID[fw.frameID].node
	if root.session == ps.id {
		return ps.id, point{tx, ty}, nil
	}
	rp := v.byID[root.root]
	if rp == nil {
		return "", point{}, &browser.ActError{Reason: "target_not_found", Message: "the element's frame is no longer shown: observe again"}
	}
	return root.session, point{tx - rp.off.X, ty - rp.off.Y}, nil
}
