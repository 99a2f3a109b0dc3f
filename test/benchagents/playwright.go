package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// playwright drives Playwright MCP (attached with --cdp-endpoint): one
// current tab, tabs by index, snapshots as aria YAML with [ref=...].
type playwright struct {
	m *meter
	// ownURL is the last url seen of the tab the task opened.
	ownURL string
	onOwn  bool
}

func (p *playwright) Name() string { return "Playwright MCP 0.0.86" }
func (p *playwright) Close()       { _ = p.m.cs.Close() }

// pwTab is one line of a tab list: "- 0: (current) [Title](url)".
var pwTab = regexp.MustCompile(`^- (\d+): (\(current\) )?\[(.*)\]\((.*)\)\s*$`)

type pwTabInfo struct {
	index   int
	url     string
	current bool
}

func parsePlaywrightTabs(text string) []pwTabInfo {
	var out []pwTabInfo
	for _, l := range strings.Split(text, "\n") {
		if m := pwTab.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			i, _ := strconv.Atoi(m[1])
			out = append(out, pwTabInfo{index: i, url: m[4], current: m[2] != ""})
		}
	}
	return out
}

var pwURL = regexp.MustCompile(`(?m)^- Page URL: (\S+)`)

func (p *playwright) Begin(ctx context.Context, _, url string) error {
	if _, err := p.m.must(ctx, "browser_tabs", map[string]any{"action": "new", "url": url}); err != nil {
		return err
	}
	p.ownURL, p.onOwn = url, true
	return nil
}

var pwRef = regexp.MustCompile(`\[ref=([^\]]+)\]`)

// parsePlaywrightSnapshot reads browser_snapshot's YAML block.
func parsePlaywrightSnapshot(text string) *Obs {
	o := &Obs{Text: text}
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "- ") {
			continue
		}
		t = t[2:]
		if strings.HasPrefix(t, "text: ") {
			o.Elems = append(o.Elems, Elem{Role: "text", Text: strings.TrimPrefix(t, "text: ")})
			continue
		}
		e := Elem{}
		i := strings.IndexAny(t, " :")
		if i < 0 {
			e.Role = t
			o.Elems = append(o.Elems, e)
			continue
		}
		e.Role, t = t[:i], t[i:]
		if strings.HasPrefix(t, ` "`) {
			// A quoted name, JSON-escaped.
			j := 2
			for j < len(t) && t[j] != '"' {
				if t[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(t) {
				e.Name = unquote(t[2:j])
				t = t[j+1:]
			}
		}
		if m := pwRef.FindStringSubmatch(t); m != nil {
			e.Ref = m[1]
		}
		if k := strings.LastIndex(t, "]: "); k >= 0 {
			e.Text = strings.Trim(t[k+3:], `"`)
		} else if strings.HasPrefix(t, ": ") {
			e.Text = strings.Trim(t[2:], `"`)
		}
		o.Elems = append(o.Elems, e)
	}
	return o
}

func (p *playwright) Observe(ctx context.Context) (*Obs, error) {
	r, err := p.m.must(ctx, "browser_snapshot", map[string]any{})
	if err != nil {
		return nil, err
	}
	if m := pwURL.FindStringSubmatch(r.text); m != nil && p.onOwn {
		p.ownURL = m[1]
	}
	return parsePlaywrightSnapshot(r.text), nil
}

func (p *playwright) Click(ctx context.Context, e Elem) error {
	_, err := p.m.must(ctx, "browser_click", map[string]any{"target": e.Ref, "element": e.Role + " " + e.Name})
	return err
}

func (p *playwright) Type(ctx context.Context, e Elem, text string) error {
	_, err := p.m.must(ctx, "browser_type", map[string]any{"target": e.Ref, "element": e.Role + " " + e.Name, "text": text})
	return err
}

func (p *playwright) Dialog(ctx context.Context, accept bool) error {
	_, err := p.m.must(ctx, "browser_handle_dialog", map[string]any{"accept": accept})
	return err
}

func (p *playwright) tabs(ctx context.Context) ([]pwTabInfo, error) {
	r, err := p.m.must(ctx, "browser_tabs", map[string]any{"action": "list"})
	if err != nil {
		return nil, err
	}
	return parsePlaywrightTabs(r.text), nil
}

func (p *playwright) Pages(ctx context.Context) ([]string, error) {
	ts, err := p.tabs(ctx)
	var urls []string
	for _, t := range ts {
		urls = append(urls, t.url)
	}
	return urls, err
}

func (p *playwright) SwitchTo(ctx context.Context, part string) error {
	for try := 0; ; try++ {
		ts, err := p.tabs(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if strings.Contains(t.url, part) {
				if t.current {
					p.onOwn = false
					return nil
				}
				_, err := p.m.must(ctx, "browser_tabs", map[string]any{"action": "select", "index": t.index})
				p.onOwn = false
				return err
			}
		}
		if try == 15 {
			return fmt.Errorf("no tab at %q in browser_tabs", part)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Finish closes the tab the agent opened (found by its last url): Playwright
// MCP has no session, and what a page spawned is not the agent's to know.
func (p *playwright) Finish(ctx context.Context) error {
	ts, err := p.tabs(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.url == p.ownURL {
			_, err := p.m.must(ctx, "browser_tabs", map[string]any{"action": "close", "index": t.index})
			return err
		}
	}
	return fmt.Errorf("the agent's tab (%s) is not in browser_tabs", p.ownURL)
}
