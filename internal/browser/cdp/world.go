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
	return b.worldFor(ctx, ps, tree.FrameTree.Frame)
}

// worldFor makes sure ps has an isolated world in f, the page's main frame as
// the frame tree was just read.
func (b *Browser) worldFor(ctx context.Context, ps *pageSession, f wire.Frame) error {
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
	opJSON, err := json.Marshal(op)
	if err != nil {
		return err
	}
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return err
	}
	expr := "(" + pagescript.Source + "\n)(" + string(opJSON) + ", " + string(argsJSON) + ")"
	if world == 0 {
		return fmt.Errorf("page script %s: cannot find context: no isolated world", op)
	}
	r, err := call(ctx, c, session, wire.Evaluate{Expression: expr, ContextID: world, ReturnByValue: true, Silent: true})
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
// just before (nil: run reads it). The tree is read before the script's call,
// never alongside it: a world's context id names a context only within its
// renderer process, and after a navigation to another process the same id
// may name one of the page's own (the call would run the page script where
// the page sees it).
func (b *Browser) runRead(ctx context.Context, ps *pageSession, read *wire.Frame, op string, args scriptArgs, out any) error {
	for attempt := 0; ; attempt++ {
		var err error
		if attempt == 0 && read != nil {
			err = b.worldFor(ctx, ps, *read)
		} else {
			err = b.ensureWorld(ctx, ps)
		}
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
