package cdp

import (
	"context"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// hoverStep moves the pointer over a target: the page script locates it (as
// for a click) and one Input.dispatchMouseEvent mouseMoved, with no button,
// goes to its point. Nothing is pressed and nothing is activated.
func (b *Browser) hoverStep(ctx context.Context, ps *pageSession, t browser.Target) error {
	session, p, err := b.locateIn(ctx, ps, "locate", t)
	if err != nil {
		return err
	}
	_, err = call(ctx, ps.c, session, wire.DispatchMouseEvent{Type: wire.MouseMoved, X: p.X, Y: p.Y})
	return err
}
