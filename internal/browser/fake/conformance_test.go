package fake_test

import (
	"fmt"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/browsertest"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
)

// world is the fake's outside: the user and the pages act on the fake directly.
type world struct{ b *fake.Browser }

func (w world) URL() string { return "https://site.example/spawner" }

func (w world) UserOpenWindow(t testing.TB, n int) (string, []string) {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://user.example/%d", i)
	}
	return w.b.UserOpenWindow(urls...)
}

func (w world) UserCloseTab(t testing.TB, id string) { w.b.UserCloseTab(id) }

func (w world) Spawn(t testing.TB, opener string, popup bool) string {
	id, err := w.b.Spawn(opener, "https://site.example/landing", popup)
	if err != nil {
		t.Fatalf("spawn from %s: %v", opener, err)
	}
	return id
}

func (w world) Open(t testing.TB, id string) bool { return w.b.HasPage(id) }
func (w world) Disconnect(testing.TB)             { w.b.Disconnect() }
func (w world) Reconnect(testing.TB)              { w.b.Reconnect() }

// TestConformance runs the seam's conformance suite against the fake; the same
// suite runs against the cdp and extension drivers on real Chromium.
func TestConformance(t *testing.T) {
	browsertest.Run(t, func(t *testing.T) (browser.Browser, browsertest.World) {
		b := fake.New()
		// The user's pages open a tab from a target=_blank link, as the
		// suite's acts click it.
		for i := range 4 {
			b.SetSite(fmt.Sprintf("https://user.example/%d", i), fake.Element{Role: "link", Name: browsertest.ActSpawnSelector, Spawn: "https://site.example/landing", Tab: true})
		}
		// So does the suite's own page (URL), as the fixture's /spawner does.
		b.SetSite(world{b}.URL(), fake.Element{Role: "link", Name: browsertest.ActSpawnSelector, Spawn: "https://site.example/landing", Tab: true})
		return b, world{b}
	})
}
