package index

import (
	"encoding/json"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

const windowJSON = `{"metadata":{"name":"s1-w0","namespace":"team","uid":"u1","finalizers":["tabwarden.dev/page"],
"labels":{"tabwarden.dev/profile":"scale","tabwarden.dev/session":"s1","tabwarden.dev/source":"open"},
"ownerReferences":[{"apiVersion":"tabwarden.dev/v1alpha1","kind":"BrowserSession","name":"s1","uid":"su1","controller":true}]},
"spec":{"sessionRef":{"name":"s1"},"source":"Open","url":"https://a.example/"},
"status":{"phase":"Open","profileName":"scale","tabId":"t1","conditions":[{"type":"Opened","status":"True","reason":"Open","message":"The page is open","lastTransitionTime":"2026-12-03T12:00:00Z"}]}}`

func decodeWindow(t *testing.T) *twv1.BrowserWindow {
	t.Helper()
	w := &twv1.BrowserWindow{}
	if err := json.Unmarshal([]byte(windowJSON), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestInternSharesRepeatedStrings: two windows decoded apart share one copy of
// their few-valued strings once interned, and each is equal field for field to
// what was decoded; strings that name one object stay their own.
func TestInternSharesRepeatedStrings(t *testing.T) {
	a, b := decodeWindow(t), decodeWindow(t)
	wantA := a.DeepCopy()
	if same(a.Finalizers[0], b.Finalizers[0]) {
		t.Fatal("decoded windows already share strings: the test proves nothing")
	}
	for _, w := range []*twv1.BrowserWindow{a, b} {
		if _, err := Intern(w); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, wantA) {
		t.Fatalf("interning changed the object:\n%+v\nwant\n%+v", a, wantA)
	}
	shared := map[string][2]string{
		"namespace":            {a.Namespace, b.Namespace},
		"finalizer":            {a.Finalizers[0], b.Finalizers[0]},
		"owner kind":           {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"profile label value":  {a.Labels[twv1.ProfileLabel], b.Labels[twv1.ProfileLabel]},
		"phase":                {string(a.Status.Phase), string(b.Status.Phase)},
		"condition reason":     {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"condition status":     {string(a.Status.Conditions[0].Status), string(b.Status.Conditions[0].Status)},
		"status profile name":  {a.Status.ProfileName, b.Status.ProfileName},
		"spec source":          {string(a.Spec.Source), string(b.Spec.Source)},
		"condition type":       {a.Status.Conditions[0].Type, b.Status.Conditions[0].Type},
		"owner api version":    {a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion},
		"source label value":   {a.Labels[twv1.SourceLabel], b.Labels[twv1.SourceLabel]},
		"session label (key)":  {keyOf(a.Labels, twv1.SessionLabel), keyOf(b.Labels, twv1.SessionLabel)},
		"profile label (key)":  {keyOf(a.Labels, twv1.ProfileLabel), keyOf(b.Labels, twv1.ProfileLabel)},
		"condition type again": {a.Status.Conditions[0].Type, b.Status.Conditions[0].Type},
	}
	for what, s := range shared {
		if !same(s[0], s[1]) {
			t.Errorf("%s not shared", what)
		}
	}
	own := map[string][2]string{
		"name":                {a.Name, b.Name},
		"uid":                 {string(a.UID), string(b.UID)},
		"session label value": {a.Labels[twv1.SessionLabel], b.Labels[twv1.SessionLabel]},
		"url":                 {a.Spec.URL, b.Spec.URL},
		"condition message":   {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
	}
	for what, s := range own {
		if same(s[0], s[1]) {
			t.Errorf("%s interned: it names one object, the table would fill with such values", what)
		}
	}
}

func keyOf(m map[string]string, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}
