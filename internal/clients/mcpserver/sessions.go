package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// addSessionTools adds start_session and finish.
func addSessionTools(s *mcp.Server, h *handlers) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "start_session",
		Description: "Start a browser session: who drives (thread) and why (purpose), on a browser profile (profile, or a " +
			"label selector; list_profiles shows them). Returns the session's name, used by every other tool. This server " +
			"holds the session while it runs: if it exits without finish, the session is abandoned after abandon_after " +
			"(default 15m) and its temporary pages close.",
		InputSchema: inputSchema[StartSessionInput](func(s *jsonschema.Schema) {
			nonEmpty(s, "thread", "purpose", "profile", "name")
			s.Properties["placement"].Enum = enum(placements...)
		}),
		Annotations: &mcp.ToolAnnotations{Title: "Start a browser session", OpenWorldHint: no()},
	}, h.startSession)
	mcp.AddTool(s, &mcp.Tool{
		Name: "finish",
		Description: "Finish the session and wait (bounded) until its pages are closed: temporary pages close, kept ones " +
			"are released to the user, bound tabs detached. Returns the phase it reached: Finished, or Finishing when " +
			"pages are still closing. Nothing new opens in it afterwards.",
		InputSchema: inputSchema[SessionInput](func(s *jsonschema.Schema) { nonEmpty(s, "session") }),
		Annotations: &mcp.ToolAnnotations{Title: "Finish the session", DestructiveHint: yes(), IdempotentHint: true, OpenWorldHint: no()},
	}, h.finish)
}

// StartSessionInput is start_session's input.
type StartSessionInput struct {
	Thread       string            `json:"thread" jsonschema:"who drives: your conversation or task id, e.g. thread-42; every observe and act call must name it"`
	Purpose      string            `json:"purpose" jsonschema:"why, in words the user recognises, e.g. file the 2026 tax return form"`
	Profile      string            `json:"profile,omitempty" jsonschema:"the browser profile to use (list_profiles shows the usable ones); give this or selector, not both"`
	Selector     map[string]string `json:"selector,omitempty" jsonschema:"labels of profiles the session may be placed on, e.g. {\"pool\": \"remote\"}, when no profile is given"`
	Name         string            `json:"name,omitempty" jsonschema:"name of the session (default: generated from the thread)"`
	Placement    string            `json:"placement,omitempty" jsonschema:"Window (default: the session's pages open in windows of their own) or Tab (background tabs of one existing window)"`
	AbandonAfter string            `json:"abandon_after,omitempty" jsonschema:"how long the session outlives this MCP server (your process) if it exits without finish, e.g. 15m (the default), 1h, or never; then it is abandoned and its temporary pages close"`
}

// SessionOutput describes a session.
type SessionOutput struct {
	Session string `json:"session,omitempty" jsonschema:"the session's name: pass it to the other tools"`
	Profile string `json:"profile,omitempty" jsonschema:"the browser profile it is placed on"`
	Phase   string `json:"phase,omitempty" jsonschema:"Pending (not placed yet), Active, WaitingForUser, Finishing (its pages are closing) or Finished"`
	// Reprimand says what a finished session left behind (dirty_session); empty when clean.
	Reprimand string   `json:"reprimand,omitempty" jsonschema:"what the session left behind when it was finished (dirty_session): unacknowledged spawned windows, pages still open"`
	Remaining []string `json:"remaining,omitempty" jsonschema:"finish: the windows still closing when it returned (phase Finishing)"`
	Error     *Failure `json:"error,omitempty" jsonschema:"why the call was refused or failed"`
}

// sessionOutput describes session s: its name, profile and phase.
func sessionOutput(s *twv1.BrowserSession) SessionOutput {
	return SessionOutput{Session: s.Name, Profile: s.Status.ProfileName, Phase: string(s.Status.Phase)}
}

func (h *handlers) startSession(ctx context.Context, _ *mcp.CallToolRequest, in StartSessionInput) (*mcp.CallToolResult, SessionOutput, error) {
	after, err := parseAbandonAfter(in.AbandonAfter)
	if err != nil {
		return failWith(h, err, in.Name, SessionOutput{Session: in.Name})
	}
	s, err := h.ops.StartSession(ctx, ops.SessionRequest{
		Name: in.Name, Thread: in.Thread, Purpose: in.Purpose, Profile: in.Profile, Selector: in.Selector,
		Placement: twv1.Placement(in.Placement), AbandonAfter: after,
	}, h.timeout)
	if s != nil && s.Name != "" {
		// Held from its creation, placed or not: a refused session is abandoned too once this server is gone.
		h.hold(s.Name)
	}
	if err != nil {
		out := SessionOutput{Session: in.Name}
		if s != nil && s.Name != "" {
			out = sessionOutput(s)
		}
		return failWith(h, err, out.Session, out)
	}
	return text(fmt.Sprintf("Session %s started on profile %s (thread %s). Open a page with open_window {\"session\": %q, \"url\": ...}.",
		s.Name, s.Status.ProfileName, s.Spec.Thread, s.Name)), sessionOutput(s), nil
}

// parseAbandonAfter reads start_session's abandon_after: a Go duration,
// "never", or empty for DefaultAbandonAfter.
func parseAbandonAfter(v string) (time.Duration, error) {
	switch strings.TrimSpace(v) {
	case "":
		return DefaultAbandonAfter, nil
	case "never", "0", "0s":
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0, &ops.Error{Kind: ops.Invalid, Reason: "invalid_abandon_after",
			Message: fmt.Sprintf("abandon_after %q is not a duration", v),
			Hint:    `start_session {"thread": "thread-42", "purpose": "...", "profile": "local", "abandon_after": "15m"} (or "never")`}
	}
	return d, nil
}

// SessionInput names a session.
type SessionInput struct {
	Session string `json:"session" jsonschema:"the session's name (from start_session)"`
}

func (h *handlers) finish(ctx context.Context, _ *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, SessionOutput, error) {
	s, r, err := h.ops.FinishWithReprimand(ctx, in.Session)
	if err != nil {
		return failWith(h, err, in.Session, SessionOutput{Session: in.Session})
	}
	// Finishing only asks: the controller closes the pages, then says Finished.
	// Wait for that (as long as any other wait), and say the phase reached.
	s, remaining, err := h.waitFinished(ctx, s)
	if err != nil {
		return failWith(h, err, in.Session, SessionOutput{Session: in.Session})
	}
	out := sessionOutput(s)
	out.Remaining = remaining
	var msg string
	if s.Status.Phase == twv1.SessionPhaseFinished {
		msg = fmt.Sprintf("Session %s is Finished: its temporary pages are closed, kept pages released to the user, bound tabs detached.", s.Name)
	} else {
		msg = fmt.Sprintf("Session %s is %s, not yet Finished after %s: %d page(s) not closed yet (%s). They close once the agent of profile %s reaches "+
			"the browser; nothing new opens in the session. Check later with list_owned {\"session\": %q}.",
			s.Name, orNone(string(s.Status.Phase)), h.timeout, len(remaining), strings.Join(remaining, ", "), orNone(s.Status.ProfileName), s.Name)
	}
	if r.Dirty() {
		// The advice in this server's own terms: tool calls, not commands.
		s := r.With(fmt.Sprintf(`acknowledge what your pages spawn (acknowledge {"session": %q, "all_unacked": true, "disposition": "Close"}, or "Keep" for a deliverable) and close the pages you are done with (acknowledge {"windows": ["WINDOW"], "disposition": "Close"})`, in.Session))
		msg += "\n" + s
		out.Reprimand = s
	}
	return text(msg), out, nil
}

// waitFinished waits (up to the server's timeout) until session s is
// Finished, and returns it as last read with the windows it still had open
// when not Finished.
func (h *handlers) waitFinished(ctx context.Context, s *twv1.BrowserSession) (*twv1.BrowserSession, []string, error) {
	poll := h.ops.Poll
	if poll == 0 {
		poll = 250 * time.Millisecond
	}
	deadline := time.NewTimer(h.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		got, err := h.ops.GetSession(ctx, s.Name)
		if err != nil {
			return s, nil, err
		}
		s = got
		if s.Status.Phase == twv1.SessionPhaseFinished {
			return s, nil, nil
		}
		select {
		case <-ctx.Done():
		case <-deadline.C:
		case <-tick.C:
			continue
		}
		break
	}
	var remaining []string
	if _, ws, err := h.ops.Owned(context.WithoutCancel(ctx), s.Name); err == nil {
		for _, w := range ops.CleanupPlan(ws) {
			if w.Spec.Disposition != twv1.DispositionKeep {
				remaining = append(remaining, w.Name)
			}
		}
	}
	return s, remaining, nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
