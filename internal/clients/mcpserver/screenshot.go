package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// addScreenshotTool adds screenshot.
func addScreenshotTool(s *mcp.Server, h *handlers) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "screenshot",
		Description: "Take a picture of a window's page: its viewport, or one element (ref or target_text), as PNG or JPEG " +
			"(quality 1-100). Returns the image and where it is kept (a BrowserScreenshot, deleted with its action). " +
			"The page is never brought to the front: a page the browser does not show (a background tab) is refused " +
			"as page_not_visible (observe reads its text instead); an image over 768 KiB is taken smaller as a JPEG, " +
			"refused as a PNG (screenshot_too_large).",
		InputSchema: inputSchema[ScreenshotInput](func(s *jsonschema.Schema) {
			nonEmpty(s, "session", "window", "thread", "ref", "target_text")
			s.Properties["format"].Enum = enum(twv1.ImagePNG, twv1.ImageJPEG)
			s.Properties["quality"].Minimum, s.Properties["quality"].Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(100.0)
		}),
		Annotations: &mcp.ToolAnnotations{Title: "Take a screenshot", ReadOnlyHint: true, OpenWorldHint: yes()},
	}, h.screenshot)
}

// ScreenshotInput is screenshot's input.
type ScreenshotInput struct {
	Session    string `json:"session" jsonschema:"the session's name"`
	Window     string `json:"window" jsonschema:"the window whose page to take (from open_window or list_owned)"`
	Thread     string `json:"thread" jsonschema:"your thread: the session's thread"`
	Ref        string `json:"ref,omitempty" jsonschema:"one element to take: its ref from an earlier observation, e.g. o3.e12 (none: the viewport)"`
	TargetText string `json:"target_text,omitempty" jsonschema:"one element to take: its visible text (instead of ref)"`
	Format     string `json:"format,omitempty" jsonschema:"PNG (the default, lossless) or JPEG (smaller)"`
	Quality    int32  `json:"quality,omitempty" jsonschema:"JPEG only: 1-100 (default 80)"`
}

// ScreenshotOutput is what screenshot took.
type ScreenshotOutput struct {
	Action     string                    `json:"action,omitempty" jsonschema:"the BrowserAction's name"`
	Phase      string                    `json:"phase,omitempty" jsonschema:"Succeeded, Refused or Failed"`
	Screenshot *twv1.ScreenshotReference `json:"screenshot,omitempty" jsonschema:"the BrowserScreenshot that holds the image: name, format, width, height, sizeBytes"`
	Error      *Failure                  `json:"error,omitempty" jsonschema:"why the call was refused or failed"`
}

func (o *ScreenshotOutput) setError(f *Failure) { o.Error = f }

func (h *handlers) screenshot(ctx context.Context, _ *mcp.CallToolRequest, in ScreenshotInput) (*mcp.CallToolResult, ScreenshotOutput, error) {
	step := twv1.ActionStep{Type: twv1.StepScreenshot, Format: twv1.ImageFormat(in.Format), Quality: in.Quality}
	if in.Ref != "" || in.TargetText != "" {
		step.Target = &twv1.ActionTarget{Ref: in.Ref, Text: in.TargetText}
	}
	h.hold(in.Session)
	a, err := h.ops.Act(ctx, ops.ActRequest{Session: in.Session, Window: in.Window, Thread: in.Thread, Steps: []twv1.ActionStep{step}}, h.timeout)
	out := ScreenshotOutput{}
	if a != nil {
		out.Action, out.Phase = a.Name, string(a.Status.Phase)
	}
	if err != nil {
		return failWith(h, err, in.Session, out)
	}
	if len(a.Status.Steps) == 0 || a.Status.Steps[0].Screenshot == nil {
		return failWith(h, &ops.Error{Kind: ops.Failed, Message: fmt.Sprintf("action %s took no screenshot", a.Name)}, in.Session, out)
	}
	ref := a.Status.Steps[0].Screenshot
	out.Screenshot = ref
	shot := &twv1.BrowserScreenshot{}
	if err := h.ops.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: ref.Name}, shot); err != nil {
		return failWith(h, err, in.Session, out)
	}
	mime := "image/png"
	if shot.Format == twv1.ImageJPEG {
		mime = "image/jpeg"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: fmt.Sprintf("Screenshot of window %s (action %s): %s %dx%d, %d bytes, kept as BrowserScreenshot %s until the action is deleted.",
			in.Window, a.Name, ref.Format, ref.Width, ref.Height, ref.SizeBytes, ref.Name)},
		&mcp.ImageContent{Data: shot.Data, MIMEType: mime},
	}}, out, nil
}
