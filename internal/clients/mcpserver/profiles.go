package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// addProfileTools adds list_profiles.
func addProfileTools(s *mcp.Server, h *handlers) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "list_profiles",
		Description: "List the browser profiles (browsers tabwarden drives) you can see: whether each is connected, " +
			"whether your namespace may use it (usable), its sessions and capacity, its labels. Pass a usable, " +
			"connected one to start_session as profile (or some of its labels as selector).",
		InputSchema: inputSchema[NoInput](nil),
		Annotations: &mcp.ToolAnnotations{Title: "List browser profiles", ReadOnlyHint: true, OpenWorldHint: no()},
	}, h.listProfiles)
}

// NoInput is the input of a tool that takes none.
type NoInput struct{}

// ProfilesOutput lists the browser profiles.
type ProfilesOutput struct {
	Namespace string          `json:"namespace,omitempty" jsonschema:"the namespace your sessions are created in"`
	Profiles  []ProfileOutput `json:"profiles,omitempty"`
	Error     *Failure        `json:"error,omitempty" jsonschema:"why the call was refused or failed"`
}

// ProfileOutput describes a browser profile.
type ProfileOutput struct {
	Name        string            `json:"name" jsonschema:"pass it to start_session as profile"`
	Connected   bool              `json:"connected" jsonschema:"its agent is connected to the browser: sessions placed on it open pages"`
	Usable      string            `json:"usable" jsonschema:"yes: it admits your namespace; no: it does not (start_session on it is refused with profile_not_allowed); unknown: it admits namespaces by label and you may not read your namespace's labels"`
	Driver      string            `json:"driver,omitempty" jsonschema:"cdp (a Chrome tabwarden drives) or extension (a person's own Chrome)"`
	Sessions    int32             `json:"sessions" jsonschema:"sessions placed on it now"`
	MaxSessions int32             `json:"maxSessions,omitempty" jsonschema:"its capacity; absent: unlimited"`
	Labels      map[string]string `json:"labels,omitempty" jsonschema:"its labels: start_session's selector matches them"`
}

func (h *handlers) listProfiles(ctx context.Context, _ *mcp.CallToolRequest, _ NoInput) (*mcp.CallToolResult, ProfilesOutput, error) {
	out := ProfilesOutput{Namespace: h.ops.Namespace}
	ps, err := h.ops.Profiles(ctx)
	if err != nil {
		if apierrors.IsForbidden(err) {
			err = &ops.Error{Kind: ops.Refused, Reason: "forbidden", Message: "listing BrowserProfiles: " + err.Error(),
				Hint: "an admin lets you see them: kubectl create clusterrolebinding <you>-profiles --clusterrole=tabwarden-profile-viewer --user=<you>"}
		}
		return failWith(h, err, "", out)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	// The namespace's labels, for the profiles that admit namespaces by label;
	// nil when this identity may not read them.
	var nsLabels map[string]string
	var ns corev1.Namespace
	if err := h.ops.Client.Get(ctx, client.ObjectKey{Name: h.ops.Namespace}, &ns); err == nil {
		nsLabels = ns.Labels
		if nsLabels == nil {
			nsLabels = map[string]string{}
		}
	}
	usable := []string{}
	for i := range ps {
		p := &ps[i]
		o := ProfileOutput{Name: p.Name, Driver: string(p.Spec.Driver), Sessions: p.Status.Sessions, MaxSessions: p.Spec.MaxSessions,
			Labels: p.Labels, Connected: meta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition), Usable: "no"}
		switch ok, err := p.Admits(h.ops.Namespace, nsLabels); {
		case ok:
			o.Usable = "yes"
		case err == nil && p.Spec.NamespaceSelector != nil && nsLabels == nil:
			o.Usable = "unknown"
		}
		if o.Usable == "yes" && o.Connected {
			usable = append(usable, p.Name)
		}
		out.Profiles = append(out.Profiles, o)
	}
	var b bytes.Buffer
	if err := h.table().WriteProfiles(&b, ps); err != nil {
		return nil, out, err
	}
	msg := fmt.Sprintf("%d profile(s); connected and usable from namespace %s: %s.", len(ps), h.ops.Namespace, strings.Join(usable, ", "))
	if len(usable) == 0 {
		msg = fmt.Sprintf("%d profile(s); none is both connected and usable from namespace %s: an admin admits the namespace (spec.namespaces of the BrowserProfile) or starts its agent.", len(ps), h.ops.Namespace)
	} else {
		msg += fmt.Sprintf("\nWith this tool: start_session {\"thread\": \"<your thread>\", \"purpose\": \"<why>\", \"profile\": %q}", usable[0])
	}
	return text(msg + "\n\n" + b.String()), out, nil
}
