package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxBindableTabs is how many tabs a BrowserTabList lists at most.
const MaxBindableTabs = 500

// BindableTab is one open tab of a profile that a session may bind.
type BindableTab struct {
	// id is the browser's tab id (a CDP target id or a Chrome tab id): the value
	// of a Bind window's spec.bindTabId.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id,omitempty"`
	// windowId is the browser window holding the tab.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	WindowID string `json:"windowId,omitempty"`
	// title is the page title.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Title string `json:"title,omitempty"`
	// url is the page url.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	URL string `json:"url,omitempty"`
}

// BrowserTabList lists the open tabs of one BrowserProfile that sessions in its
// namespace may see for binding: never incognito, chrome:// or extension pages,
// never a page of another namespace's session (nor, on a pool profile, of its
// browser context).
// The profile's agent writes it, named after the profile, only in namespaces that
// have a session placed on that profile and not ended, and deletes it when none
// remains: the user's urls and titles are visible only to those who may bind them.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=btabs,categories=tabwarden
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.profileName`
// +kubebuilder:printcolumn:name="Tabs",type=integer,JSONPath=`.tabCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.profileName",message="a BrowserTabList is named after its profile: metadata.name and profileName are the same BrowserProfile's name"
type BrowserTabList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// profileName is the BrowserProfile whose tabs these are; the object's name too.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ProfileName string `json:"profileName,omitempty"`

	// tabCount is how many tabs this namespace may bind; tabs lists the first 500
	// by id.
	// +optional
	TabCount int32 `json:"tabCount,omitempty"`

	// tabs are the tabs this namespace may bind, by id.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=500
	Tabs []BindableTab `json:"tabs,omitempty"`
}

// BrowserTabListList is a list of BrowserTabLists (the kind's name ends in List:
// its list kind is BrowserTabListList).
// +kubebuilder:object:root=true
type BrowserTabListList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrowserTabList `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BrowserTabList{}, &BrowserTabListList{})
}
