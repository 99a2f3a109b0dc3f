package v1alpha1

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	// +default="cdp"
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

	// namespaces are the namespaces whose sessions may use this profile, by name.
	// A profile admits a namespace listed here or matched by namespaceSelector; with
	// neither set it admits none, which is how an agent registers a profile it
	// finds missing. Sessions in other namespaces are refused (profile_not_allowed).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(n, n.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="spec.namespaces holds namespace names: DNS labels of lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters, for example namespaces: [\"default\", \"team-a\"]"
	Namespaces []string `json:"namespaces,omitempty"`

	// namespaceSelector admits the namespaces whose labels match, in addition to
	// namespaces. An empty selector ({}) admits every namespace; unset admits none.
	// Every namespace carries the label kubernetes.io/metadata.name=<its name>.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn'] ? (has(e.values) && size(e.values) > 0) : (e.operator in ['Exists', 'DoesNotExist'] && (!has(e.values) || size(e.values) == 0)))",message="spec.namespaceSelector.matchExpressions: operator In or NotIn takes a non-empty values list, Exists or DoesNotExist takes none, for example matchExpressions: [{key: team, operator: In, values: [a, b]}]; namespaceSelector: {} admits every namespace"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// hostIdleTimeout is how long the browser's host lets a connection sit idle
	// before it ends it (remote Chrome pools often do). A session driven here for
	// more than 10 minutes without spec.keepalive gets the no_keepalive warning.
	// Unset: the host does not idle-time-out.
	// +optional
	HostIdleTimeout *metav1.Duration `json:"hostIdleTimeout,omitempty"`

	// urlPolicy says which destinations sessions on this profile may open or
	// navigate to. Unset, private, loopback, link-local and unspecified
	// destinations (by address, or by a name that resolves to one) are refused
	// with url_not_allowed: the browser's control plane and the machine's own
	// services are out of the pages' reach. Written by the admin.
	// +optional
	URLPolicy *URLPolicy `json:"urlPolicy,omitempty"`

	// uploadDirectory is the directory, on the agent's machine, whose files
	// Upload steps of sessions on this profile may put into the pages' file
	// inputs: an absolute path. An Upload names files relative to it and never
	// reaches outside it (no "..", no symbolic link out of it, regular files
	// only). Unset: every Upload is refused (upload_not_allowed). Uploading
	// sends a file's content to the site the page shows, so the admin puts
	// here only what sessions may send. Written by the admin.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="uploadDirectory is an absolute path on the agent's machine, for example /srv/tabwarden/uploads"
	UploadDirectory string `json:"uploadDirectory,omitempty"`
}

// URLPolicy is a profile's rule for the destinations its sessions open and
// navigate to (the url of an Open window, a navigate step).
type URLPolicy struct {
	// allowPrivateNetworks lets sessions reach private (10/8, 172.16/12,
	// 192.168/16, fc00::/7), loopback, link-local and unspecified addresses.
	// The DevTools port itself stays blocked by the driver whatever this says.
	// +optional
	//nolint:kubeapilinter // unset and false mean the same (refused); no caller needs to tell them apart
	AllowPrivateNetworks bool `json:"allowPrivateNetworks,omitempty"`

	// allowedHosts are host names or addresses (as written in urls, without
	// port; lowercase; an IPv6 address without brackets) that sessions may
	// reach even though they are private, for example ["intranet.example",
	// "127.0.0.1"].
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	AllowedHosts []string `json:"allowedHosts,omitempty"`
}

// Admits reports whether the profile lets sessions in namespace ns, whose labels
// are nsLabels, use it: ns is listed in spec.namespaces or its labels match
// spec.namespaceSelector. With neither set the profile admits no namespace; an
// empty selector admits every one. A selector that does not parse admits nothing
// and is returned as the error.
func (p *BrowserProfile) Admits(ns string, nsLabels map[string]string) (bool, error) {
	if slices.Contains(p.Spec.Namespaces, ns) {
		return true, nil
	}
	if p.Spec.NamespaceSelector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.NamespaceSelector)
	if err != nil {
		return false, fmt.Errorf("spec.namespaceSelector of BrowserProfile %q: %w", p.Name, err)
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}

// BrowserProfileStatus is what the agent observes of its browser.
type BrowserProfileStatus struct {
	// observedGeneration is the generation of the spec the agent last published
	// the status for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Connected and Ready (the same: the agent reaches the browser;
	// Unknown, reason AgentLost, while the controller holds the agent lost).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

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

	// tabCount is how many open tabs a session may bind. Their urls and titles are
	// not here, where anyone who reads profiles would see them: the agent lists them
	// in a BrowserTabList named after the profile, only in namespaces with a session
	// placed on it.
	// +optional
	TabCount int32 `json:"tabCount,omitempty"`
}

// BrowserProfile is one connected browser profile, written by its agent (like a Node).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=bprof,categories=tabwarden
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.driver`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Browser",type=string,JSONPath=`.status.browserVersion`
// +kubebuilder:printcolumn:name="Sessions",type=integer,JSONPath=`.status.sessions`
// +kubebuilder:printcolumn:name="Tabs",type=integer,JSONPath=`.status.tabCount`
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`,priority=1
// +kubebuilder:printcolumn:name="Namespace-Selector",type=string,JSONPath=`.spec.namespaceSelector`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BrowserProfile struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
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
