package mcpserver_test

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestScreenshotTool: the screenshot tool returns the picture as MCP image
// content (PNG of the viewport, JPEG of one element) after a short text naming
// the BrowserScreenshot that keeps it, with its size in the structured output;
// a target not on the page is a tool error whose structured content says why.
func TestScreenshotTool(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	testenv.StartController(t, admin)
	b := fake.New()
	b.SetSite("https://forms.example/shot", fake.Element{Role: "button", Name: "Send"})
	testenv.StartAgent(t, admin, agent.Options{Profile: "mcp-shot", Driver: twv1.DriverFake, Browser: b, LeaseNamespace: access.SystemNamespace})
	ns := testenv.NewNamespace(t, k8s, "mcp-")
	cs := connect(t, testenv.AllowUser(t, admin, ns, "agent-smith"), ns)
	_, out, isErr := call(t, cs, "start_session", map[string]any{"thread": "thread-9", "purpose": "see a page", "profile": "mcp-shot"})
	g.Expect(isErr).To(BeFalse())
	session := out["session"].(string)
	_, out, isErr = call(t, cs, "open_window", map[string]any{"session": session, "url": "https://forms.example/shot"})
	g.Expect(isErr).To(BeFalse())
	window := out["window"].(string)

	shoot := func(args map[string]any) (*mcp.CallToolResult, map[string]any) {
		args["session"], args["window"], args["thread"] = session, window, "thread-9"
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "screenshot", Arguments: args})
		g.Expect(err).NotTo(HaveOccurred())
		s, _ := res.StructuredContent.(map[string]any)
		return res, s
	}
	picture := func(res *mcp.CallToolResult, mime string) image.Config {
		g.Expect(res.IsError).To(BeFalse())
		g.Expect(res.Content).To(HaveLen(2))
		g.Expect(res.Content[0].(*mcp.TextContent).Text).To(ContainSubstring("BrowserScreenshot"))
		img, ok := res.Content[1].(*mcp.ImageContent)
		g.Expect(ok).To(BeTrue(), "the second block is image content: %T", res.Content[1])
		g.Expect(img.MIMEType).To(Equal(mime))
		cfg, _, err := imageDecodeConfig(img.Data)
		g.Expect(err).NotTo(HaveOccurred())
		return cfg
	}

	res, s := shoot(map[string]any{})
	cfg := picture(res, "image/png")
	g.Expect([]int{cfg.Width, cfg.Height}).To(Equal([]int{fake.ViewportWidth, fake.ViewportHeight}))
	g.Expect(s["phase"]).To(Equal("Succeeded"))
	g.Expect(s["screenshot"]).To(HaveKeyWithValue("format", "PNG"))

	res, s = shoot(map[string]any{"target_text": "Send", "format": "JPEG", "quality": 60})
	cfg = picture(res, "image/jpeg")
	g.Expect([]int{cfg.Width, cfg.Height}).To(Equal([]int{200, 40}))
	g.Expect(s["screenshot"]).To(HaveKeyWithValue("quality", 60.0))

	res, s = shoot(map[string]any{"target_text": "no element reads this"})
	g.Expect(res.IsError).To(BeTrue())
	g.Expect(s["error"]).To(HaveKeyWithValue("reason", twv1.ReasonTargetNotFound))
	for _, c := range res.Content {
		_, isImage := c.(*mcp.ImageContent)
		g.Expect(isImage).To(BeFalse(), "no image on a refusal")
	}
}

func imageDecodeConfig(data []byte) (image.Config, string, error) {
	return image.DecodeConfig(bytes.NewReader(data))
}
