// Package v1alpha1 contains the tabwarden.dev/v1alpha1 API: browser profiles,
// the sessions that drive them, and every window a session opens, binds or spawns.
// +kubebuilder:object:generate=true
// +groupName=tabwarden.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every tabwarden kind.
	GroupVersion = schema.GroupVersion{Group: "tabwarden.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion} //nolint:staticcheck // the types register with controller-runtime's builder, as every kubebuilder API does

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
