package cdp

import (
	"context"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

func TestPoolContextsIsolateCookies(t *testing.T) {
	b, _ := newDriver(t, Options{Pool: true})
	ctx := tctx(t)
	t.Cleanup(func() {
		_ = b.DisposeContext(context.Background(), "A", nil)
		_ = b.DisposeContext(context.Background(), "B", nil)
	})
	open := func(key, c, path string) browser.Page {
		p, err := b.Open(ctx, browser.OpenRequest{Key: key, URL: site.Path(path), Context: c})
		if err != nil {
			t.Fatalf("open %s in %s: %v", path, c, err)
		}
		if p.Context != c {
			t.Errorf("page %+v: context %q, want %q", p, p.Context, c)
		}
		return p
	}
	setA := open("a1", "A", "/set-cookie?sid=a")
	waitTitle(t, b, setA.ID, fixture.TitleSetCookie)
	cookA := open("a2", "A", "/cookies")
	waitTitle(t, b, cookA.ID, "Cookies: sid=a")
	cookB := open("b1", "B", "/cookies")
	waitTitle(t, b, cookB.ID, "Cookies: none")
	if cookA.WindowID == cookB.WindowID || setA.WindowID != cookA.WindowID {
		t.Errorf("windows: A %s/%s, B %s", setA.WindowID, cookA.WindowID, cookB.WindowID)
	}
	// The default context does not see A's cookie either.
	def, err := b.Open(ctx, browser.OpenRequest{Key: "def", URL: site.Path("/cookies"), NewWindow: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close(context.Background(), browser.CloseRequest{Key: "def", ID: def.ID, OwnsWindow: true})
	})
	waitTitle(t, b, def.ID, "Cookies: none")

	// Closing A's pages leaves B's.
	for key, id := range map[string]string{"a1": setA.ID, "a2": cookA.ID} {
		if err := b.Close(ctx, browser.CloseRequest{Key: key, ID: id, OwnsWindow: true}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Page(cookB.ID); !ok {
		t.Error("B's page went with A's")
	}
	for _, p := range s.Pages {
		if p.Context == "A" {
			t.Errorf("A still has %+v", p)
		}
	}
	// Without Pool a context is refused rather than silently shared.
	plain, _ := newDriver(t, Options{})
	if _, err := plain.Open(ctx, browser.OpenRequest{Key: "plain", URL: "about:blank", Context: "A"}); err == nil || !strings.Contains(err.Error(), "Pool") {
		t.Errorf("open with a context on a driver without Pool: %v", err)
	}
}
