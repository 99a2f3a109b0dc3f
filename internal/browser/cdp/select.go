package cdp

import (
	"context"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// selectStep chooses the option of a drop-down target whose label (else
// value) is text: the page script's select op sets the <select>'s value in
// the isolated world and dispatches input and change events, as the user's
// choice would. Nothing is focused or activated.
func (b *Browser) selectStep(ctx context.Context, ps *pageSession, t browser.Target, text string) error {
	var out struct {
		Value string `json:"value"`
	}
	return b.run(ctx, ps, "select", scriptArgs{Target: targetArgs(t), Text: text}, &out)
}
