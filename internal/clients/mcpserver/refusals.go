package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// Failure is a refusal or failure in a tool result's structured content, which
// then also has isError set.
type Failure struct {
	Kind    string `json:"kind" jsonschema:"Refused (a guard said no: follow the hint), Failed (the browser or the cluster could not do it) or Invalid (the call itself is wrong)"`
	Reason  string `json:"reason,omitempty" jsonschema:"a stable snake_case reason, e.g. unacknowledged_spawns"`
	Message string `json:"message" jsonschema:"what happened, naming this tool's parameters"`
	Hint    string `json:"hint,omitempty" jsonschema:"the corrected call: a tool call first, then the kubectl command that does the same"`
}

// structuredErrors gives the tool errors the SDK makes itself (arguments that
// do not match the input schema, before any handler runs) the structured
// content every refusal of the handlers has: error {kind, reason, message, hint}.
func structuredErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !r.IsError || r.StructuredContent != nil {
			return res, err
		}
		var msg strings.Builder
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				msg.WriteString(t.Text)
			}
		}
		f := Failure{Kind: string(ops.Failed), Message: msg.String()}
		if strings.HasPrefix(f.Message, `validating "arguments"`) {
			tool := "the tool"
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
				tool = p.Name
			}
			f.Kind, f.Reason = string(ops.Invalid), "invalid_arguments"
			f.Hint = fmt.Sprintf("call %s again with the arguments its input schema gives (tools/list): each required one, each of its type (a list is a JSON array, not a string), an enum's values as spelled", tool)
		}
		r.StructuredContent = map[string]any{"error": f}
		return r, nil
	}
}

// fail is the tool result of a refusal or failure: isError, the text the
// model reads (reason, message, hint) and the same as structured content.
func (h *handlers) fail(err error, session string) (*mcp.CallToolResult, *Failure) {
	f, terr := h.failure(err, session)
	res := &mcp.CallToolResult{}
	res.SetError(terr)
	return res, f
}

// failure is err as the model gets it: its hint the tool call that corrects it
// (see teach), its message naming the tool's parameters, not the API's fields
// (see paramNames); as structured content and as an error.
func (h *handlers) failure(err error, session string) (*Failure, error) {
	err = h.teach(err, session)
	e, ok := ops.AsError(err)
	if !ok {
		msg := paramNames(err.Error())
		return &Failure{Kind: string(ops.Failed), Message: msg}, fmt.Errorf("%s", msg)
	}
	c := *e
	c.Message = paramNames(e.Message)
	return &Failure{Kind: string(c.Kind), Reason: c.Reason, Message: c.Message, Hint: c.Hint}, &c
}

// The API's field paths in messages (of the API server, the controller, the
// agent's guards), each with the tool parameter that sets it.
var (
	fieldParams = strings.NewReplacer(
		// Longer paths first; ones that are no parameter's stay as they are.
		"spec.urlPolicy", "spec.urlPolicy",
		"metadata.namespace", "metadata.namespace",
		"spec.profileName", "profile",
		"profileName: ", "profile: ",
		"spec.profileSelector", "selector",
		"spec.abandonAfter", "abandon_after",
		"spec.thread", "thread",
		"spec.purpose", "purpose",
		"spec.placement", "placement",
		"spec.sessionRef.name", "session",
		"spec.sessionRef", "session",
		"spec.windowRef.name", "window",
		"spec.windowRef", "window",
		"spec.url", "url",
		"spec.disposition", "disposition",
		"metadata.name", "name",
		"deltaY", "delta_y",
		"deltaX", "delta_x",
		"outlineOffset", "outline_offset",
		// ActionTarget's rule, where the step's target text is target_text.
		"text (the element's visible text", "target_text (the element's visible text",
		"{text: ", "{target_text: ",
		// A Fill's fields are consecutive Fill steps in act.
		`{type: Fill, fields: [{ref: o3.e4, text: "Ada"}, {target_text: "Email", text: "ada@example.com"}]}`, `{type: Fill, ref: o3.e4, text: "Ada"}, {type: Fill, target_text: "Email", text: "ada@example.com"}`,
		`{type: Fill, fields: [{ref: o3.e4, text: "Ada"}]}`, `{type: Fill, ref: o3.e4, text: "Ada"}`,
	)
	// spec.steps[0].target.text is steps[0].target_text; spec.steps[0].target.ref steps[0].ref.
	stepTargetField = regexp.MustCompile(`spec\.steps\[(\d+)\]\.target\.(\w+)`)
	stepTarget      = regexp.MustCompile(`spec\.steps\[(\d+)\]\.target\b`)
	// A Fill's fields flatten their targets the same way: spec.steps[0].fields[1].target.text
	// is steps[0].fields[1].target_text.
	fieldTargetField = regexp.MustCompile(`spec\.steps\[(\d+)\]\.fields\[(\d+)\]\.target\.(\w+)`)
	fieldTarget      = regexp.MustCompile(`spec\.steps\[(\d+)\]\.fields\[(\d+)\]\.target\b`)
	stepsPath        = regexp.MustCompile(`spec\.steps\b`)
	// The CRD's examples nest a target ({type: Click, target: {ref: o3.e12}}); act's steps do not.
	targetExample = regexp.MustCompile(`target: \{([^{}]*)\}`)
)

// paramNames rewrites msg's API field paths (spec.profileName) as the tool
// parameters that set them (profile).
func paramNames(msg string) string {
	msg = fieldTargetField.ReplaceAllStringFunc(msg, func(m string) string {
		sub := fieldTargetField.FindStringSubmatch(m)
		field := sub[3]
		if field == "text" {
			field = "target_text"
		}
		return "steps[" + sub[1] + "].fields[" + sub[2] + "]." + field
	})
	msg = fieldTarget.ReplaceAllString(msg, "steps[$1].fields[$2]")
	msg = stepTargetField.ReplaceAllStringFunc(msg, func(m string) string {
		sub := stepTargetField.FindStringSubmatch(m)
		field := sub[2]
		if field == "text" {
			field = "target_text"
		}
		return "steps[" + sub[1] + "]." + field
	})
	msg = stepTarget.ReplaceAllString(msg, "steps[$1]")
	msg = stepsPath.ReplaceAllString(msg, "steps")
	msg = targetExample.ReplaceAllStringFunc(msg, func(m string) string {
		inner := targetExample.FindStringSubmatch(m)[1]
		if strings.HasPrefix(inner, "text: ") {
			return "target_" + inner
		}
		return inner
	})
	return fieldParams.Replace(msg)
}

// failWith is the return of a tool handler whose call was refused or failed:
// the result fail makes, and out with its error set.
func failWith[O any, P interface {
	*O
	setError(*Failure)
}](h *handlers, err error, session string, out O) (*mcp.CallToolResult, O, error) {
	res, f := h.fail(err, session)
	P(&out).setError(f)
	return res, out, nil
}

func (o *ProfilesOutput) setError(f *Failure)    { o.Error = f }
func (o *SessionOutput) setError(f *Failure)     { o.Error = f }
func (o *WindowOutput) setError(f *Failure)      { o.Error = f }
func (o *OwnedOutput) setError(f *Failure)       { o.Error = f }
func (o *AcknowledgeOutput) setError(f *Failure) { o.Error = f }
func (o *ActOutput) setError(f *Failure)         { o.Error = f }

// teach puts the tool call that corrects a refusal first in its hint, the
// kubectl command after it.
func (h *handlers) teach(err error, session string) error {
	e, ok := ops.AsError(err)
	if !ok {
		return err
	}
	if session == "" {
		session = "<session>"
	}
	var call string
	switch e.Reason {
	case twv1.ReasonUnacknowledgedSpawns:
		call = ackAllCall(session) + ` (or "Keep" for a window you need)`
	case "window_not_found", twv1.ReasonWindowNotInSession:
		call = fmt.Sprintf(`list_owned {"session": %q} lists the session's windows`, session)
	case twv1.ReasonSessionUnregistered:
		call = `start_session {"thread": "<your thread>", "purpose": "<why>", "profile": "<profile>"} starts one`
	case twv1.ReasonSessionFinished:
		call = `start_session {"thread": "<your thread>", "purpose": "<why>", "profile": "<profile>"} starts a new session`
	default:
		if a := ops.ActionOfHint(e.Hint); a != nil {
			call = actCall(a)
			break
		}
		if kind, body := ops.CreatedByHint(e.Hint); kind == "BrowserSession" {
			var s twv1.BrowserSession
			if json.Unmarshal(body, &s) == nil {
				in, _ := json.Marshal(StartSessionInput{Thread: s.Spec.Thread, Purpose: s.Spec.Purpose, Profile: s.Spec.ProfileName})
				call = "start_session " + string(in)
				break
			}
		}
		return err
	}
	c := *e
	c.Hint = call
	if e.Hint != "" {
		c.Hint += "\n  (from a shell: " + e.Hint + ")"
	}
	return &c
}
