package browser

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// OutlineChunkBytes is what an observe's outline chunk is bounded by: the
// formatted text of the lines a driver returns stops at about this many bytes
// (FormatOutline cuts at exactly maxBytes).
const OutlineChunkBytes = 32 << 10

// Bounds of one outline node as FormatOutline writes it.
const (
	maxOutlineDepth = 24
	maxOutlineRole  = 32
	maxOutlineName  = 512
	maxOutlineText  = 4096
)

// OutlineNode is one node of a page's outline (the page script's walk of the
// document: one node per visible element with a role, or per run of text).
type OutlineNode struct {
	// Depth is the node's nesting level among outline nodes (0 at the top).
	Depth int
	// Role is the element's ARIA role (explicit, or implicit from its tag), or
	// "text" for a run of text.
	Role string
	// Name is the accessible name (a link's or heading's text, a field's label).
	Name string
	// Text is the node's own text (a paragraph's, a cell's, a field's value).
	Text string
	// ID is the element id of an interactive node that can be targeted: a ref of
	// the observation's document, exactly like Element.ID. Empty otherwise.
	ID string
	// Level is a heading's level (1-6), else 0.
	Level int
	// Checked and Disabled are the states of a checkbox, radio or control.
	Checked, Disabled bool
}

// FormatOutline writes nodes as outline lines, at most maxBytes of whole
// lines, and returns the text and how many nodes it holds. Each line is
//
//	<2 spaces per depth>- role "name" [ref=<obsID>.<id>] [level=N] [checked] [disabled]: "text"
//
// The page's strings (name, text) are always quoted and escaped (strconv.Quote),
// and a role is reduced to [a-z0-9-], so nothing the page writes can read as a
// ref, an attribute or a line of its own. obsID qualifies refs; empty leaves
// them as the driver's ids.
func FormatOutline(nodes []OutlineNode, obsID string, maxBytes int) (string, int) {
	var b strings.Builder
	n := 0
	for _, nd := range nodes {
		line := outlineLine(nd, obsID)
		if b.Len()+len(line) > maxBytes {
			break
		}
		b.WriteString(line)
		n++
	}
	return b.String(), n
}

func outlineLine(nd OutlineNode, obsID string) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("  ", min(max(nd.Depth, 0), maxOutlineDepth)))
	b.WriteString("- ")
	b.WriteString(outlineRole(nd.Role))
	if name := clipUTF8(collapseSpace(nd.Name), maxOutlineName); name != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(name))
	}
	if nd.ID != "" && validID(nd.ID) {
		b.WriteString(" [ref=")
		if obsID != "" {
			b.WriteString(obsID + ".")
		}
		b.WriteString(nd.ID + "]")
	}
	if nd.Level > 0 && nd.Level <= 6 {
		b.WriteString(" [level=" + strconv.Itoa(nd.Level) + "]")
	}
	if nd.Checked {
		b.WriteString(" [checked]")
	}
	if nd.Disabled {
		b.WriteString(" [disabled]")
	}
	if text := clipUTF8(collapseSpace(nd.Text), maxOutlineText); text != "" {
		b.WriteString(": ")
		b.WriteString(strconv.Quote(text))
	}
	b.WriteString("\n")
	return b.String()
}

// outlineRole keeps [a-z0-9-] of a role (a page may write any role attribute).
func outlineRole(r string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(r) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' {
			b.WriteRune(c)
		}
		if b.Len() == maxOutlineRole {
			break
		}
	}
	if b.Len() == 0 {
		return "generic"
	}
	return b.String()
}

// validID is an element id as the page script makes them: e and digits.
func validID(id string) bool {
	if len(id) < 2 || len(id) > 32 {
		return false
	}
	// [x<k>.][f<k>.]e<n>: a frame the driver reaches, a same-origin frame, the element.
	parts := strings.Split(id, ".")
	want := []byte{'x', 'f', 'e'}
	for i, p := range parts {
		if len(p) < 2 {
			return false
		}
		for len(want) > 0 && want[0] != p[0] {
			want = want[1:]
		}
		if len(want) == 0 || (want[0] == 'e' && i != len(parts)-1) {
			return false
		}
		want = want[1:]
		for _, c := range p[1:] {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return parts[len(parts)-1][0] == 'e'
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipUTF8 cuts s to at most n bytes on a rune boundary, marking the cut.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
