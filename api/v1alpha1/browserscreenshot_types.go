package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxScreenshotBytes bounds a screenshot's image. A custom resource is stored
// as JSON (no protobuf), its bytes in base64 (4/3 as many): 768 KiB of image is
// 1 MiB in the object, well under etcd's 1.5 MiB request limit.
const MaxScreenshotBytes = 768 << 10

// ScreenshotActionReference names the BrowserAction whose step took a screenshot.
type ScreenshotActionReference struct {
	// name of the BrowserAction, in the screenshot's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// uid of the BrowserAction: a later action of the same name is another one.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid,omitempty"`
}

// BrowserScreenshot is the image one Screenshot step of a BrowserAction took.
// Only the agent of the action's profile creates one (the admission policy
// tabwarden-screenshot), in the action's namespace, owned by the action: it is
// read by whoever may read the action (the same roles) and goes with it (the
// garbage collector, and tabwarden's controller where there is none). It is
// never changed. The action's status only names it, so that nothing that
// watches actions carries images.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=bshot,categories=tabwarden
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.actionRef.name`
// +kubebuilder:printcolumn:name="Step",type=integer,JSONPath=`.step`
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.format`
// +kubebuilder:printcolumn:name="Width",type=integer,JSONPath=`.width`
// +kubebuilder:printcolumn:name="Height",type=integer,JSONPath=`.height`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BrowserScreenshot struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// actionRef is the BrowserAction whose step took the image (also its owner
	// reference).
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BrowserScreenshot is what the agent saw; it cannot be changed"
	ActionRef ScreenshotActionReference `json:"actionRef,omitzero"`
	// step is the index of the Screenshot step in the action's spec.steps.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BrowserScreenshot is what the agent saw; it cannot be changed"
	Step *int32 `json:"step,omitempty"`
	// profileName is the BrowserProfile whose agent took the image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BrowserScreenshot is what the agent saw; it cannot be changed"
	ProfileName string `json:"profileName,omitempty"`
	// format of the image.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BrowserScreenshot is what the agent saw; it cannot be changed"
	Format ImageFormat `json:"format,omitempty"`
	// width of the image in pixels.
	// +required
	// +kubebuilder:validation:Minimum=1
	Width int32 `json:"width,omitempty"`
	// height of the image in pixels.
	// +required
	// +kubebuilder:validation:Minimum=1
	Height int32 `json:"height,omitempty"`
	// data is the image (PNG or JPEG), at most 768 KiB (1 MiB in base64).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1048576
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BrowserScreenshot is what the agent saw; it cannot be changed"
	Data []byte `json:"data,omitempty"`
}

// BrowserScreenshotList is a list of BrowserScreenshots.
// +kubebuilder:object:root=true
type BrowserScreenshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrowserScreenshot `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BrowserScreenshot{}, &BrowserScreenshotList{})
}
