package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// devtools drives chrome-devtools-mcp (attached with --browserUrl): pages by
// their numeric pageId, snapshots of uid= lines.
type devtools struct {
	m *meter
	// page is the current page's id, opened the id of the page the task opened.
	page, opened int
}

func (d *devtools) Name() string { return "chrome-devtools-mcp 1.11.0" }
func (d *devtools) Close()       { _ = d.m.cs.Close() }

// dtPage is one line of the pages list: "2: Title (url) [selected]".
var dtPage = regexp.MustCompile(`^(\d+): (.*) \(([^()]*)\)( \[selected\])?\s*$`)

type dtPageInfo struct {
	id       int
	url      string
	selected bool
}

func parseDevtoolsPages(text string) []dtPageInfo {
	var out []dtPageInfo
	for _, l := range strings.Split(text, "\n") {
		if m := dtPage.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			id, _ := strconv.Atoi(m[1])
			out = append(out, dtPageInfo{id: id, url: m[3], selected: m[4] != ""})
		}
	}
	return out
}

func (d *devtools) Begin(ctx context.Context, _, url string) error {
	r, err := d.m.must(ctx, "new_page", map[string]any{"url": url})
	if err != nil {
		return err
	}
	for _, p := range parseDevtoolsPages(r.text) {
		if p.selected {
			d.page, d.opened = p.id, p.id
			return nil
		}
	}
	return fmt.Errorf("new_page: no selected page in %q", firstLine(r.text))
}

// dtLine is one snapshot line: uid=1_4 button "Reply" attr="v" ...
var dtLine = regexp.MustCompile(`^\s*uid=(\S+)(?: ([A-Za-z][\w-]*))?(?: "((?:[^"\\]|\\.)*)")?(.*)$`)
var dtValue = regexp.MustCompile(`value="((?:[^"\\]|\\.)*)"`)

// parseDevtoolsSnapshot reads take_snapshot's text.
func parseDevtoolsSnapshot(text string) *Obs {
	o := &Obs{Text: text}
	for _, l := range strings.Split(text, "\n") {
		m := dtLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		e := Elem{Ref: m[1], Role: m[2], Name: unquote(m[3])}
		if v := dtValue.FindStringSubmatch(m[4]); v != nil {
			e.Text = unquote(v[1])
		}
		if e.Role == "" { // a text node: its text is its name
			e.Role, e.Text = "text", e.Name
		}
		o.Elems = append(o.Elems, e)
	}
	return o
}

func unquote(s string) string {
	if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
		return u
	}
	return s
}

func (d *devtools) Observe(ctx context.Context) (*Obs, error) {
	r, err := d.m.must(ctx, "take_snapshot", map[string]any{"pageId": d.page})
	if err != nil {
		return nil, err
	}
	return parseDevtoolsSnapshot(r.text), nil
}

// ObserveDetailed is take_snapshot verbose: the whole accessibility tree.
func (d *devtools) ObserveDetailed(ctx context.Context) (*Obs, error) {
	r, err := d.m.must(ctx, "take_snapshot", map[string]any{"pageId": d.page, "verbose": true})
	if err != nil {
		return nil, err
	}
	return parseDevtoolsSnapshot(r.text), nil
}

func (d *devtools) Click(ctx context.Context, e Elem) error {
	_, err := d.m.must(ctx, "click", map[string]any{"pageId": d.page, "uid": e.Ref})
	return err
}

func (d *devtools) Type(ctx context.Context, e Elem, text string) error {
	_, err := d.m.must(ctx, "fill", map[string]any{"pageId": d.page, "uid": e.Ref, "value": text})
	return err
}

func (d *devtools) Dialog(ctx context.Context, accept bool) error {
	a := "dismiss"
	if accept {
		a = "accept"
	}
	_, err := d.m.must(ctx, "handle_dialog", map[string]any{"pageId": d.page, "action": a})
	return err
}

func (d *devtools) list(ctx context.Context) ([]dtPageInfo, error) {
	r, err := d.m.must(ctx, "list_pages", map[string]any{})
	if err != nil {
		return nil, err
	}
	return parseDevtoolsPages(r.text), nil
}

func (d *devtools) Pages(ctx context.Context) ([]string, error) {
	ps, err := d.list(ctx)
	var urls []string
	for _, p := range ps {
		urls = append(urls, p.url)
	}
	return urls, err
}

func (d *devtools) SwitchTo(ctx context.Context, part string) error {
	for try := 0; ; try++ {
		ps, err := d.list(ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if strings.Contains(p.url, part) {
				d.page = p.id
				return nil
			}
		}
		if try == 15 {
			return fmt.Errorf("no page at %q in list_pages", part)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Finish closes the page the agent opened: chrome-devtools-mcp has no
// session; what a page spawned is not the agent's to know about.
func (d *devtools) Finish(ctx context.Context) error {
	_, err := d.m.must(ctx, "close_page", map[string]any{"pageId": d.opened})
	return err
}
