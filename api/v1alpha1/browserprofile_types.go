package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DriverType names how an agent talks to its browser.
// +kubebuilder:validation:Enum=cdp;extension;fake
type DriverType string

const (
	// DriverCDP talks the Chrome DevTools Protocol to a remote or headless Chrome.
	DriverCDP DriverType = "cdp"
	// DriverExtension serves the first-party MV3 extension in a user's Chrome on loopback.
	DriverExtension DriverType = "extension"
	// DriverFake is the in-memory browser used by controller unit tests.
	DriverFake DriverType = "fake"
)

// BrowserProfileSpec describes one browser profile an agent serves.
type BrowserProfileSpec struct {
	// driver is how the agent talks to this profile's browser.
	// +optional
	// +kubebuilder:default=cdp
	Driver DriverType `json:"driver,omitempty"`

	// pool marks a shared remote Chrome: each session gets its own browser context,
	// so sessions on one Chrome cannot see each other's cookies or pages.
	// +optional
	Pool bool `json:"pool,omitempty"`

	// maxSessions is how many active sessions the scheduler places on this profile.
	// Zero means no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	MaxSessions int32 `json:"maxSessions,omitempty"`
}

// ProfileTab is one open tab of a profile that a session may bind.
type ProfileTab struct {
	// id is the browser's tab id (a CDP target id or a Chrome tab id).
	// +required
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
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

// BrowserProfileStatus is what the agent observes of its browser.
type BrowserProfileStatus struct {
	// conditions: Connected and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// agent is the identity of the agent serving this profile.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Agent string `json:"agent,omitempty"`

	// browserVersion is what the browser reports of itself.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	BrowserVersion string `json:"browserVersion,omitempty"`

	// epoch counts the agent's connections to the browser; each reconnect starts a new one.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`

	// sessions is how many active sessions are placed on this profile.
	// +optional
	Sessions int32 `json:"sessions,omitempty"`

	// tabs are the open tabs a session may bind: never incognito, chrome:// or extension pages.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	Tabs []ProfileTab `json:"tabs,omitempty"`
}

// BrowserProfile is one connected browser profile, written by its agent (like a Node).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=bprof,categories=tabwarden
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.driver`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Browser",type=string,JSONPath=`.status.browserVersion`
// +kubebuilder:printcolumn:name="Sessions",type=integer,JSONPath=`.status.sessions`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BrowserProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the operator asks of this profile.
	// +optional
	Spec BrowserProfileSpec `json:"spec,omitempty"`
	// status is what the agent observes.
	// +optional
	Status BrowserProfileStatus `json:"status,omitempty"`
}

// BrowserProfileList is a list of BrowserProfiles.
// +kubebuilder:object:root=true
type BrowserProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrowserProfile `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BrowserProfile{}, &BrowserProfileList{})
}

// GetConditions returns the status conditions.
func (p *BrowserProfile) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the status conditions.
func (p *BrowserProfile) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }
