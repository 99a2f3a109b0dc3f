// The driver's DevTools session on a page, and the JavaScript dialogs a page
// opens while (or before) a step runs on it.

package cdp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// pageSession is the driver's session on one page and the isolated world of its
// current document.
type pageSession struct {
	mu     sync.Mutex // serializes steps on the page; guards the fields below
	c      *wire.Conn
	id     string // DevTools session id; "" until attached
	loader string // the frame's loaderId the world belongs to
	world  int64  // execution context id of the isolated world; 0: none
	fn     string // the page function's object id in that world (install); "": none
	nonce  string // the world's nonce (page.js init)
	mac    bool   // the page reports a Mac (Mod is Meta there)
	// enabling is the attach's Page.enable, sent and not yet awaited (see
	// session); nil once awaited; attaching, its Target.setAutoAttach.
	enabling  func(context.Context) (wire.Empty, error)
	attaching func(context.Context) (wire.Empty, error)
	// frames: the frame documents the driver reaches with worlds of their own,
	// by label (x<k>, frames.go); nextFrame numbers them, never reused.
	frames    map[string]*frameWorld
	nextFrame int
	// allow is the running step's ActRequest.FrameAllowed.
	allow func(string) error

	// Guarded by Browser.mu: the out-of-process frames of the page the
	// browser attached the driver to, by session (frames.go).
	children map[string]*childTarget

	// Guarded by Browser.mu: steps running on the page and the cancel of the
	// running one; the dialog the page shows (left for a dialog step), when it
	// opened during a step (opened), and the timer that dismisses it; a
	// beforeunload prompt that opened while no step ran (pending).
	acting  int
	cancel  context.CancelFunc
	open    *shownDialog
	opened  bool
	pending *dialog
}

// dialog is a JavaScript dialog (alert, confirm, prompt, beforeunload) a page opened.
type dialog = browser.Dialog

// shownDialog is a dialog left showing for a dialog step, with the timer that
// dismisses it after the dialog timeout.
type shownDialog struct {
	dialog
	timer *time.Timer
}

// session returns the page's session, locked, attaching when needed.
func (b *Browser) session(ctx context.Context, c *wire.Conn, page string) (*pageSession, error) {
	b.mu.Lock()
	ps := b.sessions[page]
	if ps == nil || ps.c != c {
		ps = &pageSession{c: c}
		b.sessions[page] = ps
	}
	b.mu.Unlock()
	ps.mu.Lock()
	if ps.id != "" {
		if err := ps.enabled(ctx); err != nil {
			ps.mu.Unlock()
			return nil, err
		}
		return ps, nil
	}
	r, err := call(ctx, c, "", wire.AttachToTarget{TargetID: page, Flatten: true})
	if err != nil {
		ps.mu.Unlock()
		if wire.IsGone(err) {
			return nil, fmt.Errorf("page %s: %w", page, browser.ErrNotFound)
		}
		return nil, err
	}
	b.mu.Lock()
	ps.id = r.SessionID
	b.mu.Unlock()
	// Page events tell of JavaScript dialogs, which block the page (and every
	// step) until answered. Sent without waiting: the browser handles the
	// session's commands in order, so the caller's next command goes out right
	// behind it and the two cost one round trip (on a remote browser, a round
	// trip is the network's RTT); the caller checks the reply with enabled.
	ps.enabling = send(c, r.SessionID, wire.PageEnable{})
	// The page's out-of-process frames (frames.go).
	ps.attaching = send(c, r.SessionID, autoAttach())
	return ps, nil
}

// enabled waits for the reply of the attach's Page.enable, when it has not
// been awaited yet; it is awaited once, whatever the outcome. The session
// must be locked.
func (ps *pageSession) enabled(ctx context.Context) error {
	if a := ps.attaching; a != nil {
		ps.attaching = nil
		defer func() { _, _ = a(ctx) }() // an old browser without the filter: frames stay unreached
	}
	if ps.enabling == nil {
		return nil
	}
	wait := ps.enabling
	ps.enabling = nil
	_, err := wait(ctx)
	return err
}

// onDialog handles a JavaScript dialog on a page the driver acts on.
//
// A beforeunload prompt is accepted while a step runs (the step is leaving the
// page); one that opens while none runs is kept for the next step, which
// accepts it first (closes never wait on it: closeTarget goes on).
//
// An alert, confirm or prompt is left open for the agent: a step running
// stops waiting on the page (its call would block until the dialog is
// answered) and returns it (ActResult.Dialog); later steps are refused
// (dialog_open) until a dialog step answers it; unanswered, it is dismissed
// after the dialog timeout.
func (b *Browser) onDialog(c *wire.Conn, session string, d dialog) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ps := range b.sessions {
		if ps.c != c || ps.id != session {
			continue
		}
		if d.Type == "beforeunload" {
			if ps.acting == 0 {
				ps.pending = &d
				return
			}
			go answerDialog(c, session, true, "")
			return
		}
		b.showLocked(ps, d)
		if ps.acting > 0 {
			ps.opened = true
			if ps.cancel != nil {
				ps.cancel()
			}
		}
		return
	}
}

// showLocked records d as the dialog ps's page shows, dismissed after the
// dialog timeout unless answered first.
func (b *Browser) showLocked(ps *pageSession, d dialog) {
	if ps.open != nil {
		ps.open.timer.Stop()
	}
	shown := &shownDialog{dialog: d}
	timeout := b.opts.DialogTimeout
	if timeout <= 0 {
		timeout = browser.DialogTimeout
	}
	shown.timer = time.AfterFunc(timeout, func() {
		b.mu.Lock()
		expired := ps.open == shown
		if expired {
			ps.open = nil
		}
		b.mu.Unlock()
		if expired {
			b.log.Info("dismissing a JavaScript dialog nobody answered", "dialog", d.String(), "after", timeout)
			answerDialog(ps.c, ps.id, false, "")
		}
	})
	ps.open = shown
}

// onDialogClosed forgets the dialog of a page: answered (by a dialog step, the
// timeout or the user), or gone with its document.
func (b *Browser) onDialogClosed(c *wire.Conn, session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ps := range b.sessions {
		if ps.c == c && ps.id == session {
			ps.pending = nil
			if ps.open != nil {
				ps.open.timer.Stop()
				ps.open = nil
			}
		}
	}
}

func answerDialog(c *wire.Conn, session string, accept bool, text string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = wire.Call(ctx, c, session, wire.HandleJavaScriptDialog{Accept: accept, PromptText: text})
}

// dialogGate refuses a step that the page's dialog (or its absence) does not
// allow: any step but a dialog step while one shows (dialog_open), a dialog
// step while none does (no_dialog).
func (b *Browser) dialogGate(ps *pageSession, kind browser.StepKind) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case kind == browser.StepDialog && ps.open == nil:
		return browser.NoDialog()
	case kind != browser.StepDialog && ps.open != nil:
		return browser.DialogOpen(ps.open.dialog)
	}
	return nil
}

// answer runs a dialog step: the page's dialog is answered (a prompt accepted
// with text, else its default).
func (b *Browser) answer(ctx context.Context, ps *pageSession, accept bool, text string) error {
	b.mu.Lock()
	d := ps.open
	if d != nil {
		d.timer.Stop()
		ps.open = nil
	}
	b.mu.Unlock()
	if d == nil {
		return browser.NoDialog()
	}
	if accept && d.Type == "prompt" && text == "" {
		text = d.DefaultPrompt
	}
	if !accept || d.Type != "prompt" {
		text = ""
	}
	_, err := call(ctx, ps.c, ps.id, wire.HandleJavaScriptDialog{Accept: accept, PromptText: text})
	if err != nil && !wire.IsGone(err) && strings.Contains(err.Error(), "No dialog is showing") {
		return browser.NoDialog()
	}
	return err
}

// beginStep marks a step running on ps (cancel stops it when a dialog opens)
// and accepts a beforeunload prompt left open.
func (b *Browser) beginStep(ps *pageSession, cancel context.CancelFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps.acting++
	ps.cancel, ps.opened = cancel, false
	if d := ps.pending; d != nil {
		ps.pending = nil
		go answerDialog(ps.c, ps.id, true, "")
	}
}

// endStep ends a step on ps and returns the dialog its input opened, left
// showing, if any.
func (b *Browser) endStep(ps *pageSession) *dialog {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps.acting--
	ps.cancel = nil
	opened := ps.opened
	ps.opened = false
	if opened && ps.open != nil {
		d := ps.open.dialog
		return &d
	}
	return nil
}

// dropSession forgets a page's session after the browser ended it, so the next
// step attaches again.
func (b *Browser) dropSession(c *wire.Conn, session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for page, ps := range b.sessions {
		if ps.c == c && ps.id == session {
			delete(b.sessions, page)
		}
	}
}
