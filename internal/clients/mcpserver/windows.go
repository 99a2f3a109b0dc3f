package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// addWindowTools adds open_window, list_owned and acknowledge.
func addWindowTools(s *mcp.Server, h *handlers) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "open_window",
		Description: "Open a page in a new background window (or tab) of the session and wait until it is open. " +
			"Returns the window's name (used by observe and act) and its tab id.",
		InputSchema: inputSchema[OpenWindowInput](func(s *jsonschema.Schema) {
			nonEmpty(s, "session", "url", "name")
			s.Properties["disposition"].Enum = enum(openDispositions...)
		}),
		Annotations: &mcp.ToolAnnotations{Title: "Open a window", OpenWorldHint: yes()},
	}, h.openWindow)
	mcp.AddTool(s, &mcp.Tool{
		Name: "list_owned",
		Description: "List the windows the session owns, each with its phase, disposition, url and title: the ones it " +
			"opened, the ones its pages spawned (with who spawned each and why) and bound user tabs. Spawned windows " +
			"with no disposition are marked unacknowledged.",
		InputSchema: inputSchema[SessionInput](func(s *jsonschema.Schema) { nonEmpty(s, "session") }),
		Annotations: &mcp.ToolAnnotations{Title: "List owned windows", ReadOnlyHint: true, OpenWorldHint: no()},
	}, h.listOwned)
	mcp.AddTool(s, &mcp.Tool{
		Name: "acknowledge",
		Description: "Give windows a disposition: Keep (stays open, also after the session ends), Close (closes now) or " +
			"Temporary (closes when the session ends). Name the windows, or set all_unacked with session to acknowledge " +
			"every spawned window of the session that has none (this lifts unacknowledged_spawns).",
		InputSchema: inputSchema[AcknowledgeInput](func(s *jsonschema.Schema) {
			nonEmpty(s, "session")
			s.Properties["disposition"].Enum = enum(dispositions...)
			s.Properties["windows"].Items.MinLength = jsonschema.Ptr(1)
		}),
		Annotations: &mcp.ToolAnnotations{Title: "Acknowledge windows", IdempotentHint: true, DestructiveHint: yes(), OpenWorldHint: no()},
	}, h.acknowledge)
}

// OpenWindowInput is open_window's input.
type OpenWindowInput struct {
	Session     string `json:"session" jsonschema:"the session's name (from start_session)"`
	URL         string `json:"url" jsonschema:"the http(s) url to open"`
	Name        string `json:"name,omitempty" jsonschema:"name of the window (default: generated)"`
	Disposition string `json:"disposition,omitempty" jsonschema:"Temporary (default: closes when the session ends) or Keep (stays open after it, a deliverable)"`
}

// WindowOutput describes a window.
type WindowOutput struct {
	Window         string   `json:"window,omitempty" jsonschema:"the window's name: pass it to observe and act"`
	Source         string   `json:"source,omitempty" jsonschema:"Open (the session opened it), Spawned (a page of the session spawned it) or Bind (a user tab the session uses)"`
	TabID          string   `json:"tabId,omitempty"`
	URL            string   `json:"url,omitempty"`
	Title          string   `json:"title,omitempty"`
	Phase          string   `json:"phase,omitempty" jsonschema:"Pending (held or opening), Open, Closing, Closed, Gone (closed outside tabwarden) or Unknown (the browser is unreachable)"`
	Disposition    string   `json:"disposition,omitempty" jsonschema:"Temporary, Keep or Close; absent on a spawned window nobody acknowledged"`
	Unacknowledged bool     `json:"unacknowledged,omitempty" jsonschema:"a spawned window with no disposition: acknowledge it"`
	SpawnedBy      string   `json:"spawnedBy,omitempty" jsonschema:"the window whose page spawned it"`
	Reason         string   `json:"reason,omitempty" jsonschema:"why it was attributed to the session (opener, action)"`
	Error          *Failure `json:"error,omitempty" jsonschema:"why the call was refused or failed"`
}

func windowOutput(w *twv1.BrowserWindow) WindowOutput {
	o := WindowOutput{Window: w.Name, Source: string(w.Spec.Source), TabID: w.Status.TabID, URL: w.Status.URL, Title: w.Status.Title,
		Phase: string(w.Status.Phase), Disposition: string(w.Spec.Disposition), Unacknowledged: w.Unacknowledged()}
	if sp := w.Spec.Spawn; sp != nil {
		o.SpawnedBy, o.Reason = sp.SpawnedBy, sp.Reason
		if o.TabID == "" {
			o.TabID = sp.TabID
		}
		if o.URL == "" {
			o.URL = sp.URL
		}
	}
	if o.URL == "" {
		o.URL = w.Spec.URL
	}
	return o
}

func (h *handlers) openWindow(ctx context.Context, _ *mcp.CallToolRequest, in OpenWindowInput) (*mcp.CallToolResult, WindowOutput, error) {
	d := twv1.Disposition("")
	if in.Disposition != "" {
		var err error
		if d, err = ops.ParseDisposition(in.Disposition); err != nil {
			return failWith(h, err, in.Session, WindowOutput{Window: in.Name})
		}
	}
	h.hold(in.Session) // a session this server is given is held like one it started
	w, err := h.ops.OpenWindow(ctx, in.Session, in.Name, in.URL, d, h.timeout)
	if err != nil {
		out := WindowOutput{Window: in.Name}
		if w != nil && w.Name != "" {
			// Held or not opened in time: the window exists, say what it is now.
			out = windowOutput(w)
			if out.Phase == "" {
				out.Phase = string(twv1.WindowPending)
			}
		}
		return failWith(h, err, in.Session, out)
	}
	return pageResult(fmt.Sprintf("Window %s is open (tab %s). Observe it with observe {\"session\": %q, \"window\": %q, \"thread\": ...}.",
		w.Name, w.Status.TabID, in.Session, w.Name),
		fmt.Sprintf("url: %s\ntitle: %s\n", w.Status.URL, w.Status.Title)), windowOutput(w), nil
}

// OwnedOutput is what a session owns.
type OwnedOutput struct {
	Session        string         `json:"session,omitempty"`
	Phase          string         `json:"phase,omitempty" jsonschema:"the session's phase: Pending, Active, WaitingForUser, Finishing or Finished"`
	Windows        []WindowOutput `json:"windows,omitempty"`
	Unacknowledged []string       `json:"unacknowledged,omitempty" jsonschema:"spawned windows with no disposition"`
	Error          *Failure       `json:"error,omitempty" jsonschema:"why the call was refused or failed"`
}

func (h *handlers) listOwned(ctx context.Context, _ *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, OwnedOutput, error) {
	h.hold(in.Session) // a session this server is given is held like one it started
	s, ws, err := h.ops.Owned(ctx, in.Session)
	if err != nil {
		return failWith(h, err, in.Session, OwnedOutput{Session: in.Session})
	}
	out := OwnedOutput{Session: s.Name, Phase: string(s.Status.Phase), Windows: []WindowOutput{}}
	for i := range ws {
		out.Windows = append(out.Windows, windowOutput(&ws[i]))
		if ws[i].Unacknowledged() {
			out.Unacknowledged = append(out.Unacknowledged, ws[i].Name)
		}
	}
	var b bytes.Buffer
	if err := h.table().WriteOwned(&b, s, ws); err != nil {
		return nil, OwnedOutput{}, err
	}
	instr := fmt.Sprintf("Session %s owns %d windows.", s.Name, len(ws))
	if len(out.Unacknowledged) > 0 {
		instr += "\nWith this tool: " + ackAllCall(s.Name) + " (or Keep, Temporary)"
	}
	return pageResult(instr, b.String()), out, nil
}

// ackAllCall is the acknowledge call that closes every unacknowledged window of session.
func ackAllCall(session string) string {
	return fmt.Sprintf(`acknowledge {"session": %q, "all_unacked": true, "disposition": "Close"}`, session)
}

// AcknowledgeInput is acknowledge's input.
type AcknowledgeInput struct {
	Disposition string   `json:"disposition" jsonschema:"Keep (stays open, also after the session ends), Close (closes now) or Temporary (closes when the session ends)"`
	Windows     []string `json:"windows,omitempty" jsonschema:"names of the windows to acknowledge (from list_owned or an act result's spawned list); or give session with all_unacked instead"`
	Session     string   `json:"session,omitempty" jsonschema:"with all_unacked: the session whose unacknowledged spawned windows to acknowledge"`
	AllUnacked  bool     `json:"all_unacked,omitempty" jsonschema:"acknowledge every spawned window of session that has no disposition"`
}

// AcknowledgeOutput lists what was acknowledged.
type AcknowledgeOutput struct {
	Acknowledged []string `json:"acknowledged,omitempty"`
	Disposition  string   `json:"disposition,omitempty"`
	Error        *Failure `json:"error,omitempty" jsonschema:"why the call was refused or failed"`
}

func (h *handlers) acknowledge(ctx context.Context, _ *mcp.CallToolRequest, in AcknowledgeInput) (*mcp.CallToolResult, AcknowledgeOutput, error) {
	d, err := ops.ParseDisposition(in.Disposition)
	if err != nil {
		return failWith(h, err, in.Session, AcknowledgeOutput{})
	}
	var ws []twv1.BrowserWindow
	switch {
	case in.AllUnacked && in.Session != "" && len(in.Windows) == 0:
		h.hold(in.Session)
		ws, err = h.ops.AckUnacked(ctx, in.Session, d)
	case !in.AllUnacked && len(in.Windows) > 0:
		ws, err = h.ops.Ack(ctx, in.Windows, d)
	default:
		err = &ops.Error{Kind: ops.Invalid,
			Message: "name the windows, or the session with all_unacked: true (not both)",
			Hint:    `acknowledge {"windows": ["<window>"], "disposition": "Close"} or acknowledge {"session": "<session>", "all_unacked": true, "disposition": "Close"}`}
	}
	if err != nil {
		return failWith(h, err, in.Session, AcknowledgeOutput{Disposition: string(d)})
	}
	out := AcknowledgeOutput{Acknowledged: []string{}, Disposition: string(d)}
	for _, w := range ws {
		out.Acknowledged = append(out.Acknowledged, w.Name)
	}
	msg := fmt.Sprintf("Acknowledged %d window(s) with disposition %s: %s", len(ws), d, strings.Join(out.Acknowledged, ", "))
	if len(ws) == 0 {
		msg = "Nothing to acknowledge: the session has no spawned window without a disposition."
	}
	return text(msg), out, nil
}
