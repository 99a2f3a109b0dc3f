package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/mcpserver"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// listTools lists the server's tools (no API server is needed for that).
func listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	srv := mcpserver.New(&ops.Ops{Namespace: "default"}, mcpserver.Options{Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "schema-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); _ = ss.Wait() }()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// schemaOf is a tool's input schema as a client receives it: plain JSON.
func schemaOf(t *testing.T, tool *mcp.Tool) map[string]any {
	t.Helper()
	raw, err := json.Marshal(tool.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// crdEnum is the enum of the property at path (under spec, through arrays'
// items) in the CRD of kind's plural, as generated from api/v1alpha1's
// +kubebuilder:validation:Enum markers.
func crdEnum(t *testing.T, plural string, path ...string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "crds", "tabwarden.dev_"+plural+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, p := range path {
		if p == "[]" {
			s = *s.Items.Schema
			continue
		}
		s = s.Properties[p]
	}
	var out []string
	for _, e := range s.Enum {
		var v string
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("the %s CRD has no enum at spec.%s", plural, strings.Join(path, "."))
	}
	return out
}

// inspectorProblems lists what the MCP Inspector's tool form cannot render as
// the typed control a property needs, in the input schema s of a tool. The
// rules are read from the Inspector's source (github.com/modelcontextprotocol/
// inspector, client/src): components/ToolsTab.tsx picks each argument's
// control by its type after utils/schemaUtils.ts normalizeUnionType;
// components/DynamicJsonForm.tsx renders objects and arrays (isSimpleObject,
// canRenderTopLevelForm):
//
//   - a property's type is one of string, number, integer, boolean, object or
//     array: a list of types is at best unwrapped when it is a primitive and
//     "null"; ["null","array"] or ["null","object"] fall through to a text
//     control whose value is sent as a string;
//   - an enum is a closed set of strings on a type "string" property (the
//     only one the form renders as a select);
//   - an array has typed items; an array of objects is rendered as a form
//     only when each item property is a primitive (else a raw JSON editor);
//   - no $ref, anyOf, oneOf or allOf, which the form resolves only partly;
//   - every required property is a property.
func inspectorProblems(path string, s map[string]any, top bool) []string {
	var out []string
	bad := func(format string) { out = append(out, path+": "+format) }
	typ, isString := s["type"].(string)
	switch {
	case s["type"] == nil:
		bad("no type")
	case !isString:
		bad("type is not one type name")
	case !slices.Contains([]string{"string", "number", "integer", "boolean", "object", "array"}, typ):
		bad("type " + typ + " has no control")
	}
	for _, k := range []string{"$ref", "anyOf", "oneOf", "allOf"} {
		if _, ok := s[k]; ok {
			bad(k)
		}
	}
	if e, ok := s["enum"].([]any); ok {
		if typ != "string" {
			bad("an enum on a non-string")
		}
		for _, v := range e {
			if _, ok := v.(string); !ok {
				bad("a non-string enum value")
			}
		}
	}
	if _, ok := s["items"]; ok && typ != "array" {
		bad("items on a non-array")
	}
	if typ == "array" {
		items, ok := s["items"].(map[string]any)
		if !ok {
			bad("an array without items")
		} else {
			out = append(out, inspectorProblems(path+"[]", items, false)...)
			if items["type"] == "object" {
				for name, p := range items["properties"].(map[string]any) {
					if t, _ := p.(map[string]any)["type"].(string); !slices.Contains([]string{"string", "number", "integer", "boolean"}, t) {
						bad("item property " + name + " is not a primitive: the form falls back to raw JSON")
					}
				}
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		ps := p.(map[string]any)
		if top && ps["description"] == nil {
			bad(name + " has no description")
		}
		out = append(out, inspectorProblems(path+"."+name, ps, false)...)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		out = append(out, inspectorProblems(path+"{}", ap, false)...)
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := props[r.(string)]; !ok {
				bad("required " + r.(string) + " is no property")
			}
		}
	}
	return out
}

// TestToolSchemas: every tool's input schema is one a form-driven client (the
// MCP Inspector) renders with typed controls: no property's type is a list of
// types, every list is a typed "array", every closed set is an enum equal to
// the API's (the CRDs'), and the arguments a call cannot do without are
// required.
func TestToolSchemas(t *testing.T) {
	tools := listTools(t)
	schemas := map[string]map[string]any{}
	for _, tool := range tools {
		s := schemaOf(t, tool)
		schemas[tool.Name] = s
		if s["type"] != "object" {
			t.Errorf("%s: input schema type %v", tool.Name, s["type"])
		}
		for _, p := range inspectorProblems(tool.Name, s, true) {
			t.Error(p)
		}
	}
	wantTools := []string{"list_profiles", "start_session", "open_window", "list_owned", "acknowledge", "observe", "act", "finish",
		"screenshot"}
	for _, n := range wantTools {
		if schemas[n] == nil {
			t.Fatalf("no tool %s", n)
		}
	}
	if len(schemas) != len(wantTools) {
		t.Errorf("%d tools, want %d: a new tool is checked here too", len(schemas), len(wantTools))
	}
	prop := func(tool string, path ...string) map[string]any {
		s := schemas[tool]
		for _, p := range path {
			if p == "[]" {
				s = s["items"].(map[string]any)
				continue
			}
			s = s["properties"].(map[string]any)[p].(map[string]any)
		}
		return s
	}
	strs := func(v any) []string {
		var out []string
		for _, e := range v.([]any) {
			out = append(out, e.(string))
		}
		return out
	}

	// The lists: plain arrays of typed items.
	for _, l := range []struct{ tool, prop, items string }{{"act", "steps", "object"}, {"acknowledge", "windows", "string"}} {
		p := prop(l.tool, l.prop)
		if p["type"] != "array" || p["items"].(map[string]any)["type"] != l.items {
			t.Errorf("%s.%s: %v, want an array of %s", l.tool, l.prop, p, l.items)
		}
	}

	// The closed sets, each the CRD's enum; and no other enum anywhere.
	enums := map[string][]string{
		"act.steps[].type":        crdEnum(t, "browseractions", "steps", "[]", "type"),
		"act.steps[].answer":      crdEnum(t, "browseractions", "steps", "[]", "answer"),
		"acknowledge.disposition": crdEnum(t, "browserwindows", "disposition"),
		"start_session.placement": crdEnum(t, "browsersessions", "placement"),
		// A new window starts Temporary or Keep: the API's set less Close.
		"screenshot.format":       crdEnum(t, "browseractions", "steps", "[]", "format"),
		"open_window.disposition": slices.DeleteFunc(crdEnum(t, "browserwindows", "disposition"), func(d string) bool { return d == string(twv1.DispositionClose) }),
	}
	if got := enums["act.steps[].type"]; len(got) != len(twv1.StepTypes) {
		t.Errorf("the CRD's step types %v are not the API's %v", got, twv1.StepTypes)
	}
	found := map[string][]string{}
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		if e, ok := s["enum"]; ok {
			found[path] = strs(e)
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(path+"[]", items)
		}
		props, _ := s["properties"].(map[string]any)
		for n, p := range props {
			walk(path+"."+n, p.(map[string]any))
		}
	}
	for n, s := range schemas {
		walk(n, s)
	}
	for path, want := range enums {
		if !slices.Equal(found[path], want) {
			t.Errorf("%s: enum %v, want %v (the API's)", path, found[path], want)
		}
	}
	for path, got := range found {
		if _, ok := enums[path]; !ok {
			t.Errorf("%s: enum %v is not checked against the API here", path, got)
		}
	}

	// What a call cannot do without is required.
	required := map[string][]string{
		"list_profiles": nil,
		"start_session": {"thread", "purpose"},
		"open_window":   {"session", "url"},
		"list_owned":    {"session"},
		"acknowledge":   {"disposition"},
		"observe":       {"session", "window", "thread"},
		"act":           {"session", "window", "thread", "steps"},
		"finish":        {"session"},
		"screenshot":    {"session", "window", "thread"},
	}
	for tool, want := range required {
		var got []string
		if r, ok := schemas[tool]["required"]; ok {
			got = strs(r)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: required %v, want %v", tool, got, want)
		}
	}
	if got := strs(prop("act", "steps", "[]")["required"]); !slices.Equal(got, []string{"type"}) {
		t.Errorf("act.steps[]: required %v, want [type]", got)
	}
	if s := prop("act", "steps"); s["minItems"] != 1.0 || s["maxItems"] != 32.0 {
		t.Errorf("act.steps: minItems %v maxItems %v, want 1 and 32", s["minItems"], s["maxItems"])
	}
}

// TestArgumentErrors: arguments the input schema refuses (steps sent as a
// string, as the MCP Inspector did with ["null","array"]; a disposition not
// the API's) are a tool error with structured content saying reason and hint,
// like every refusal, before anything reaches the API server.
func TestArgumentErrors(t *testing.T) {
	srv := mcpserver.New(&ops.Ops{Namespace: "default"}, mcpserver.Options{Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "schema-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); _ = ss.Wait() }()
	for tool, args := range map[string]map[string]any{
		"act":         {"session": "s", "window": "w", "thread": "t", "steps": `[{"type": "Observe"}]`},
		"acknowledge": {"windows": []string{"w"}, "disposition": "close"},
	} {
		text, structured, isErr := call(t, cs, tool, args)
		if !isErr {
			t.Errorf("%s %v: no error: %s", tool, args, text)
			continue
		}
		e, _ := structured["error"].(map[string]any)
		if e["reason"] != "invalid_arguments" || e["kind"] != "Invalid" || !strings.HasPrefix(e["hint"].(string), "call "+tool+" again") || e["message"] != text {
			t.Errorf("%s %v: structured content %v", tool, args, structured)
		}
	}
}
