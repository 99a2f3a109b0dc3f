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

// scriptFile is one file of an upload as the page script takes it (Data in
// base64, as encoding/json writes a []byte).
type scriptFile struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	LastModified int64  `json:"lastModified"`
	Data         []byte `json:"data"`
}

// uploadStep puts files into the file input target names: the page script's
// upload op builds the files in the isolated world, sets the input's files
// and dispatches input and change events, as the user's pick in the file
// chooser would, in the world the target belongs to (the page's, or a
// frame's: frames.go). No file path reaches the browser (its host may be another
// machine's) and no file chooser opens.
func (b *Browser) uploadStep(ctx context.Context, ps *pageSession, t browser.Target, files []browser.UploadFile) error {
	sf := make([]scriptFile, len(files))
	for i, f := range files {
		sf[i] = scriptFile{Name: f.Name, Type: f.Type, LastModified: f.LastModified, Data: f.Data}
	}
	_, _, err := b.locateArgs(ctx, ps, "upload", t, scriptArgs{Files: sf})
	return err
}
