// The driver's DevTools session on a page, and the JavaScript dialogs a page
// opens while (or before) a step runs on it.

package cdp

import (
	"context"
	"fmt"
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
	nonce  string // the world's nonce (page.js init)
	mac    bool   // the page reports a Mac (Mod is Meta there)
	// enabling is the attach's Page.enable, sent and not yet awaited (see
	// session); nil once awaited.
	enabling func(context.Context) (wire.Empty, error)

	// Guarded by Browser.mu: steps running on the page, the dialogs dismissed
	// while they ran, and a dialog that opened while none ran.
	acting    int
	dismissed []string
	pending   *dialog
}

// dialog is a JavaScript dialog (alert, confirm, prompt, beforeunload) a page opened.
type dialog struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (d dialog) String() string { return fmt.Sprintf("%s %q", d.Type, d.Message) }

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
	return ps, nil
}

// enabled waits for the reply of the attach's Page.enable, when it has not
// been awaited yet; it is awaited once, whatever the outcome. The session
// must be locked.
func (ps *pageSession) enabled(ctx context.Context) error {
	if ps.enabling == nil {
		return nil
	}
	wait := ps.enabling
	ps.enabling = nil
	_, err := wait(ctx)
	return err
}

// onDialog handles a JavaScript dialog on a page the driver acts on. While a
// step runs it is answered at once, so that the step does not hang: a
// beforeunload is accepted (the step is leaving the page), anything else is
// dismissed (cancel: no answer is given on anyone's behalf), and the step
// reports it. A dialog that opens while no step runs is left to the user; the
// next step on the page dismisses it first.
func (b *Browser) onDialog(c *wire.Conn, session string, d dialog) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ps := range b.sessions {
		if ps.c != c || ps.id != session {
			continue
		}
		if ps.acting == 0 {
			ps.pending = &d
			return
		}
		if d.Type != "beforeunload" {
			ps.dismissed = append(ps.dismissed, d.String())
		}
		go answerDialog(c, session, d.Type == "beforeunload")
		return
	}
}

// onDialogClosed forgets a pending dialog that was answered (by the user).
func (b *Browser) onDialogClosed(c *wire.Conn, session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ps := range b.sessions {
		if ps.c == c && ps.id == session {
			ps.pending = nil
		}
	}
}

func answerDialog(c *wire.Conn, session string, accept bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = wire.Call(ctx, c, session, wire.HandleJavaScriptDialog{Accept: accept})
}

// beginStep marks a step running on ps and answers a dialog left open.
func (b *Browser) beginStep(ps *pageSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps.acting++
	ps.dismissed = nil
	if d := ps.pending; d != nil {
		ps.pending = nil
		if d.Type != "beforeunload" {
			ps.dismissed = append(ps.dismissed, d.String()+" (open before the step)")
		}
		go answerDialog(ps.c, ps.id, d.Type == "beforeunload")
	}
}

// endStep ends a step on ps and returns the dialogs dismissed meanwhile.
func (b *Browser) endStep(ps *pageSession) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps.acting--
	d := ps.dismissed
	ps.dismissed = nil
	return d
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
