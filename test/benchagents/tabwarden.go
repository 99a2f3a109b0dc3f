package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// tabwarden drives tabwarden's own MCP server: a session per task, windows by
// name, observations with refs, refusals whose hint it follows.
type tabwarden struct {
	m       *meter
	profile string
	thread  string
	session string
	window  string
	// spawned are the windows the last act said its page spawned.
	spawned []string
}

func (t *tabwarden) Name() string { return "tabwarden" }
func (t *tabwarden) Close()       { _ = t.m.cs.Close() }

func (t *tabwarden) Begin(ctx context.Context, task, url string) error {
	t.thread, t.session = "bench-"+task, "task-"+task
	if _, err := t.m.must(ctx, "start_session", map[string]any{"thread": t.thread, "purpose": "benchmark task " + task,
		"profile": t.profile, "name": t.session}); err != nil {
		return err
	}
	r, err := t.m.must(ctx, "open_window", map[string]any{"session": t.session, "url": url, "name": "main"})
	if err != nil {
		return err
	}
	var w struct {
		Window string `json:"window"`
	}
	_ = json.Unmarshal(r.structured, &w)
	t.window = w.Window
	return nil
}

// twObservation is the part of act's structured result the agent reads.
type twObservation struct {
	Observation *struct {
		Elements []struct {
			Ref, Role, Name string
		} `json:"elements"`
		Outline *struct {
			Text string `json:"text"`
		} `json:"outline"`
	} `json:"observation"`
}

// parseTabwardenObservation reads observe's (or act's) structured result.
func parseTabwardenObservation(structured []byte) (*Obs, error) {
	var out twObservation
	if err := json.Unmarshal(structured, &out); err != nil {
		return nil, err
	}
	if out.Observation == nil {
		return nil, fmt.Errorf("no observation in the result")
	}
	o := &Obs{}
	for _, e := range out.Observation.Elements {
		o.Elems = append(o.Elems, Elem{Ref: e.Ref, Role: e.Role, Name: e.Name})
	}
	if out.Observation.Outline != nil {
		o.Text = out.Observation.Outline.Text
	}
	return o, nil
}

func (t *tabwarden) Observe(ctx context.Context) (*Obs, error) {
	r, err := t.act(ctx, "observe", map[string]any{"session": t.session, "window": t.window, "thread": t.thread})
	if err != nil {
		return nil, err
	}
	return parseTabwardenObservation(r.structured)
}

// hint is the tool call a refusal's hint names: "hint: acknowledge {...}".
var hint = regexp.MustCompile(`hint: ([a-z_]+) (\{.*\})`)

// act calls tool; when it is refused with a hint that is a tool call of this
// server, it makes that call, as the refusal teaches, and tries once more.
func (t *tabwarden) act(ctx context.Context, tool string, args map[string]any) (result, error) {
	r, err := t.m.call(ctx, tool, args)
	if err != nil || !r.isError {
		return r, err
	}
	if h := hint.FindStringSubmatch(r.text); h != nil && h[1] != tool {
		var hargs map[string]any
		if json.Unmarshal([]byte(h[2]), &hargs) == nil {
			if _, err := t.m.must(ctx, h[1], hargs); err != nil {
				return r, err
			}
			return t.m.must(ctx, tool, args)
		}
	}
	return r, fmt.Errorf("%s: %s", tool, firstLine(r.text))
}

func (t *tabwarden) step(ctx context.Context, step map[string]any) error {
	r, err := t.act(ctx, "act", map[string]any{"session": t.session, "window": t.window, "thread": t.thread,
		"steps": []map[string]any{step}})
	var out struct {
		Spawned []struct {
			Window string `json:"window"`
		} `json:"spawned"`
	}
	_ = json.Unmarshal(r.structured, &out)
	t.spawned = nil
	for _, s := range out.Spawned {
		t.spawned = append(t.spawned, s.Window)
	}
	return err
}

func (t *tabwarden) Click(ctx context.Context, e Elem) error {
	return t.step(ctx, map[string]any{"type": "Click", "ref": e.Ref})
}

func (t *tabwarden) Type(ctx context.Context, e Elem, text string) error {
	return t.step(ctx, map[string]any{"type": "Type", "ref": e.Ref, "text": text})
}

func (t *tabwarden) Dialog(ctx context.Context, accept bool) error {
	a := "Dismiss"
	if accept {
		a = "Accept"
	}
	return t.step(ctx, map[string]any{"type": "Dialog", "answer": a})
}

type twOwned struct {
	Windows []struct {
		Window, URL    string
		Unacknowledged bool
	} `json:"windows"`
}

func (t *tabwarden) owned(ctx context.Context) (twOwned, error) {
	var o twOwned
	r, err := t.m.must(ctx, "list_owned", map[string]any{"session": t.session})
	if err == nil {
		err = json.Unmarshal(r.structured, &o)
	}
	return o, err
}

func (t *tabwarden) Pages(ctx context.Context) ([]string, error) {
	o, err := t.owned(ctx)
	var urls []string
	for _, w := range o.Windows {
		urls = append(urls, w.URL)
	}
	return urls, err
}

// SwitchTo drives the session's window at part: the one window the last step
// spawned, or the one list_owned shows at part; a spawned one is acknowledged
// Temporary first (it closes with the session).
func (t *tabwarden) SwitchTo(ctx context.Context, part string) error {
	if len(t.spawned) == 1 {
		// The last step spawned one window: that is the popup (act's result
		// names it, without its url), as a model reading the result takes it.
		w := t.spawned[0]
		t.spawned = nil
		if _, err := t.m.must(ctx, "acknowledge", map[string]any{"windows": []string{w}, "disposition": "Temporary"}); err != nil {
			return err
		}
		t.window = w
		return nil
	}
	for try := 0; ; try++ {
		o, err := t.owned(ctx)
		if err != nil {
			return err
		}
		for _, w := range o.Windows {
			if !strings.Contains(w.URL, part) {
				continue
			}
			if w.Unacknowledged {
				if _, err := t.m.must(ctx, "acknowledge", map[string]any{"windows": []string{w.Window}, "disposition": "Temporary"}); err != nil {
					return err
				}
			}
			t.window = w.Window
			return nil
		}
		if try == 15 {
			return fmt.Errorf("no window at %q in list_owned", part)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (t *tabwarden) Finish(ctx context.Context) error {
	_, err := t.m.must(ctx, "finish", map[string]any{"session": t.session})
	return err
}
