package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elem is one element of an observation, as a model reads it: the tool's ref
// for it, its role and accessible name, and any text the tool shows with it.
type Elem struct {
	Ref, Role, Name, Text string
}

// Obs is one observation of a page: the elements found in it and its whole
// text (what a model would read to find an e-mail's body).
type Obs struct {
	Elems []Elem
	Text  string
}

// find returns the first element whose role is role (any when empty) and
// whose name (or, failing that, its text) contains name, case-insensitively.
func (o *Obs) find(role, name string) (Elem, error) {
	n := strings.ToLower(name)
	for _, pass := range []func(Elem) string{func(e Elem) string { return e.Name }, func(e Elem) string { return e.Text }} {
		for _, e := range o.Elems {
			if e.Ref == "" || (role != "" && !strings.EqualFold(e.Role, role)) {
				continue
			}
			if strings.Contains(strings.ToLower(pass(e)), n) {
				return e, nil
			}
		}
	}
	return Elem{}, fmt.Errorf("no %s %q in the observation", orAny(role), name)
}

func orAny(role string) string {
	if role == "" {
		return "element"
	}
	return role
}

// Driver is a scripted agent's hand on one MCP server: what a model does with
// that server's tools, one tool call (or the few the server's workflow asks
// for) per method.
type Driver interface {
	// Name of the tool, for the table.
	Name() string
	// Begin starts a task: opens url in a page of the agent's own and makes it current.
	Begin(ctx context.Context, task, url string) error
	// Observe snapshots the current page.
	Observe(ctx context.Context) (*Obs, error)
	// Click clicks e (from the last observation).
	Click(ctx context.Context, e Elem) error
	// Type types text into e.
	Type(ctx context.Context, e Elem, text string) error
	// Dialog answers the JavaScript dialog the last click opened.
	Dialog(ctx context.Context, accept bool) error
	// Pages are the urls of the pages the tool says are there (or the agent's).
	Pages(ctx context.Context) ([]string, error)
	// SwitchTo makes the page whose url contains part (a popup the current page
	// opened) the current one.
	SwitchTo(ctx context.Context, part string) error
	// Finish ends the task as the tool's agent would.
	Finish(ctx context.Context) error
	// Close stops the server.
	Close()
}

// samplesDir, when set (-samples), receives every observation's raw result.
var samplesDir string

// meter calls one MCP server's tools and measures each call.
type meter struct {
	cs      *mcp.ClientSession
	observe map[string]bool // the tools whose results are observations

	mu    sync.Mutex
	calls []callStat
	// sample names the observations written to samplesDir (-samples).
	sample  string
	samples int
}

type callStat struct {
	tool    string
	latency time.Duration
	bytes   int
	text    int // of it, the text content blocks
	observe bool
	isError bool
}

// result is a tool result as the scripted agent reads it.
type result struct {
	text       string
	structured json.RawMessage
	isError    bool
}

func (m *meter) call(ctx context.Context, tool string, args map[string]any) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	lat := time.Since(start)
	if err != nil {
		m.record(callStat{tool: tool, latency: lat, observe: m.observe[tool], isError: true})
		return result{}, fmt.Errorf("%s: %w", tool, err)
	}
	raw, _ := json.Marshal(res) // what crossed the wire into the model's context
	var r result
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			r.text += t.Text + "\n"
		}
	}
	if res.StructuredContent != nil {
		r.structured, _ = json.Marshal(res.StructuredContent)
	}
	r.isError = res.IsError
	m.record(callStat{tool: tool, latency: lat, bytes: len(raw), text: len(r.text), observe: m.observe[tool], isError: res.IsError})
	debugf("%s %v → error=%v %d bytes\n%s", tool, args, r.isError, len(raw), r.text)
	if samplesDir != "" && m.observe[tool] {
		m.mu.Lock()
		m.samples++
		name := fmt.Sprintf("%s-%02d", m.sample, m.samples)
		m.mu.Unlock()
		_ = os.WriteFile(filepath.Join(samplesDir, name+".txt"), []byte(r.text), 0o644)
		if r.structured != nil {
			_ = os.WriteFile(filepath.Join(samplesDir, name+".json"), r.structured, 0o644)
		}
	}
	return r, nil
}

// must is call, with a tool error as an error.
func (m *meter) must(ctx context.Context, tool string, args map[string]any) (result, error) {
	r, err := m.call(ctx, tool, args)
	if err == nil && r.isError {
		err = fmt.Errorf("%s: %s", tool, firstLine(r.text))
	}
	return r, err
}

func (m *meter) record(c callStat) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, c)
}

// take returns the calls since the last take and forgets them.
func (m *meter) take() []callStat {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls
	m.calls = nil
	return c
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// stats summarizes a task's calls.
type stats struct {
	calls, observations int
	meanObsBytes        int
	meanObsText         int
	p50                 time.Duration
}

func summarize(cs []callStat) stats {
	s := stats{calls: len(cs)}
	var lat []time.Duration
	total, text := 0, 0
	for _, c := range cs {
		lat = append(lat, c.latency)
		if c.observe {
			s.observations++
			total += c.bytes
			text += c.text
		}
	}
	if s.observations > 0 {
		s.meanObsBytes = total / s.observations
		s.meanObsText = text / s.observations
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.p50 = lat[(len(lat)-1)/2]
	}
	return s
}
