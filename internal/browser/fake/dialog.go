package fake

import (
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// JavaScript dialogs, as every driver has them (internal/browser/dialog.go): a
// click on an element with a Dialog opens it and returns it; while it shows
// every step but a dialog step is refused (dialog_open); a dialog step
// answers it, and one with none showing is refused (no_dialog); one nobody
// answers is dismissed after the dialog timeout.

// Dialog is the JavaScript dialog a click on an Element opens, and the titles
// the page takes when it is answered: Accepted (a prompt's gets " " and the
// answer) or Dismissed.
type Dialog struct {
	browser.Dialog
	Accepted, Dismissed string
}

// shownDialog is a dialog showing on a tab since at; from is the element's
// (nil: OpenDialog).
type shownDialog struct {
	browser.Dialog
	from *Dialog
	at   time.Time
}

// SetDialogTimeout sets how long a dialog shows unanswered before the fake
// dismisses it (browser.DialogTimeout by default).
func (b *Browser) SetDialogTimeout(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dialogTimeout = d
}

// Dialog is the dialog page id shows, if any.
func (b *Browser) Dialog(id string) (browser.Dialog, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tabs[id]; t != nil && t.shown != nil && !b.expireDialogLocked(t) {
		return t.shown.Dialog, true
	}
	return browser.Dialog{}, false
}

// expireDialogLocked dismisses t's dialog once it showed for the dialog
// timeout, and reports whether it did.
func (b *Browser) expireDialogLocked(t *tab) bool {
	if t.shown == nil || time.Since(t.shown.at) < b.dialogTimeout {
		return false
	}
	b.answerLocked(t, false, "")
	return true
}

// dialogGateLocked refuses a step on t that its dialog (or its absence) does
// not allow.
func (b *Browser) dialogGateLocked(t *tab, step browser.Step) *browser.ActError {
	b.expireDialogLocked(t)
	switch {
	case step.Kind == browser.StepDialog && t.shown == nil:
		return browser.NoDialog()
	case step.Kind != browser.StepDialog && t.shown != nil:
		return browser.DialogOpen(t.shown.Dialog)
	}
	return nil
}

// answerLocked answers t's dialog: the page takes the element's title.
func (b *Browser) answerLocked(t *tab, accept bool, text string) {
	d := t.shown
	t.shown, t.dialog = nil, ""
	if d == nil || d.from == nil {
		return
	}
	title := d.from.Dismissed
	if accept {
		title = d.from.Accepted
		if d.Type == "prompt" {
			if text == "" {
				text = d.DefaultPrompt
			}
			title += " " + text
		}
	}
	if title != "" {
		t.title = title
		b.emit(browser.PageUpdated, b.page(t))
	}
}
