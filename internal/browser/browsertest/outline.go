package browsertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Reading is implemented by worlds that serve the fixture's /reading page
// (internal/local/fixture/reading.go: an e-mail with a subject heading, a body,
// a table, an Archive button and a Reply link, hidden content of every kind,
// and a list of older messages). Worlds without it skip the outline test.
type Reading interface {
	// ReadingURL is /reading with `older` older messages.
	ReadingURL(older int) string
	// ReadingPage is what the page shows that the case looks for.
	ReadingPage() ReadingPage
}

// ReadingPage is the content of /reading the outline case checks, as the
// fixture writes it (testenv.ReadingPage).
type ReadingPage struct {
	// Subject is the e-mail's subject heading; Body a sentence of its body.
	Subject, Body string
	// Hidden starts every text the page hides; none may be in an outline.
	Hidden string
	// Older starts the text of every older message; Item(i) is message i's
	// (1-based).
	Older string
	Item  func(i int) string
	// Archived is the title a click on the Archive button sets.
	Archived string
}

// testOutline observes /reading and reads its outline: the e-mail's subject,
// body and table are there, nothing hidden is, the interactive nodes carry the
// same ids (refs) as the observation's elements and a ref from the outline
// clicks its element; a page longer than a chunk is read whole by paging with
// OutlineOffset, each chunk within browser.OutlineChunkBytes, no line twice.
func testOutline(t *testing.T, e *env) {
	r, ok := e.w.(Reading)
	if !ok {
		e.notServed("/reading")
	}
	rp := r.ReadingPage()
	const older = 700
	p := e.open(browser.OpenRequest{Key: "k", URL: r.ReadingURL(older)})
	observe := func(offset int) *browser.PageObservation {
		t.Helper()
		var o *browser.PageObservation
		e.eventually(fmt.Sprintf("an observation from outline node %d", offset), func() error {
			res, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: browser.Step{Kind: browser.StepObserve, OutlineOffset: offset}})
			if err != nil {
				return err
			}
			if o = res.Observation; o == nil {
				return errors.New("no observation")
			}
			if offset == 0 && !strings.Contains(outlineText(o.Outline), rp.Item(1)) {
				return errors.New("the page has not loaded yet")
			}
			return nil
		})
		return o
	}
	o := observe(0)
	text := outlineText(o.Outline)
	if o.OutlineOffset != 0 || !o.OutlineMore {
		t.Errorf("first chunk: offset %d, more %v; want 0 and more (%d older messages)", o.OutlineOffset, o.OutlineMore, older)
	}
	for _, want := range []string{`- heading "` + rp.Subject + `" [level=2]`, rp.Body, `"Regards, Ada"`,
		`- table`, `- columnheader: "Region"`, `- cell: "North"`, `- cell: "1200"`, `Ada Lovelace`, `: "quarterly"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the outline lacks %q:\n%s", want, head(text))
		}
	}
	if strings.Contains(text, rp.Hidden) {
		t.Errorf("the outline shows hidden content (%s…):\n%s", rp.Hidden, head(text))
	}
	// Interactive nodes carry the elements' ids.
	byName := map[string]browser.OutlineNode{}
	for _, n := range o.Outline {
		if n.ID != "" {
			byName[n.Name] = n
		}
	}
	archive, ok := byName["Archive"]
	if !ok || archive.Role != "button" {
		t.Fatalf("no targetable Archive button in the outline:\n%s", head(text))
	}
	if n, ok := byName["Reply"]; !ok || n.Role != "link" {
		t.Errorf("no targetable Reply link in the outline")
	}
	for _, el := range o.Elements {
		if n, ok := byName[el.Name]; ok && n.ID != el.ID {
			t.Errorf("%q is %s in the outline but %s among the elements", el.Name, n.ID, el.ID)
		}
	}
	// Paging reads every older message once, in order.
	seen := map[string]int{}
	chunk := o
	for pages := 1; ; pages++ {
		if s, n := browser.FormatOutline(chunk.Outline, "o00000000000000", browser.OutlineChunkBytes); n != len(chunk.Outline) {
			t.Errorf("chunk at %d: %d nodes, only %d fit %d bytes (%d)", chunk.OutlineOffset, len(chunk.Outline), n, browser.OutlineChunkBytes, len(s))
		}
		for _, n := range chunk.Outline {
			if strings.HasPrefix(n.Text, rp.Older) {
				seen[n.Text]++
			}
		}
		if !chunk.OutlineMore {
			if pages < 2 {
				t.Errorf("the page fit one chunk; want %d older messages to need more", older)
			}
			break
		}
		if len(chunk.Outline) == 0 || pages > 20 {
			t.Fatalf("paging stalls at %d", chunk.OutlineOffset)
		}
		next := chunk.OutlineOffset + len(chunk.Outline)
		if chunk = observe(next); chunk.OutlineOffset != next {
			t.Fatalf("asked for the outline from %d, got it from %d", next, chunk.OutlineOffset)
		}
	}
	for i := 1; i <= older; i++ {
		if c := seen[rp.Item(i)]; c != 1 {
			t.Errorf("older message %d is in %d chunks, want 1", i, c)
		}
	}
	// A ref read from the outline targets its element (scrolled into view).
	o = observe(0)
	for _, n := range o.Outline {
		if n.Name == "Archive" && n.ID != "" {
			archive = n
		}
	}
	noErr(t, "click the outline's Archive ref", e.actStep(p.ID, browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: archive.ID, Document: o.Document}}))
	if v, ok := e.w.(Verbs); ok {
		e.eventually("the Archive click reached the page", func() error {
			if got := v.Title(t, p.ID); got != rp.Archived {
				return errors.New("title " + got)
			}
			return nil
		})
	}
}

func (e *env) actStep(page string, s browser.Step) error {
	_, err := e.b.Act(e.ctx(), browser.ActRequest{Key: "act", Owner: "k", Page: page, Step: s})
	return err
}

func outlineText(nodes []browser.OutlineNode) string {
	s, _ := browser.FormatOutline(nodes, "", 1<<30)
	return s
}

func head(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}
