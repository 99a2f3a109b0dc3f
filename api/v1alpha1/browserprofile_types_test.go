package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProfileAdmits(t *testing.T) {
	team := map[string]string{"team": "a", "kubernetes.io/metadata.name": "work"}
	for _, tc := range []struct {
		name       string
		namespaces []string
		selector   *metav1.LabelSelector
		ns         string
		labels     map[string]string
		want       bool
		wantErr    string
	}{
		{name: "neither set admits none", ns: "default", want: false},
		{name: "neither set admits none, whatever the labels", ns: "work", labels: team, want: false},
		{name: "listed namespace", namespaces: []string{"other", "work"}, ns: "work", want: true},
		{name: "unlisted namespace", namespaces: []string{"other"}, ns: "work", labels: team, want: false},
		{name: "an empty list is like no list", namespaces: []string{}, ns: "work", want: false},
		{name: "empty selector admits every namespace", selector: &metav1.LabelSelector{}, ns: "anything", want: true},
		{name: "empty selector admits a namespace without labels", selector: &metav1.LabelSelector{}, ns: "bare", labels: nil, want: true},
		{name: "matchLabels match", selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, ns: "work", labels: team, want: true},
		{name: "matchLabels miss", selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}, ns: "work", labels: team, want: false},
		{name: "matchLabels on a namespace without labels", selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, ns: "work", want: false},
		{name: "matchExpressions In", selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}, ns: "work", labels: team, want: true},
		{name: "matchExpressions NotIn", selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}}}}, ns: "work", labels: team, want: false},
		{name: "the automatic name label selects by name", selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "work"}}, ns: "work", labels: team, want: true},
		{name: "list or selector: listed though the selector misses", namespaces: []string{"work"}, selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "z"}}, ns: "work", labels: team, want: true},
		{name: "list or selector: selected though unlisted", namespaces: []string{"other"}, selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, ns: "work", labels: team, want: true},
		{name: "a name is matched exactly, not as a prefix", namespaces: []string{"wor"}, ns: "work", want: false},
		{name: "invalid selector admits nothing and says why", selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: "Near"}}}, ns: "work", labels: team, want: false, wantErr: `spec.namespaceSelector of BrowserProfile "p"`},
		{name: "invalid selector does not hide a listed namespace", namespaces: []string{"work"}, selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: "Near"}}}, ns: "work", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: BrowserProfileSpec{Namespaces: tc.namespaces, NamespaceSelector: tc.selector}}
			got, err := p.Admits(tc.ns, tc.labels)
			if got != tc.want {
				t.Errorf("Admits(%q, %v) = %v, want %v", tc.ns, tc.labels, got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
