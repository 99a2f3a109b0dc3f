package cdp

import (
	"context"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// selectStep chooses the option of a drop-down target whose label (else
// value) is text: the page script's select op sets the <select>'s value in
// the isolated world and dispatches input and change events, as the user's
// choice would. Nothing is focused or activated.
func (b *Browser) selectStep(ctx context.Context, ps *pageSession, t browser.Target, text string) error {
	_, _, err := b.locateText(ctx, ps, "select", t, text)
	return err
}

// fillStep fills fields: the page script's field op checks every target first
// (a refusal names the field and nothing is typed); then each field is
// focused with its content selected (fillFocus) and its text inserted
// (Input.insertText), which replaces the selection as the user's typing would.
func (b *Browser) fillStep(ctx context.Context, ps *pageSession, fields []browser.FillField) error {
	for i, f := range fields {
		if _, _, err := b.locateIn(ctx, ps, "field", f.Target); err != nil {
			return browser.FieldError(i, err, browser.FilledBefore(0))
		}
	}
	for i, f := range fields {
		if _, _, err := b.locateIn(ctx, ps, "fillFocus", f.Target); err != nil {
			return browser.FieldError(i, err, browser.FilledBefore(i))
		}
		if _, err := call(ctx, ps.c, ps.id, wire.InsertText{Text: f.Text}); err != nil {
			return browser.FieldError(i, err, browser.FilledBefore(i))
		}
	}
	return nil
}
