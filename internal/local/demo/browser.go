package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// What the browser shows, as the fixture site sees it.

// userTab points at the user's own page: the tab Chromium opened at launch.
// The demo has no hand of its own on the browser (tabwarden drives it over a
// pipe, with no DevTools port), so it shows that tab rather than opening one.
func (d *demo) userTab(ctx context.Context) error {
	if d.info.StartPage == "" {
		fmt.Fprintf(d.out, "\n# The browser's own tabs (this up drives a Chrome you started) are the user's: tabwarden never closes or touches them.\n")
		return nil
	}
	if err := d.waitFor(ctx, "the user's own tab ("+d.info.StartPage+") to show", func() (bool, error) {
		pages, err := d.pageList(ctx)
		for _, p := range pages {
			if p.Path == UserPage {
				return true, nil
			}
		}
		return false, err
	}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n# The user has a page of their own open: %s (Chromium opened it at launch). tabwarden will never close or touch it.\n", d.info.StartPage)
	return nil
}

// pageList lists the fixture site's pages the browser shows, as the site
// itself sees them (fixture.Presence: each page holds a stream open while it
// lives), by path.
func (d *demo) pageList(ctx context.Context) ([]fixture.OpenPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.info.FixtureURL+fixture.PresencePath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing the browser's pages of the fixture site: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	var pages []fixture.OpenPage
	if err := json.NewDecoder(resp.Body).Decode(&pages); err != nil {
		return nil, fmt.Errorf("listing the browser's pages of the fixture site: %w", err)
	}
	for i := range pages {
		if p, err := url.PathUnescape(pages[i].Path); err == nil {
			pages[i].Path = p
		}
	}
	return pages, nil
}

// browserPages prints the pages of the fixture site the browser shows, and
// whose each one is: the user's own tab, a page of the session's live windows,
// or a page no session owns any more (released by Keep, here or in an earlier
// demo: the user's now).
func (d *demo) browserPages(ctx context.Context) error {
	list, err := d.pageList(ctx)
	if err != nil {
		return err
	}
	owned, err := d.ownedPaths(ctx)
	if err != nil {
		return err
	}
	// A page the window reports Open tells the site it is there once it loaded.
	if err := d.waitFor(ctx, "the session's open pages to show", func() (bool, error) {
		shown := map[string]bool{}
		if list, err = d.pageList(ctx); err != nil {
			return false, err
		}
		for _, p := range list {
			shown[p.Path] = true
		}
		for p := range owned {
			if !shown[p] {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	d.note("what the browser shows now (pages of the fixture site):")
	for _, p := range list {
		owner := "released"
		switch {
		case p.Path == UserPage:
			owner = "the user's"
		case owned[p.Path]:
			owner = "the session's"
		}
		d.say("#   %-14s %-10s %s", owner, p.Title, p.Path)
	}
	return nil
}

// ownedPaths are the paths (and queries) of the session's Open windows' pages.
func (d *demo) ownedPaths(ctx context.Context) (map[string]bool, error) {
	var ws twv1.BrowserWindowList
	if err := d.k8s.List(ctx, &ws, client.InNamespace(d.ns), client.MatchingLabels{twv1.SessionLabel: SessionName}); err != nil {
		return nil, err
	}
	owned := map[string]bool{}
	for _, w := range ws.Items {
		if w.Status.Phase == twv1.WindowOpen && w.Status.URL != "" {
			if u, err := url.Parse(w.Status.URL); err == nil {
				if p, err := url.PathUnescape(u.RequestURI()); err == nil {
					owned[p] = true
				}
			}
		}
	}
	return owned, nil
}
