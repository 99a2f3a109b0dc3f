// The isolated world the page script runs in: creating it per document, running
// the script in it, and the errors the script returns as data.

package cdp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

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
	reasonBadRequest    = "bad_request"
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
	f := tree.FrameTree.Frame
	if ps.world != 0 && ps.loader == f.LoaderID {
		return nil
	}
	ps.world, ps.nonce = 0, ""
	w, err := call(ctx, ps.c, ps.id, wire.CreateIsolatedWorld{FrameID: f.ID, WorldName: worldName})
	if err != nil {
		return err
	}
	nonce := newNonce()
	var info struct {
		Mac   bool         `json:"mac"`
		Error *scriptError `json:"error"`
	}
	ps.world, ps.loader = w.ExecutionContextID, f.LoaderID
	if err := b.evaluate(ctx, ps, "init", scriptArgs{World: nonce}, &info); err != nil {
		ps.world = 0
		return err
	}
	if info.Error != nil {
		ps.world = 0
		return info.Error.err("init")
	}
	ps.nonce, ps.mac = nonce, info.Mac
	return nil
}

func newNonce() string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	return hex.EncodeToString(nonce)
}

// evaluate runs the page script once in ps's world: (Source)(op, args), nothing else.
func (b *Browser) evaluate(ctx context.Context, ps *pageSession, op string, args scriptArgs, out any) error {
	if ps.world == 0 {
		// Never the page's own world (a zero contextId is not sent, and would
		// mean the main world): as the browser says for a world that is gone.
		return fmt.Errorf("page script %s: cannot find context: no isolated world", op)
	}
	return b.evaluateIn(ctx, ps.c, ps.id, ps.world, op, args, out)
}

// evaluateIn runs the page script once in world world of session:
// (Source)(op, args), nothing else.
func (b *Browser) evaluateIn(ctx context.Context, c *wire.Conn, session string, world int64, op string, args scriptArgs, out any) error {
	cmd, err := scriptCall(world, op, args)
	if err != nil {
		return err
	}
	r, err := call(ctx, c, session, cmd)
	if err != nil {
		return err
	}
	return scriptReply(op, r, out)
}

// scriptCall is the command that runs the page script once in world:
// (Source)(op, args), nothing else.
func scriptCall(world int64, op string, args scriptArgs) (wire.Evaluate, error) {
	if world == 0 {
		return wire.Evaluate{}, fmt.Errorf("page script %s: cannot find context: no isolated world", op)
	}
	opJSON, err := json.Marshal(op)
	if err != nil {
		return wire.Evaluate{}, err
	}
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return wire.Evaluate{}, err
	}
	expr := "(" + pagescript.Source + "\n)(" + string(opJSON) + ", " + string(argsJSON) + ")"
	return wire.Evaluate{Expression: expr, ContextID: world, ReturnByValue: true, Silent: true}, nil
}

// scriptReply decodes the page script's reply into out.
func scriptReply(op string, r wire.EvaluateResult, out any) error {
	if d := r.ExceptionDetails; d != nil {
		return fmt.Errorf("page script %s threw: %s %s", op, d.Text, d.Exception.Description)
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("page script %s: decode %s: %w", op, r.Result.Value, err)
	}
	return nil
}

// readOps are the page script's ops that change nothing on the page but the
// scroll position of their target (locate reveals it) and the world's own
// state: run may send them before it knows the world is still the page's.
var readOps = map[string]bool{
	"info": true, "observe": true, "find": true, "frameInfo": true, "frameHit": true,
	"locate": true, "shotBox": true, "hasText": true,
}

// runPipelined is run's first attempt for a read op in a world ps already
// has: the frame tree's read and the script's call go out back to back (the
// page's session handles them in order), one round trip to the browser where
// reading the tree first took two. The script's answer counts only if the
// tree shows the document the world was made in; otherwise it is dropped
// (a world of a document that left runs nothing of the page's) and run goes on
// as before. If also is given, the answer counts only if the tree passes it
// too. done is false when run must; err is run's answer when done.
func (b *Browser) runPipelined(ctx context.Context, ps *pageSession, op string, args scriptArgs, out any, also func(wire.FrameTree) bool) (done bool, err error) {
	a := args
	a.World = ps.nonce
	cmd, err := scriptCall(ps.world, op, a)
	if err != nil {
		return true, err
	}
	treeWait := send(ps.c, ps.id, wire.GetFrameTree{})
	evalWait := send(ps.c, ps.id, cmd)
	tree, err := treeWait(ctx)
	if err != nil || tree.FrameTree.Frame.LoaderID != ps.loader || (also != nil && !also(tree.FrameTree)) {
		// An error is run's to judge (it reads the tree again); a new document
		// has a world of its own to make. The answer, if any comes, is of the
		// old one (or not the one the caller wants).
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = evalWait(ctx)
		}()
		return false, nil
	}
	r, err := evalWait(ctx)
	if err != nil {
		if worldGone(err) {
			ps.world = 0
			return false, nil
		}
		return true, err
	}
	var raw json.RawMessage
	if err := scriptReply(op, r, &raw); err != nil {
		return true, err
	}
	var probe struct {
		Error *scriptError `json:"error"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return true, fmt.Errorf("page script %s: %w", op, err)
	}
	if probe.Error != nil {
		if probe.Error.Reason == reasonWorldMismatch {
			ps.world = 0
			return false, nil
		}
		return true, probe.Error.err(op)
	}
	return true, json.Unmarshal(raw, out)
}

// run runs op in the page's world, creating the world when the page has a new
// document or the old world is gone. out's Error field receives a script error.
func (b *Browser) run(ctx context.Context, ps *pageSession, op string, args scriptArgs, out any) error {
	if ps.world != 0 && readOps[op] {
		if done, err := b.runPipelined(ctx, ps, op, args, out, nil); done {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		err := b.ensureWorld(ctx, ps)
		if err == nil {
			a := args
			a.World = ps.nonce
			var probe struct {
				Error *scriptError `json:"error"`
			}
			var raw json.RawMessage
			if err = b.evaluate(ctx, ps, op, a, &raw); err == nil {
				if jerr := json.Unmarshal(raw, &probe); jerr != nil {
					return fmt.Errorf("page script %s: %w", op, jerr)
				}
				if probe.Error == nil {
					return json.Unmarshal(raw, out)
				}
				if probe.Error.Reason != reasonWorldMismatch {
					return probe.Error.err(op)
				}
				err = probe.Error.err(op)
			}
		}
		// The document changed under us (the world or its context is gone): build
		// a world in the new document once more.
		if attempt >= 2 || !worldGone(err) {
			return err
		}
		ps.world = 0
	}
}

// worldGone reports whether err says the isolated world's context is gone.
func worldGone(err error) bool {
	if err == nil {
		return false
	}
	m := strings.ToLower(err.Error())
	return strings.Contains(m, reasonWorldMismatch) || strings.Contains(m, "cannot find context") ||
		strings.Contains(m, "execution context was destroyed") || strings.Contains(m, "no frame")
}
