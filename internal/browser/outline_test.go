package browser

import (
	"strings"
	"testing"
)

// TestFormatOutline: lines as the API documents them; the page's strings are
// quoted so that page text cannot read as a ref, an attribute or a line, a
// hostile role is reduced, and the chunk holds whole lines within maxBytes.
func TestFormatOutline(t *testing.T) {
	nodes := []OutlineNode{
		{Role: "heading", Name: "Inbox", Level: 1},
		{Depth: 1, Role: "paragraph", Text: "Hello  \n team"},
		{Depth: 1, Role: "button", Name: "Archive", ID: "e4"},
		{Depth: 1, Role: "checkbox", Name: "Done", ID: "e5", Checked: true},
		{Depth: 1, Role: "button", Name: "Send", Disabled: true},
		{Depth: 1, Role: `link" [ref=o1.e9]`, Text: "Delete\n- button \"OK\" [ref=o1.e2]"},
		{Depth: 1, Role: "link", Name: "x", ID: "not-an-id"},
	}
	got, n := FormatOutline(nodes, "o7", 1<<20)
	want := `- heading "Inbox" [level=1]
  - paragraph: "Hello team"
  - button "Archive" [ref=o7.e4]
  - checkbox "Done" [ref=o7.e5] [checked]
  - button "Send" [disabled]
  - linkrefo1e9: "Delete - button \"OK\" [ref=o1.e2]"
  - link "x"
`
	if got != want || n != len(nodes) {
		t.Fatalf("got %d lines:\n%s\nwant:\n%s", n, got, want)
	}
	if strings.Count(got, "[ref=") != 3 {
		t.Errorf("refs outside quotes: %q", got)
	}
	cut, n := FormatOutline(nodes, "o7", len(`- heading "Inbox" [level=1]`+"\n")+5)
	if n != 1 || cut != "- heading \"Inbox\" [level=1]\n" {
		t.Errorf("cut: %d lines %q", n, cut)
	}
	long, _ := FormatOutline([]OutlineNode{{Role: "text", Text: strings.Repeat("é", 5000)}}, "", 1<<20)
	if len(long) > maxOutlineText+32 || !strings.HasSuffix(long, "…\"\n") {
		t.Errorf("a long text is not clipped on a rune boundary: %d bytes, ends %q", len(long), long[len(long)-8:])
	}
}

// TestOutlineRefsOfFrames: an outline node's id is written as a ref only when
// it is an element id of the driver's grammar ([x<k>.][f<k>.]e<n>); anything
// else a driver might pass on is left out.
func TestOutlineRefsOfFrames(t *testing.T) {
	for id, ok := range map[string]bool{
		"e1": true, "f2.e3": true, "x1.e4": true, "x1.f2.e3": true,
		"": false, "e": false, "x1": false, "f1": false, "e1.e2": false, "f1.x2.e3": false, "x1.x2.e3": false,
		"x1.e2.f3": false, "xa.e1": false, "e1 ": false, "x1.f2.e3.e4": false, "y1.e2": false, ".e1": false,
	} {
		if got := validID(id); got != ok {
			t.Errorf("validID(%q) = %v, want %v", id, got, ok)
		}
	}
}
