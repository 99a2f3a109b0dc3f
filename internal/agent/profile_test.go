package agent

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

func ids(c tabListContent) []string {
	var out []string
	for _, t := range c.tabs {
		out = append(out, t.ID)
	}
	return out
}

// TestTabsVisibleIn: a namespace sees the user's pages (on a pool profile, of
// the default context and of its own sessions' contexts), never another
// namespace's context; at most 500 tabs with the full count.
func TestTabsVisibleIn(t *testing.T) {
	pages := []bindablePage{
		{Page: browser.Page{ID: "a", URL: "https://user.example/"}},
		{Page: browser.Page{ID: "b", URL: "https://a.example/", Context: "team-a/s1"}},
		{Page: browser.Page{ID: "c", URL: "https://b.example/", Context: "team-b/s1"}},
		{Page: browser.Page{ID: "d", URL: "https://ab.example/", Context: "team-ab/s1"}},
	}
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"team-a", []string{"a", "b"}},
		{"team-b", []string{"a", "c"}},
		{"team-ab", []string{"a", "d"}},
		{"other", []string{"a"}},
	} {
		got := tabsVisibleIn(tc.ns, pages)
		if !slices.Equal(ids(got), tc.want) || got.count != int32(len(tc.want)) {
			t.Errorf("tabsVisibleIn(%q) = %v (count %d), want %v", tc.ns, ids(got), got.count, tc.want)
		}
	}

	var many []bindablePage
	for i := range 600 {
		many = append(many, bindablePage{Page: browser.Page{ID: fmt.Sprintf("t%03d", i), URL: "https://x.example/"}})
	}
	got := tabsVisibleIn("any", many)
	if len(got.tabs) != 500 || got.count != 600 || got.tabs[499].ID != "t499" {
		t.Errorf("600 tabs: listed %d, count %d; want the first 500 and count 600", len(got.tabs), got.count)
	}
	if !got.equal(tabsVisibleIn("any", many)) || got.equal(tabsVisibleIn("any", many[:10])) {
		t.Errorf("equal compares the content")
	}
}
