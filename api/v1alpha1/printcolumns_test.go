package v1alpha1

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crd reads the generated CustomResourceDefinition of a kind's plural from
// crds/ (make manifests), so that a marker changed without regenerating fails.
func crd(t *testing.T, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "crds", "tabwarden.dev_"+plural+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		t.Fatalf("%s: %v", plural, err)
	}
	if len(c.Spec.Versions) != 1 {
		t.Fatalf("%s: %d versions, want 1", plural, len(c.Spec.Versions))
	}
	return c
}

// TestPrinterColumns pins what `kubectl get` and `kubectl get -o wide` print
// for each kind, from the generated CRDs: the window's disposition in effect
// (status.disposition, never the empty spec field of a defaulted window or an
// unacknowledged spawn), no hint in the action's wide table (it stays in
// status and describe), and a session's wide table saying how it is driven.
func TestPrinterColumns(t *testing.T) {
	for _, tc := range []struct {
		plural string
		want   []string
	}{
		{"browserwindows", []string{
			"Session .spec.sessionRef.name",
			"Source .spec.source",
			"Disposition .status.disposition",
			"Phase .status.phase",
			"Tab .status.tabId wide",
			"URL .status.url",
			"Age .metadata.creationTimestamp",
		}},
		{"browseractions", []string{
			"Session .spec.sessionRef.name",
			"Window .spec.windowRef.name",
			"Phase .status.phase",
			"Reason .status.reason",
			"Age .metadata.creationTimestamp",
			"Thread .spec.thread wide",
			"Profile .status.profileName wide",
			"Started .status.startTime wide",
			"Completed .status.completionTime wide",
		}},
		{"browsersessions", []string{
			"Thread .spec.thread",
			"Purpose .spec.purpose",
			"Profile .status.profileName",
			"Phase .status.phase",
			`Reason .status.conditions[?(@.type=="Ready")].reason`,
			"Live .status.windows.live",
			"Unacked .status.windows.unacknowledged",
			"Age .metadata.creationTimestamp",
			"Placement .spec.placement wide",
			"Opened .status.windows.opened wide",
			"Spawned .status.windows.spawned wide",
			"Bound .status.windows.bound wide",
			"Last-Activity .status.lastActivityTime wide",
			"Waiting .status.waitingSince wide",
			"Holder .status.holder wide",
			"Renewed .status.lastRenewal wide",
			"Ended .status.endReason wide",
		}},
	} {
		t.Run(tc.plural, func(t *testing.T) {
			v := crd(t, tc.plural).Spec.Versions[0]
			// Each column as "Name jsonPath", then " wide" when it has priority 1
			// (only with -o wide).
			var got []string
			for _, c := range v.AdditionalPrinterColumns {
				if c.Priority != 0 && c.Priority != 1 {
					t.Errorf("column %s: priority %d", c.Name, c.Priority)
				}
				col := c.Name + " " + c.JSONPath
				if c.Priority == 1 {
					col += " wide"
				}
				got = append(got, col)
			}
			if len(got) != len(tc.want) {
				t.Errorf("columns\n got %v\nwant %v", got, tc.want)
			}
			for i := range min(len(got), len(tc.want)) {
				if got[i] != tc.want[i] {
					t.Errorf("column %d: got %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestPrinterColumnsNameFields: every printer column of every kind names a
// field of its schema (a typo prints an empty column, silently), and none
// prints a hint or a message: those are long, and stay in status and describe.
func TestPrinterColumnsNameFields(t *testing.T) {
	filter := regexp.MustCompile(`\[\?\(@\.type=="[A-Za-z]+"\)\]`)
	for _, plural := range []string{"browserwindows", "browseractions", "browsersessions", "browserprofiles", "browsertablists"} {
		v := crd(t, plural).Spec.Versions[0]
		for _, c := range v.AdditionalPrinterColumns {
			if strings.HasPrefix(c.JSONPath, ".metadata.") {
				continue
			}
			if strings.Contains(c.JSONPath, "hint") || strings.Contains(c.JSONPath, "message") {
				t.Errorf("%s column %s prints %s: keep long text out of the table", plural, c.Name, c.JSONPath)
			}
			s := v.Schema.OpenAPIV3Schema
			for _, f := range strings.Split(strings.TrimPrefix(filter.ReplaceAllString(c.JSONPath, ""), "."), ".") {
				if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
					s = s.Items.Schema
				}
				p, ok := s.Properties[f]
				if !ok {
					t.Errorf("%s column %s: %s has no field %q", plural, c.Name, c.JSONPath, f)
					break
				}
				s = &p
			}
		}
	}
	// The window's effective disposition can say Unacknowledged; the spec's cannot.
	v := crd(t, "browserwindows").Spec.Versions[0]
	var enum []string
	for _, e := range v.Schema.OpenAPIV3Schema.Properties["status"].Properties["disposition"].Enum {
		enum = append(enum, strings.Trim(string(e.Raw), `"`))
	}
	if strings.Join(enum, ",") != "Temporary,Keep,Close,Unacknowledged" {
		t.Errorf("status.disposition enum %v", enum)
	}
}

func TestEffectiveDisposition(t *testing.T) {
	for _, tc := range []struct {
		source WindowSource
		spec   Disposition
		want   EffectiveDisposition
	}{
		{SourceOpen, "", "Temporary"},
		{SourceOpen, DispositionKeep, "Keep"},
		{SourceOpen, DispositionClose, "Close"},
		{SourceBind, "", "Temporary"},
		{SourceSpawned, "", DispositionUnacknowledged},
		{SourceSpawned, DispositionTemporary, "Temporary"},
		{SourceSpawned, DispositionClose, "Close"},
	} {
		w := &BrowserWindow{Spec: BrowserWindowSpec{Source: tc.source, Disposition: tc.spec}}
		if got := w.EffectiveDisposition(); got != tc.want {
			t.Errorf("%s window, spec.disposition %q: got %q, want %q", tc.source, tc.spec, got, tc.want)
		}
	}
}
