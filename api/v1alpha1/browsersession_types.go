package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placement is where a session's Open windows go.
// +kubebuilder:validation:Enum=Window;Tab
type Placement string

const (
	// PlacementWindow opens each page in a window the session owns.
	PlacementWindow Placement = "Window"
	// PlacementTab opens background tabs in one existing window, pinned at start,
	// never following focus.
	PlacementTab Placement = "Tab"
)

// SessionState is what the driver of a session says about it.
// +kubebuilder:validation:Enum=Active;WaitingForUser;Finished
type SessionState string

const (
	// SessionActive: the agent drives the session.
	SessionActive SessionState = "Active"
	// SessionWaitingForUser: the agent handed over; automated writes are refused.
	SessionWaitingForUser SessionState = "WaitingForUser"
	// SessionFinished: the work is done; temporary pages close, Keep pages are released.
	SessionFinished SessionState = "Finished"
)

// SessionPhase is where a session is in its life.
// +kubebuilder:validation:Enum=Pending;Active;WaitingForUser;Finishing;Finished
type SessionPhase string

const (
	SessionPhasePending        SessionPhase = "Pending"
	SessionPhaseActive         SessionPhase = "Active"
	SessionPhaseWaitingForUser SessionPhase = "WaitingForUser"
	SessionPhaseFinishing      SessionPhase = "Finishing"
	SessionPhaseFinished       SessionPhase = "Finished"
)

// BrowserSessionSpec says who drives which browser, and why.
// +kubebuilder:validation:XValidation:rule="has(self.thread) && size(self.thread) > 0 && has(self.purpose) && size(self.purpose) > 0",message="session_unregistered: every BrowserSession says who drives it and why. Set both fields, for example: spec: {thread: \"thread-42\", purpose: \"file the 2026 tax return form\"}"
// +kubebuilder:validation:XValidation:rule="has(self.profileName) != has(self.profileSelector)",message="set exactly one of spec.profileName (pin a profile, for example profileName: local) or spec.profileSelector (let the controller place the session on a matching connected profile)"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.profileName) || (has(self.profileName) && self.profileName == oldSelf.profileName)",message="spec.profileName is immutable: a session's pages live in one profile; create a new session for another"
// +kubebuilder:validation:XValidation:rule="oldSelf.state != 'Finished' || self.state == 'Finished'",message="a Finished session stays finished; create a new session to continue"
type BrowserSessionSpec struct {
	// thread identifies who drives the session: the agent's conversation or thread id.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	Thread string `json:"thread,omitempty"`

	// purpose says, for the user reading `kubectl get`, what the session is for.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:MinLength=1
	Purpose string `json:"purpose,omitempty"`

	// profileName pins the session to one BrowserProfile.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	ProfileName string `json:"profileName,omitempty"`

	// profileSelector lets the controller place the session on a connected profile
	// with capacity whose labels match.
	// +optional
	ProfileSelector *metav1.LabelSelector `json:"profileSelector,omitempty"`

	// placement is where Open windows go: Window (owned windows) or Tab (background
	// tabs in one existing window, pinned at start).
	// +optional
	// +default="Window"
	Placement Placement `json:"placement,omitempty"`

	// pinnedWindowId is the browser window Tab placement uses. Empty: the window
	// that is current when the session's first page opens, recorded in status.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:MinLength=1
	PinnedWindowID string `json:"pinnedWindowId,omitempty"`

	// state is Active, WaitingForUser (automated writes refused) or Finished
	// (temporary pages close, Keep pages are released, bound tabs detached).
	// +optional
	// +default="Active"
	State SessionState `json:"state,omitempty"`

	// idleTimeout finishes the session (as state Finished would) after this long
	// without activity: no window created, opened or closed, no action claimed,
	// running or finished, no wait for the user ending. It does not run while
	// state is WaitingForUser (see userWaitTimeout). Unset: never. Activity times
	// have one-second resolution.
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// userWaitTimeout ends a wait (state WaitingForUser) that lasts longer than
	// this, with status.endReason UserWaitTimeout, as state Finished would. Unset:
	// the session waits for its user for ever. The idle timeout never runs while
	// the session waits.
	// +optional
	UserWaitTimeout *metav1.Duration `json:"userWaitTimeout,omitempty"`
	// abandonAfter ends the session (status.endReason Abandoned, as state
	// Finished would) once its holder, the client that drives it, has not
	// renewed its claim for this long. The claim is the coordination.k8s.io
	// Lease named after the session in its namespace, labelled
	// tabwarden.dev/session (`tabwarden mcp` and `kubectl tabwarden hold` renew
	// it). A session nobody ever held counts from its creation. A session
	// WaitingForUser is never abandoned. Unset: never.
	// +optional
	AbandonAfter *metav1.Duration `json:"abandonAfter,omitempty"`

	// keepalive keeps the browser's connection busy while the session is active,
	// on hosts that end idle connections (BrowserProfile spec.hostIdleTimeout).
	// +optional
	Keepalive *KeepalivePolicy `json:"keepalive,omitzero"`
}

// KeepalivePolicy says how the agent keeps a session's browser connection alive.
// +kubebuilder:validation:MinProperties=1
type KeepalivePolicy struct {
	// interval between keepalive pings of the session's pages; below the host's idle timeout.
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`
}

// WindowCounts counts a session's windows.
type WindowCounts struct {
	// opened counts Open windows (the agent asked for them).
	// +optional
	Opened int32 `json:"opened"`
	// spawned counts windows the session's pages spawned.
	// +optional
	Spawned int32 `json:"spawned"`
	// bound counts user tabs bound into the session.
	// +optional
	Bound int32 `json:"bound"`
	// unacknowledged counts spawned windows still open with no disposition.
	// +optional
	Unacknowledged int32 `json:"unacknowledged"`
	// live counts pages open right now.
	// +optional
	Live int32 `json:"live"`
}

// Deliverable is a Keep page released when its session ended.
type Deliverable struct {
	// window is the BrowserWindow's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Window string `json:"window,omitempty"`
	// url of the page.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	URL string `json:"url,omitempty"`
	// title of the page.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Title string `json:"title,omitempty"`
}

// BrowserSessionStatus is what the controller observes of a session.
type BrowserSessionStatus struct {
	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is Pending, Active, WaitingForUser, Finishing or Finished.
	// +optional
	Phase SessionPhase `json:"phase,omitempty"`

	// profileName is the profile the session is bound to.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	ProfileName string `json:"profileName,omitempty"`

	// windows counts the session's windows.
	// +optional
	Windows WindowCounts `json:"windows,omitempty"`

	// deliverables are the Keep pages released when the session ended.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Deliverables []Deliverable `json:"deliverables,omitempty"`

	// endReason says which timer ended the session: IdleTimeout,
	// UserWaitTimeout, or Abandoned (its holder stopped renewing for
	// spec.abandonAfter). Empty while it runs, or when it was finished or deleted.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	EndReason string `json:"endReason,omitempty"`

	// holder is the client that holds the session (its Lease's holderIdentity),
	// as the controller last saw it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Holder string `json:"holder,omitempty"`

	// lastRenewal is the holder's renewal the controller last judged the
	// session by (it looks when spec.abandonAfter would expire, not at every
	// renewal: the Lease has the latest).
	// +optional
	LastRenewal *metav1.Time `json:"lastRenewal,omitempty"`

	// lastActivityTime is when a window of the session last changed.
	// +optional
	LastActivityTime *metav1.Time `json:"lastActivityTime,omitempty"`

	// waitingSince is when the current wait for the user (state WaitingForUser)
	// began; unset when the session does not wait.
	// +optional
	WaitingSince *metav1.Time `json:"waitingSince,omitempty"`

	// conditions are Registered, SpawnsAcknowledged, Clean and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// BrowserSession is who drives a browser profile, from which thread, and why.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bsess;bs,categories=tabwarden
// +kubebuilder:printcolumn:name="Thread",type=string,JSONPath=`.spec.thread`
// +kubebuilder:printcolumn:name="Purpose",type=string,JSONPath=`.spec.purpose`
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.status.profileName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Live",type=integer,JSONPath=`.status.windows.live`
// +kubebuilder:printcolumn:name="Unacked",type=integer,JSONPath=`.status.windows.unacknowledged`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placement`,priority=1
// +kubebuilder:printcolumn:name="Opened",type=integer,JSONPath=`.status.windows.opened`,priority=1
// +kubebuilder:printcolumn:name="Spawned",type=integer,JSONPath=`.status.windows.spawned`,priority=1
// +kubebuilder:printcolumn:name="Bound",type=integer,JSONPath=`.status.windows.bound`,priority=1
// +kubebuilder:printcolumn:name="Last-Activity",type=date,JSONPath=`.status.lastActivityTime`,priority=1
// +kubebuilder:printcolumn:name="Waiting",type=date,JSONPath=`.status.waitingSince`,priority=1
// +kubebuilder:printcolumn:name="Holder",type=string,JSONPath=`.status.holder`,priority=1
// +kubebuilder:printcolumn:name="Renewed",type=date,JSONPath=`.status.lastRenewal`,priority=1
// +kubebuilder:printcolumn:name="Ended",type=string,JSONPath=`.status.endReason`,priority=1
// +kubebuilder:validation:XValidation:rule="has(self.spec)",message="session_unregistered: a BrowserSession needs a spec with thread and purpose, for example: spec: {thread: \"thread-42\", purpose: \"file the 2026 tax return form\"}"
type BrowserSession struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says who drives and why.
	// +optional
	Spec BrowserSessionSpec `json:"spec,omitempty"`
	// status is what the controller observes.
	// +optional
	Status BrowserSessionStatus `json:"status,omitempty"`
}

// BrowserSessionList is a list of BrowserSessions.
// +kubebuilder:object:root=true
type BrowserSessionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrowserSession `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BrowserSession{}, &BrowserSessionList{})
}

// GetConditions returns the status conditions.
func (s *BrowserSession) GetConditions() []metav1.Condition { return s.Status.Conditions }

// SetConditions sets the status conditions.
func (s *BrowserSession) SetConditions(c []metav1.Condition) { s.Status.Conditions = c }

// Ended reports whether the session is being deleted or has finished: asked to
// (state Finished) or by one of its timers (status.endReason).
func (s *BrowserSession) Ended() bool {
	return !s.DeletionTimestamp.IsZero() || s.Spec.State == SessionFinished || s.Status.EndReason != ""
}

// Abandoned reports whether the session ended because its holder stopped
// renewing its Lease for spec.abandonAfter (recorded once in status.endReason).
func (s *BrowserSession) Abandoned() bool { return s.Status.EndReason == ReasonAbandoned }

// IdledOut reports whether the session's idle timeout ended it; the controller
// records it once in status.endReason, so every role agrees and it sticks.
func (s *BrowserSession) IdledOut() bool { return s.Status.EndReason == ReasonIdleTimeout }
