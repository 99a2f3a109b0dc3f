package mcpserver

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// The closed sets the tools take, each from the API's constants (the CRDs' enums).
var (
	dispositions = []twv1.Disposition{twv1.DispositionTemporary, twv1.DispositionKeep, twv1.DispositionClose}
	// openDispositions are the ones a new window may start with (Close would close it at once).
	openDispositions = []twv1.Disposition{twv1.DispositionTemporary, twv1.DispositionKeep}
	placements       = []twv1.Placement{twv1.PlacementWindow, twv1.PlacementTab}
)

// maxSteps is a BrowserAction's spec.steps maxItems.
const maxSteps = 32

// inputSchema is T's JSON schema as the SDK infers it (properties from the json
// tags, descriptions from the jsonschema tags, required from the fields without
// omitempty), made plain for every client's form, then edited by edit. Plain:
// each type is one type name, never a list such as ["null","array"] (what the
// inference gives a slice, a map or a pointer), which the MCP Inspector cannot
// render and sends as a string.
func inputSchema[T any](edit func(*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the input schema of %T: %v", *new(T), err))
	}
	plain(s)
	if edit != nil {
		edit(s)
	}
	return s
}

// plain turns every nullable type (["null", X]) of s into X: a tool's
// arguments are never null (an absent optional argument is left out).
func plain(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	plain(s.Items)
	plain(s.AdditionalProperties)
	for _, p := range s.Properties {
		plain(p)
	}
}

// nonEmpty says the named string properties of s, when given, are not empty.
func nonEmpty(s *jsonschema.Schema, names ...string) {
	for _, n := range names {
		s.Properties[n].MinLength = jsonschema.Ptr(1)
	}
}

// enum is vs as a JSON schema's enum values.
func enum[T ~string](vs ...T) []any {
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		out = append(out, string(v))
	}
	return out
}
