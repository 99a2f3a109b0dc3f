package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// addActionTools adds observe and act.
func addActionTools(s *mcp.Server, h *handlers) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "observe",
		Description: "Observe a window's page: url, title, the visible interactive elements, each with a ref " +
			"(e.g. o3.e12) that act's Click and Type steps target, and the page's content as an outline (one line per " +
			"node: role, name, text, and the ref of interactive nodes) to read text: an e-mail, a table, a form's errors. " +
			"The outline is at most 32 KiB; when it is truncated, observe again with outline_offset set to its nextOffset " +
			"to read on.",
		InputSchema: inputSchema[ObserveInput](func(s *jsonschema.Schema) {
			nonEmpty(s, "session", "window", "thread")
			s.Properties["outline_offset"].Minimum = jsonschema.Ptr(0.0)
		}),
		Annotations: &mcp.ToolAnnotations{Title: "Observe a page", ReadOnlyHint: true, OpenWorldHint: yes()},
	}, h.observe)
	mcp.AddTool(s, &mcp.Tool{
		Name: "act",
		Description: "Run steps in order on a window's page: Observe, Navigate (url), Click (ref, target_text, or x,y " +
			"with observation), Type (text, into ref/target_text or the focused element), Press (key), Scroll (delta_y), " +
			"Wait (text or duration), Observe (outline_offset: page through the outline), Back and Forward (one entry through the page's history; refused as no_history " +
			"when there is none), Reload, Hover (ref or target_text: moves the pointer over it, clicks nothing), Select (ref or target_text of a " +
			"drop-down, and text: the option's label or value), Fill (ref or target_text, and text, which replaces the field's content; " +
			"consecutive Fill steps are one step that checks every field before typing into any), Dialog (answer: Accept or Dismiss, and text to answer " +
			"a prompt with Accept: answers the JavaScript dialog a step made the page open; that step's result shows it as dialog, and every other " +
			"step is refused as dialog_open until a Dialog step answers it; unanswered it is dismissed after 5 minutes; with none showing, " +
			"no_dialog), Upload (ref or target_text of a file input or its label, and file: a name in the upload directory the profile's admin " +
			"allows, e.g. resume.pdf; consecutive Upload steps with the same target put their files in together; a name the directory does not " +
			"hold is refused as upload_not_allowed, listing the files it offers). The first refused or failed step ends the call. Returns the last observation and " +
			"the windows the page spawned (acknowledge them before the next mutating step).",
		InputSchema: inputSchema[ActInput](func(s *jsonschema.Schema) {
			nonEmpty(s, "session", "window", "thread")
			steps := s.Properties["steps"]
			steps.MinItems, steps.MaxItems = jsonschema.Ptr(1), jsonschema.Ptr(maxSteps)
			steps.Items.Properties["type"].Enum = enum(twv1.StepTypes...)
			steps.Items.Properties["answer"].Enum = enum(twv1.DialogAccept, twv1.DialogDismiss)
			for _, p := range []string{"x", "y", "outline_offset"} {
				steps.Items.Properties[p].Minimum = jsonschema.Ptr(0.0)
			}
			nonEmpty(steps.Items, "url", "ref", "target_text", "observation", "text", "key", "duration", "file")
		}),
		Annotations: &mcp.ToolAnnotations{Title: "Act on a page", DestructiveHint: yes(), OpenWorldHint: yes()},
	}, h.act)
}

// ObserveInput is observe's input.
type ObserveInput struct {
	Session string `json:"session" jsonschema:"the session's name"`
	Window  string `json:"window" jsonschema:"the window whose page to observe (from open_window or list_owned)"`
	Thread  string `json:"thread" jsonschema:"your thread: the session's thread"`
	// OutlineOffset pages through the outline.
	OutlineOffset *int32 `json:"outline_offset,omitempty" jsonschema:"the first line of the page's outline to return (0, the default: the top); a truncated outline's nextOffset reads on"`
}

// Step is one step of act.
type Step struct {
	Type        string `json:"type" jsonschema:"what the step does: Observe, Navigate (url), Click (ref, target_text, or x and y with observation), Type (text), Press (key), Scroll (delta_y), Wait (text or duration), Back, Forward, Reload, Hover (ref or target_text), Select (ref or target_text, and text), Fill (ref or target_text, and text; consecutive Fill steps fill their fields as one step), Dialog (answer, and text for a prompt) or Upload (ref or target_text, and file; consecutive Upload steps with the same target are one step)"`
	URL         string `json:"url,omitempty" jsonschema:"Navigate: the http(s) url to load"`
	Ref         string `json:"ref,omitempty" jsonschema:"Click, Type, Hover, Select or Upload: the element's ref from an earlier observation, e.g. o3.e12"`
	TargetText  string `json:"target_text,omitempty" jsonschema:"Click, Type, Hover, Select or Upload: the visible text of the one element to target (instead of ref)"`
	X           *int32 `json:"x,omitempty" jsonschema:"Click: viewport x in CSS pixels (with y and observation; refs are safer)"`
	Y           *int32 `json:"y,omitempty" jsonschema:"Click: viewport y in CSS pixels"`
	Observation string `json:"observation,omitempty" jsonschema:"Click by point: the observation (e.g. o3) x and y were read from"`
	Text        string `json:"text,omitempty" jsonschema:"Type: the text to type; Wait: the text to wait for; Select: the option's label or value; Dialog with answer Accept: a prompt's answer (else its default)"`
	Key         string `json:"key,omitempty" jsonschema:"Press: Enter, Tab, Escape, Backspace, ArrowDown or one character"`
	DeltaY      *int32 `json:"delta_y,omitempty" jsonschema:"Scroll: pixels down (negative: up)"`
	DeltaX      *int32 `json:"delta_x,omitempty" jsonschema:"Scroll: pixels right (negative: left)"`
	Duration    string `json:"duration,omitempty" jsonschema:"Wait: how long, e.g. 2s (at most 30s); with text, how long to wait for it"`
	// OutlineOffset pages through an Observe step's outline.
	OutlineOffset *int32 `json:"outline_offset,omitempty" jsonschema:"Observe: the first line of the page's outline to return (a truncated outline's nextOffset)"`
	// Answer answers a Dialog step's dialog.
	Answer string `json:"answer,omitempty" jsonschema:"Dialog: Accept (OK) or Dismiss (Cancel) the JavaScript dialog the page shows"`
	// File is an Upload step's file (consecutive Upload steps with the same
	// target are one step with their files).
	File string `json:"file,omitempty" jsonschema:"Upload: the file to put into the file input, a path inside the profile's upload directory, e.g. resume.pdf (for several files, one Upload step per file with the same target; the input must take several)"`
}

// toAPI is s as a BrowserAction's step (its type matched case-insensitively);
// stepOf is its inverse.
func (s Step) toAPI() (twv1.ActionStep, error) {
	st := twv1.ActionStep{Type: twv1.StepType(s.Type), URL: s.URL, Text: s.Text, Key: s.Key, DeltaX: s.DeltaX, DeltaY: s.DeltaY, OutlineOffset: s.OutlineOffset, Answer: twv1.DialogAnswer(s.Answer)}
	for _, a := range []twv1.DialogAnswer{twv1.DialogAccept, twv1.DialogDismiss} {
		if strings.EqualFold(s.Answer, string(a)) {
			st.Answer = a
		}
	}
	for _, t := range twv1.StepTypes {
		if strings.EqualFold(s.Type, string(t)) {
			st.Type = t
		}
	}
	if s.Ref != "" || s.TargetText != "" || s.X != nil || s.Y != nil {
		st.Target = &twv1.ActionTarget{Ref: s.Ref, Text: s.TargetText, X: s.X, Y: s.Y, Observation: s.Observation}
	}
	if s.File != "" {
		// One file; act joins consecutive Upload steps with the same target.
		st.Files = []string{s.File}
	}
	if st.Type == twv1.StepFill {
		// One field; act joins consecutive Fill steps into one.
		f := twv1.FillField{Target: st.Target, Text: st.Text}
		st.Fields, st.Target, st.Text = []twv1.FillField{f}, nil, ""
	}
	if s.Duration != "" {
		d, err := time.ParseDuration(s.Duration)
		if err != nil {
			return st, &ops.Error{Kind: ops.Invalid, Message: fmt.Sprintf("duration %q: %v", s.Duration, err), Hint: `{"type": "Wait", "duration": "2s"}`}
		}
		st.Duration = &metav1.Duration{Duration: d}
	}
	return st, nil
}

// apiSteps is act's steps as a BrowserAction's: consecutive Fill steps are
// one Fill step whose fields are all checked before any is typed into, and
// consecutive Upload steps with the same target one Upload of their files.
func apiSteps(in []Step) ([]twv1.ActionStep, error) {
	steps := make([]twv1.ActionStep, 0, len(in))
	for _, s := range in {
		st, err := s.toAPI()
		if err != nil {
			return nil, err
		}
		if n := len(steps); n > 0 && st.Type == twv1.StepFill && steps[n-1].Type == twv1.StepFill {
			steps[n-1].Fields = append(steps[n-1].Fields, st.Fields...)
			continue
		}
		if n := len(steps); n > 0 && st.Type == twv1.StepUpload && steps[n-1].Type == twv1.StepUpload &&
			st.Target != nil && steps[n-1].Target != nil && equality.Semantic.DeepEqual(*st.Target, *steps[n-1].Target) {
			steps[n-1].Files = append(steps[n-1].Files, st.Files...)
			continue
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// stepsOf is st as act takes it: a Fill step is one Fill step per field, an
// Upload one Upload step per file.
func stepsOf(st twv1.ActionStep) []Step {
	if st.Type == twv1.StepUpload && len(st.Files) > 0 {
		var out []Step
		for _, f := range st.Files {
			s := stepOf(st)
			s.File = f
			out = append(out, s)
		}
		return out
	}
	if st.Type != twv1.StepFill {
		return []Step{stepOf(st)}
	}
	var out []Step
	for _, f := range st.Fields {
		t := f.Target
		if t == nil {
			t = &twv1.ActionTarget{}
		}
		out = append(out, Step{Type: string(st.Type), Ref: t.Ref, TargetText: t.Text, X: t.X, Y: t.Y, Observation: t.Observation, Text: f.Text})
	}
	return out
}

// stepOf is st as act takes it: the inverse of Step.toAPI (stepsOf for Fill).
func stepOf(st twv1.ActionStep) Step {
	s := Step{Type: string(st.Type), URL: st.URL, Text: st.Text, Key: st.Key, DeltaX: st.DeltaX, DeltaY: st.DeltaY, OutlineOffset: st.OutlineOffset, Answer: string(st.Answer)}
	if t := st.Target; t != nil {
		s.Ref, s.TargetText, s.X, s.Y, s.Observation = t.Ref, t.Text, t.X, t.Y, t.Observation
	}
	if st.Duration != nil {
		s.Duration = st.Duration.Duration.String()
	}
	return s
}

// ActInput is act's input.
type ActInput struct {
	Session string `json:"session" jsonschema:"the session's name"`
	Window  string `json:"window" jsonschema:"the window whose page the steps drive"`
	Thread  string `json:"thread" jsonschema:"your thread: the session's thread"`
	Steps   []Step `json:"steps" jsonschema:"the steps, run in order (1 to 32), e.g. [{\"type\": \"Click\", \"ref\": \"o3.e12\"}]"`
}

// ActOutput is what an action did.
type ActOutput struct {
	Action      string            `json:"action,omitempty" jsonschema:"the BrowserAction's name"`
	Phase       string            `json:"phase,omitempty" jsonschema:"Succeeded, Refused or Failed (Pending or Running when it did not finish in time)"`
	Observation *twv1.Observation `json:"observation,omitempty" jsonschema:"the last observation: url, title, elements with refs, and the page's outline (outline.text; outline.nextOffset when truncated)"`
	Spawned     []SpawnedOutput   `json:"spawned,omitempty" jsonschema:"windows the page spawned: acknowledge them before the next mutating step"`
	Warnings    []string          `json:"warnings,omitempty"`
	Steps       []twv1.StepResult `json:"steps,omitempty"`
	Error       *Failure          `json:"error,omitempty" jsonschema:"why the call was refused or failed"`
}

// SpawnedOutput is a window an action's page spawned.
type SpawnedOutput struct {
	Window string `json:"window"`
	URL    string `json:"url,omitempty"`
}

func (h *handlers) observe(ctx context.Context, req *mcp.CallToolRequest, in ObserveInput) (*mcp.CallToolResult, ActOutput, error) {
	return h.act(ctx, req, ActInput{Session: in.Session, Window: in.Window, Thread: in.Thread, Steps: []Step{{Type: string(twv1.StepObserve), OutlineOffset: in.OutlineOffset}}})
}

func (h *handlers) act(ctx context.Context, _ *mcp.CallToolRequest, in ActInput) (*mcp.CallToolResult, ActOutput, error) {
	steps, err := apiSteps(in.Steps)
	if err != nil {
		return failWith(h, err, in.Session, ActOutput{})
	}
	h.hold(in.Session) // a session this server is given is held like one it started
	a, err := h.ops.Act(ctx, ops.ActRequest{Session: in.Session, Window: in.Window, Thread: in.Thread, Steps: steps}, h.timeout)
	if a == nil || (err != nil && !a.Status.Phase.Finished()) {
		out := ActOutput{}
		if a != nil {
			out.Action, out.Phase = a.Name, string(a.Status.Phase)
		}
		return failWith(h, err, in.Session, out)
	}
	var b bytes.Buffer
	t := h.table()
	t.NoRefusal = true
	if werr := t.WriteAction(&b, a); werr != nil {
		return nil, ActOutput{}, werr
	}
	instr := fmt.Sprintf("Action %s: %s.", a.Name, a.Status.Phase)
	if len(a.Status.Spawned) > 0 {
		names := make([]string, 0, len(a.Status.Spawned))
		for _, s := range a.Status.Spawned {
			names = append(names, fmt.Sprintf("%q", s.Name))
		}
		instr += fmt.Sprintf("\nWith this tool: acknowledge {\"windows\": [%s], \"disposition\": \"Close\"} (or Keep, Temporary)", strings.Join(names, ", "))
	}
	if o := a.Status.Observation; o != nil && o.Outline != nil && o.Outline.Truncated && o.Outline.NextOffset != nil {
		b, _ := json.Marshal(ObserveInput{Session: in.Session, Window: in.Window, Thread: in.Thread, OutlineOffset: o.Outline.NextOffset})
		instr += fmt.Sprintf("\nThe page's outline goes on past line %d: observe %s reads on.", *o.Outline.NextOffset, b)
	}
	out := ActOutput{Action: a.Name, Phase: string(a.Status.Phase), Observation: a.Status.Observation, Warnings: a.Status.Warnings, Steps: a.Status.Steps}
	for _, s := range a.Status.Spawned {
		out.Spawned = append(out.Spawned, SpawnedOutput{Window: s.Name, URL: s.URL})
	}
	if err != nil {
		// A refusal or failure: the first block carries reason, message and hint.
		f, terr := h.failure(err, in.Session)
		out.Error = f
		res := pageResult(terr.Error()+"\n\n"+instr, b.String())
		res.SetError(terr)
		return res, out, nil
	}
	return pageResult(instr, b.String()), out, nil
}

// actCall is the act (or observe) tool call that does what action a would.
func actCall(a *twv1.BrowserAction) string {
	sp := a.Spec
	if len(sp.Steps) == 1 && sp.Steps[0].Type == twv1.StepObserve {
		b, _ := json.Marshal(ObserveInput{Session: sp.SessionRef.Name, Window: sp.WindowRef.Name, Thread: sp.Thread, OutlineOffset: sp.Steps[0].OutlineOffset})
		return "observe " + string(b)
	}
	in := ActInput{Session: sp.SessionRef.Name, Window: sp.WindowRef.Name, Thread: sp.Thread}
	for _, st := range sp.Steps {
		in.Steps = append(in.Steps, stepsOf(st)...)
	}
	b, _ := json.Marshal(in)
	return "act " + string(b)
}
