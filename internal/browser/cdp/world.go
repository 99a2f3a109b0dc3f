// The isolated world the page script runs in: creating it per document, running
// the script in it, and the errors the script returns as data.

package cdp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	pagescript "github.com/tabwarden/tabwarden/extension"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// scriptError is an error the page script returned as data.
type scriptError struct {
	Reason     string            `json:"reason"`
	Message    string            `json:"message"`
	Candidates []browser.Element `json:"candidates"`
	Document   string            `json:"document"`
	Epoch      int64             `json:"epoch"`
}

// Reasons of the page script that are not guard reasons.
const (
	reasonWorldMismatch = "world_mismatch"
	// reasonHasFrames: locate with NoFrames on a page holding frames.
	reasonHasFrames  = "has_frames"
	reasonBadRequest = "bad_request"
)

func (e *scriptError) err(op string) error {
	switch e.Reason {
	case "stale_ref", "stale_coordinates", "ambiguous_target", "target_not_found":
		ae := &browser.ActError{Reason: e.Reason, Message: e.Message, Candidates: e.Candidates}
		if len(e.Candidates) > 0 {
			ae.Document, ae.Epoch = e.Document, e.Epoch
		}
		return ae
	}
	return fmt.Errorf("page script %s: %s: %s", op, e.Reason, e.Message)
}

// ensureWorld makes sure ps has an isolated world in the page's current document.
func (b *Browser) ensureWorld(ctx context.Context, ps *pageSession) error {
	tree, err := call(ctx, ps.c, ps.id, wire.GetFrameTree{})
	if err != nil {
		return err
	}
	return b.worldFor(ctx, ps, tree.FrameTree.Frame)
}

// worldFor makes sure ps has an isolated world in f, the page's main frame as
// the frame tree was just read.
func (b *Browser) worldFor(ctx context.Context, ps *pageSession, f wire.Frame) error {
	if ps.fn != "" && ps.loader == f.LoaderID {
		return nil
	}
	ps.world, ps.fn, ps.nonce = 0, "", ""
	w, err := call(ctx, ps.c, ps.id, wire.CreateIsolatedWorld{FrameID: f.ID, WorldName: worldName})
	if err != nil {
		return err
	}
	nonce := newNonce()
	var info struct {
		Mac   bool         `json:"mac"`
		Error *scriptError `json:"error"`
	}
	fn, err := b.install(ctx, ps.c, ps.id, w.ExecutionContextID, nonce, &info, f.LoaderID)
	if err != nil {
		return err
	}
	if info.Error != nil {
		return info.Error.err("init")
	}
	ps.world, ps.fn, ps.loader, ps.nonce, ps.mac = w.ExecutionContextID, fn, f.LoaderID, nonce, info.Mac
	return nil
}

// The page script is sent once per world. install evaluates it in the world
// just created (its context id fresh from Page.createIsolatedWorld), keeps the
// page function as a property of the world's global whose name comes from the
// world's nonce (worldKey), and runs its init: two commands sent back to back,
// one round trip. It returns the function's object id. Every later call of
// the page script in that world is Runtime.callFunctionOn on that object
// (callFn): a few hundred bytes instead of the script's 53 KB each time, and
// an object id names an object of one context in one renderer (V8's ids carry
// their isolate), so the call runs in that world or fails, where a context id
// may name another context once the page has navigated to another process.
//
// loader, when not "", is the page's document the world was made in: the
// frame tree is read in the same turn, and a page that has left it by then
// (its context id may have come to name one of the new document's contexts)
// fails the install with errWorldMismatch, which runRead answers by making a
// world in the new document.
func (b *Browser) install(ctx context.Context, c *wire.Conn, session string, world int64, nonce string, out any, loader string) (string, error) {
	key, _ := json.Marshal(worldKey(nonce))
	put := send(c, session, wire.Evaluate{Expression: "globalThis[" + string(key) + "] = (" + pagescript.Source + "\n)", ContextID: world, ObjectGroup: worldObjects, Silent: true})
	args, err := json.Marshal(scriptArgs{World: nonce})
	if err != nil {
		return "", err
	}
	init := send(c, session, wire.Evaluate{Expression: "globalThis[" + string(key) + "](\"init\", " + string(args) + ")", ContextID: world, ReturnByValue: true, Silent: true})
	var tree func(context.Context) (wire.GetFrameTreeResult, error)
	if loader != "" {
		tree = send(c, session, wire.GetFrameTree{})
	}
	fn, err := put(ctx)
	if err == nil && fn.ExceptionDetails != nil {
		err = fmt.Errorf("page script threw: %s %s", fn.ExceptionDetails.Text, fn.ExceptionDetails.Exception.Description)
	}
	if err == nil && fn.Result.ObjectID == "" {
		err = fmt.Errorf("page script: no function in the world (%s)", fn.Result.Type)
	}
	r, ierr := init(ctx)
	if tree != nil {
		t, terr := tree(ctx)
		if err == nil && terr == nil && t.FrameTree.Frame.LoaderID != loader {
			err = fmt.Errorf("%w: the page left the document while its world was made", errWorldMismatch)
		}
	}
	if err != nil {
		return "", fmt.Errorf("page script: %w", err)
	}
	if err := scriptResult("init", r, ierr, out); err != nil {
		return "", err
	}
	return fn.Result.ObjectID, nil
}

// worldKey is the name the page function has on its world's global.
func worldKey(nonce string) string { return "__tabwarden_" + nonce }

// worldObjects is the object group of the page functions (install); a world's
// goes with its context.
const worldObjects = "tabwarden-world"

func newNonce() string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	return hex.EncodeToString(nonce)
}

// evaluate runs the page script once in ps's world: the page function called
// with op and args, nothing else.
func (b *Browser) evaluate(ctx context.Context, ps *pageSession, op string, args scriptArgs, out any) error {
	if ps.fn == "" {
		// Never anywhere else: as the browser says for a world that is gone.
		return fmt.Errorf("page script %s: cannot find context: no isolated world", op)
	}
	return b.callFn(ctx, ps.c, ps.id, ps.fn, op, args, out)
}

// callFn runs the page function fn (install's object) once: fn(op, args).
func (b *Browser) callFn(ctx context.Context, c *wire.Conn, session, fn string, op string, args scriptArgs, out any) error {
	cmd, err := fnCall(fn, op, args)
	if err != nil {
		return err
	}
	r, err := call(ctx, c, session, cmd)
	return scriptResult(op, r, err, out)
}

// fnCall is the command that calls the page function fn with op and args.
func fnCall(fn string, op string, args scriptArgs) (wire.CallFunctionOn, error) {
	if fn == "" {
		return wire.CallFunctionOn{}, fmt.Errorf("page script %s: cannot find context: no isolated world", op)
	}
	opJSON, err := json.Marshal(op)
	if err != nil {
		return wire.CallFunctionOn{}, err
	}
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return wire.CallFunctionOn{}, err
	}
	return wire.CallFunctionOn{
		FunctionDeclaration: "function (op, args) { return this(op, args); }",
		ObjectID:            fn,
		Arguments:           []wire.CallArgument{{Value: opJSON}, {Value: argsJSON}},
		ReturnByValue:       true, Silent: true,
	}, nil
}

// scriptResult decodes a page script call's reply r (err: the call's error)
// into out.
func scriptResult(op string, r wire.EvaluateResult, err error, out any) error {
	if err != nil {
		return err
	}
	if d := r.ExceptionDetails; d != nil {
		return fmt.Errorf("page script %s threw: %s %s", op, d.Text, d.Exception.Description)
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("page script %s: decode %s: %w", op, r.Result.Value, err)
	}
	return nil
}

// run runs op in the page's world, creating the world when the page has a new
// document or the old world is gone. out's Error field receives a script error.
func (b *Browser) run(ctx context.Context, ps *pageSession, op string, args scriptArgs, out any) error {
	return b.runRead(ctx, ps, nil, op, args, out)
}

// runRead is run with the page's main frame as a frame tree the caller read
// just before (nil: run reads it). A read-only op (readOnly) whose page has a
// world already goes out right behind the tree's read, one round trip for
// both (the call is by the world's object id, so it runs in that world or
// fails: never in a context of the page's own, which a context id may name
// after the page navigated to another process); when the tree shows another
// document, the call's answer is dropped and the op runs again in a world of
// that document. Other ops wait for the tree first: they must not act on a
// document the page has left (kept alive in the back-forward cache).
func (b *Browser) runRead(ctx context.Context, ps *pageSession, read *wire.Frame, op string, args scriptArgs, out any) error {
	for attempt := 0; ; attempt++ {
		var err error
		var raw json.RawMessage
		called := false
		switch {
		case attempt == 0 && read != nil:
			err = b.worldFor(ctx, ps, *read)
		case attempt == 0 && readOnly[op] && ps.fn != "":
			called, err = b.readAlongside(ctx, ps, op, args, &raw)
		default:
			err = b.ensureWorld(ctx, ps)
		}
		if err == nil {
			if !called {
				a := args
				a.World = ps.nonce
				err = b.evaluate(ctx, ps, op, a, &raw)
			}
			if err == nil {
				if err = decodeScript(op, raw, out); err == nil || !errors.Is(err, errWorldMismatch) {
					return err
				}
			}
		}
		// The document changed under us (the world or its context is gone): build
		// a world in the new document once more.
		if attempt >= 2 || !worldGone(err) {
			return err
		}
		ps.world, ps.fn = 0, ""
	}
}

// errWorldMismatch is the page script's answer from a world of another
// document than the one it was set up in.
var errWorldMismatch = errors.New(reasonWorldMismatch)

// decodeScript decodes a page script's answer raw into out, or returns the
// error the script answered (errWorldMismatch: a world of another document).
func decodeScript(op string, raw json.RawMessage, out any) error {
	var probe struct {
		Error *scriptError `json:"error"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("page script %s: %w", op, err)
	}
	switch {
	case probe.Error == nil:
		return json.Unmarshal(raw, out)
	case probe.Error.Reason == reasonWorldMismatch:
		return fmt.Errorf("page script %s: %w: %s", op, errWorldMismatch, probe.Error.Message)
	}
	return probe.Error.err(op)
}

// readOnly are the page script's ops that change nothing in the page but
// where it shows (locate may scroll an element into view), so they may run
// before the driver knows the world is still the page's document.
var readOnly = map[string]bool{"observe": true, "info": true, "hasText": true, "shotBox": true, "locate": true}

// readAlongside reads the frame tree and calls op in ps's world in one round
// trip. called reports that raw is the call's answer in the page's current
// document; false (with a nil error) when the page has another document now,
// whose world worldFor has made: the caller calls op again.
func (b *Browser) readAlongside(ctx context.Context, ps *pageSession, op string, args scriptArgs, raw *json.RawMessage) (called bool, err error) {
	called, _, err = b.readAlongsideTree(ctx, ps, op, args, raw)
	return called, err
}

// readAlongsideTree is readAlongside that also says whether the page's tree
// has frames (then raw is only the page's own world's answer).
func (b *Browser) readAlongsideTree(ctx context.Context, ps *pageSession, op string, args scriptArgs, raw *json.RawMessage) (called, frames bool, err error) {
	a := args
	a.World = ps.nonce
	cmd, err := fnCall(ps.fn, op, a)
	if err != nil {
		return false, false, err
	}
	tree := send(ps.c, ps.id, wire.GetFrameTree{})
	res := send(ps.c, ps.id, cmd)
	t, terr := tree(ctx)
	r, cerr := res(ctx)
	if terr != nil {
		return false, false, terr
	}
	frames = len(t.FrameTree.ChildFrames) > 0
	if t.FrameTree.Frame.LoaderID != ps.loader {
		return false, frames, b.worldFor(ctx, ps, t.FrameTree.Frame)
	}
	return true, frames, scriptResult(op, r, cerr, raw)
}

// worldGone reports whether err says the isolated world's context is gone.
func worldGone(err error) bool {
	if err == nil {
		return false
	}
	m := strings.ToLower(err.Error())
	return strings.Contains(m, reasonWorldMismatch) || strings.Contains(m, "cannot find context") ||
		strings.Contains(m, "could not find object") || strings.Contains(m, "invalid remote object id") ||
		strings.Contains(m, "execution context was destroyed") ||
		strings.Contains(m, "no frame")
}
