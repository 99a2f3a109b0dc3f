package fake_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/browsertest"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/testenv"
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

// ReadingURL models the fixture's /reading page (browsertest.Reading).
func (w world) ReadingURL(older int) string {
	url := fmt.Sprintf("https://site.example/reading?older=%d", older)
	node := func(role, name, text string, level int) fake.Element {
		return fake.Element{Node: browser.OutlineNode{Role: role, Name: name, Text: text, Level: level}}
	}
	els := []fake.Element{
		{Role: "link", Name: "Sent"},
		{Role: "button", Name: "Archive"},
		{Role: "link", Name: "Reply"},
		{Role: "textbox", Name: "Search mail", Text: "quarterly"},
		{Role: "button", Name: fixture.ReadingHidden + "button", Hidden: true},
		{Name: fixture.ReadingHidden + "display-none", Hidden: true},
		node("heading", fixture.ReadingSubject, "", 2),
		node("paragraph", "", "From: Ada Lovelace", 0),
		node("paragraph", "", fixture.ReadingBody, 0),
		{Name: "Regards, Ada"},
		node("table", "", "", 0),
		node("columnheader", "", "Region", 0),
		node("cell", "", "North", 0),
		node("cell", "", "1200", 0),
	}
	for i := 1; i <= older; i++ {
		els = append(els, node("listitem", "", fixture.ReadingItem(i), 0))
	}
	w.b.SetSite(url, els...)
	return url
}

// Caps: the fake is a model of a browser; it models only some fixture pages.
func (w world) Caps() browsertest.Caps { return browsertest.Caps{Simulated: true} }

// DialogURL models the fixture's /dialog page (browsertest.Dialogs).
func (w world) DialogURL() string {
	url := "https://site.example/dialog"
	w.b.SetSite(url,
		fake.Element{Role: "button", Name: "Delete", Dialog: &fake.Dialog{Dialog: browser.Dialog{Type: "confirm", Message: "Delete everything?"}, Accepted: "Deleted", Dismissed: "Kept"}},
		fake.Element{Role: "button", Name: "Rename", Dialog: &fake.Dialog{Dialog: browser.Dialog{Type: "prompt", Message: "New name?", DefaultPrompt: "draft"}, Accepted: "Renamed", Dismissed: "Not renamed"}},
		fake.Element{Role: "button", Name: "Notify", Dialog: &fake.Dialog{Dialog: browser.Dialog{Type: "alert", Message: "Saved"}, Accepted: "Notified", Dismissed: "Notified"}},
	)
	return url
}

// Title is the page's title as the fake shows it.
func (w world) Title(t testing.TB, id string) string {
	snap, err := w.b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := snap.Page(id)
	return p.Title
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

// Viewport is the fake's viewport (browsertest.Screens).
func (w world) Viewport(t testing.TB, id string) (int, int) {
	return fake.ViewportWidth, fake.ViewportHeight
}

// Box is the box of every fake element: 200x40.
func (w world) Box(t testing.TB, id, selector string) (int, int) { return 200, 40 }

// ReadingPage is the fixture's /reading content (browsertest.Reading).
func (w world) ReadingPage() browsertest.ReadingPage { return testenv.ReadingPage() }
