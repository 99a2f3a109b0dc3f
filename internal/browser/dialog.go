package browser

import (
	"fmt"
	"time"
)

// JavaScript dialogs. A dialog (alert, confirm, prompt) a page opens blocks it
// until answered. Every driver leaves one open for the agent: the step whose
// input opened it returns it (ActResult.Dialog), every later step on the page
// but a dialog step is refused (ReasonDialogOpen) while it shows, and a dialog
// step answers it (accept or dismiss, a prompt's text). One nobody answers is
// dismissed DialogTimeout after it opened, so that no page is blocked for ever.
// A beforeunload prompt is never left open: a step that leaves the page (and a
// close) accepts it.

// ReasonDialogOpen is the ActError reason of a step (other than a dialog step)
// on a page that shows a JavaScript dialog: nothing ran.
const ReasonDialogOpen = "dialog_open"

// ReasonNoDialog is the ActError reason of a dialog step on a page that shows
// no dialog: nothing ran.
const ReasonNoDialog = "no_dialog"

// DialogTimeout is how long a dialog may wait for a dialog step: then the
// driver dismisses it (Cancel).
const DialogTimeout = 5 * time.Minute

// Dialog is a JavaScript dialog a page shows.
type Dialog struct {
	// Type is alert, confirm or prompt.
	Type string `json:"type"`
	// Message is the dialog's text.
	Message string `json:"message"`
	// DefaultPrompt is a prompt's default answer.
	DefaultPrompt string `json:"defaultPrompt,omitempty"`
}

func (d Dialog) String() string { return fmt.Sprintf("%s %q", d.Type, d.Message) }

// DialogOpen is every driver's refusal of a step on a page that shows d.
func DialogOpen(d Dialog) *ActError {
	return &ActError{Reason: ReasonDialogOpen, Message: fmt.Sprintf(
		"the page shows a JavaScript %s and nothing runs on it until it is answered; nothing ran. Answer it first with a Dialog step (answer Accept or Dismiss; text answers a prompt)", d)}
}

// NoDialog is every driver's refusal of a dialog step on a page that shows none.
func NoDialog() *ActError {
	return &ActError{Reason: ReasonNoDialog, Message: "the page shows no JavaScript dialog (none opened, or it was answered or dismissed after " +
		DialogTimeout.String() + "); nothing ran. Observe to see the page"}
}
