package testenv

import (
	"context"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
)

// Hand is a raw CDP connection of the test's own to the Chromium at endpoint,
// closed when the test ends: the user's hand that opens user windows and
// clicks, and the eye that checks what Chromium shows. Its events are drained.
func Hand(t testing.TB, endpoint string) *cdp.Browser {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b, err := cdp.New(ctx, endpoint, cdp.Options{})
	if err != nil {
		cancel()
		t.Fatalf("raw CDP connection: %v", err)
	}
	go func() {
		for range b.Events() {
		}
	}()
	t.Cleanup(func() { b.Shutdown(); cancel() })
	return b
}

// Pages are the pages b sees now, by id.
func Pages(t testing.TB, b browser.Browser) map[string]browser.Page {
	t.Helper()
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	out := map[string]browser.Page{}
	for _, p := range s.Pages {
		out[p.ID] = p
	}
	return out
}
