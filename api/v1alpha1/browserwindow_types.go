package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WindowSource is how a page came into a session.
// +kubebuilder:validation:Enum=Open;Spawned;Bind
type WindowSource string

const (
	// SourceOpen: the agent asked for the page; tabwarden opens it and owns it.
	SourceOpen WindowSource = "Open"
	// SourceSpawned: a page of the session spawned it (a popup, a target=_blank
	// link, window.open); the agent adopted it; the session owns it.
	SourceSpawned WindowSource = "Spawned"
	// SourceBind: an existing user tab, used but never owned and never closed.
	SourceBind WindowSource = "Bind"
)

// Disposition is what happens to a page: closed with its session, kept, or closed now.
// +kubebuilder:validation:Enum=Temporary;Keep;Close
type Disposition string

const (
	// DispositionTemporary closes the page when its session ends.
	DispositionTemporary Disposition = "Temporary"
	// DispositionKeep keeps the page open as a deliverable that outlives the session.
	DispositionKeep Disposition = "Keep"
	// DispositionClose closes the page now.
	DispositionClose Disposition = "Close"
)

// EffectiveDisposition is the disposition in effect for a window, as
// `kubectl get browserwindow` shows it: spec.disposition when set; Temporary
// (the default) for an Open or Bind window without one; Unacknowledged for a
// Spawned window without one, which holds its session back until someone says
// keep or close.
// +kubebuilder:validation:Enum=Temporary;Keep;Close;Unacknowledged
type EffectiveDisposition string

// DispositionUnacknowledged is the effective disposition of a spawned window
// nobody has acknowledged yet (spec.disposition unset).
const DispositionUnacknowledged EffectiveDisposition = "Unacknowledged"

// WindowPhase is the state of a window's page in the browser.
// +kubebuilder:validation:Enum=Pending;Open;Closing;Closed;Gone;Unknown
type WindowPhase string

const (
	WindowPending WindowPhase = "Pending"
	WindowOpen    WindowPhase = "Open"
	WindowClosing WindowPhase = "Closing"
	WindowClosed  WindowPhase = "Closed"
	// WindowGone: the page was closed outside tabwarden, by the user or the page.
	WindowGone WindowPhase = "Gone"
	// WindowUnknown: the browser is unreachable; the page was not declared closed.
	WindowUnknown WindowPhase = "Unknown"
)

// SessionReference names a BrowserSession in the window's namespace.
type SessionReference struct {
	// name of the BrowserSession.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// SpawnInfo says how a Spawned window came to be.
type SpawnInfo struct {
	// tabId is the browser id of the spawned page: the window's identity, kept in
	// spec so that a restart between adoption and the first status write loses nothing.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	TabID string `json:"tabId,omitempty"`
	// openerTabId is the browser id of the page that spawned this one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:MinLength=1
	OpenerTabID string `json:"openerTabId,omitempty"`
	// spawnedBy is the BrowserWindow whose page spawned this one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	SpawnedBy string `json:"spawnedBy,omitempty"`
	// reason says how the spawn was attributed: opener (the browser named the
	// opener) or during_action (no opener; it appeared while the session acted).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:MinLength=1
	Reason string `json:"reason,omitempty"`
	// url is the first url the browser reported for the page; often empty, since
	// browsers report a spawned page before its url (status.url follows it).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:MinLength=1
	URL string `json:"url,omitempty"`
}

// BrowserWindowSpec is one page a session owns or uses.
// +kubebuilder:validation:XValidation:rule="self.source == oldSelf.source",message="spec.source is immutable; delete the window and create another"
// +kubebuilder:validation:XValidation:rule="self.sessionRef == oldSelf.sessionRef",message="spec.sessionRef is immutable: a page belongs to one session for its whole life"
// +kubebuilder:validation:XValidation:rule="self.source == 'Bind' ? has(self.bindTabId) : !has(self.bindTabId)",message="spec.bindTabId goes with source: Bind and only with it; pick the id from the tabs your namespace may bind: `kubectl get browsertablist <profile> -n <namespace> -o jsonpath='{.tabs}'`"
// +kubebuilder:validation:XValidation:rule="self.source != 'Open' || has(self.url)",message="an Open window needs spec.url, for example url: https://example.com/"
// +kubebuilder:validation:XValidation:rule="self.source == 'Spawned' ? has(self.spawn) : !has(self.spawn)",message="spec.spawn is written by the agent for Spawned windows, and only for them"
// +kubebuilder:validation:XValidation:rule="self.source != 'Bind' || !has(self.disposition) || self.disposition != 'Close'",message="a bound tab is the user's: it is never closed; delete the window to detach it"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.bindTabId) || self.bindTabId == oldSelf.bindTabId",message="spec.bindTabId is immutable: a binding that fails is never moved to another tab"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spawn) || self.spawn == oldSelf.spawn",message="spec.spawn is immutable: it records how the page came to be"
type BrowserWindowSpec struct {
	// sessionRef names the session this page belongs to.
	// +required
	SessionRef SessionReference `json:"sessionRef,omitzero"`

	// source is Open (tabwarden opens url), Spawned (adopted by the agent) or Bind
	// (an existing user tab, used but never closed).
	// +required
	Source WindowSource `json:"source,omitempty"`

	// url to open (Open). For Spawned and Bind windows the browser's url is in status.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://') || self == 'about:blank'",message="spec.url must be an http(s) url or about:blank"
	// +kubebuilder:validation:MinLength=1
	URL string `json:"url,omitempty"`

	// placement overrides the session's placement for this window.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// bindTabId is the user tab to bind (Bind only): an id from the BrowserTabList
	// named after the profile in the session's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	BindTabID string `json:"bindTabId,omitempty"`

	// spawn says how a Spawned window came to be (written by the agent).
	// +optional
	Spawn *SpawnInfo `json:"spawn,omitzero"`

	// disposition is Temporary (closed with the session), Keep (a deliverable that
	// outlives the session) or Close (close now). A spawned window starts with none,
	// which is what unacknowledged means.
	// +optional
	Disposition Disposition `json:"disposition,omitempty"`
}

// BrowserWindowStatus is what the agent observes of the page.
type BrowserWindowStatus struct {
	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is Pending, Open, Closing, Closed, Gone or Unknown.
	// +optional
	Phase WindowPhase `json:"phase,omitempty"`
	// disposition is the disposition in effect: spec.disposition when set,
	// Temporary when an Open or Bind window was created without one (the
	// default), Unacknowledged for a Spawned window nobody has said keep or
	// close for yet (a bound tab is detached, never closed, whichever it
	// shows). Written with the rest of the status by the agent serving the
	// window (and by the controller when it refuses one); unset until then.
	// +optional
	Disposition EffectiveDisposition `json:"disposition,omitempty"`
	// profileName is the profile the page lives in.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ProfileName string `json:"profileName,omitempty"`
	// tabId is the browser's id of the page.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TabID string `json:"tabId,omitempty"`
	// windowId is the browser window holding the page.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	WindowID string `json:"windowId,omitempty"`
	// pinnedWindowId is the window a Tab placement page was asked to open in: the
	// session's pinned window, recorded once when the page opened. It differs from
	// windowId when the page could not be placed there (condition Placed=False).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PinnedWindowID string `json:"pinnedWindowId,omitempty"`
	// ownsWindow is true when the browser window was created for this page (a new
	// window or a spawned popup), so closing the page may close the window.
	// +optional
	OwnsWindow bool `json:"ownsWindow,omitempty"`
	// url is the page's current url.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:MinLength=1
	URL string `json:"url,omitempty"`
	// title is the page's current title.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Title string `json:"title,omitempty"`
	// epoch is the agent's browser connection the ids belong to.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// openedTime is when the page opened (or was adopted or bound).
	// +optional
	OpenedTime *metav1.Time `json:"openedTime,omitempty"`
	// closedTime is when the page closed.
	// +optional
	ClosedTime *metav1.Time `json:"closedTime,omitempty"`
	// conditions are Registered, Opened (or Bound), Placed (Tab placement) and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// BrowserWindow is one page a session owns or uses.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bwin;bw,categories=tabwarden
// +kubebuilder:printcolumn:name="Session",type=string,JSONPath=`.spec.sessionRef.name`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source`
// +kubebuilder:printcolumn:name="Disposition",type=string,JSONPath=`.status.disposition`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Tab",type=string,JSONPath=`.status.tabId`,priority=1
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BrowserWindow struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the session wants of the page.
	// +required
	Spec BrowserWindowSpec `json:"spec,omitzero"`
	// status is what the agent observes.
	// +optional
	Status BrowserWindowStatus `json:"status,omitempty"`
}

// BrowserWindowList is a list of BrowserWindows.
// +kubebuilder:object:root=true
type BrowserWindowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrowserWindow `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BrowserWindow{}, &BrowserWindowList{})
}

// GetConditions returns the status conditions.
func (w *BrowserWindow) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions sets the status conditions.
func (w *BrowserWindow) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }

// Owned reports whether the session owns the page (it may close it).
func (w *BrowserWindow) Owned() bool { return w.Spec.Source != SourceBind }

// Acknowledged reports whether a spawned window has a disposition.
func (w *BrowserWindow) Acknowledged() bool {
	return w.Spec.Source != SourceSpawned || w.Spec.Disposition != ""
}

// EffectiveDisposition is the disposition in effect (status.disposition):
// spec.disposition when set, Unacknowledged for a spawned window without one,
// Temporary for any other.
func (w *BrowserWindow) EffectiveDisposition() EffectiveDisposition {
	switch {
	case w.Spec.Disposition != "":
		return EffectiveDisposition(w.Spec.Disposition)
	case w.Spec.Source == SourceSpawned:
		return DispositionUnacknowledged
	}
	return EffectiveDisposition(DispositionTemporary)
}

// Unacknowledged reports whether the window holds its session back: a spawned
// page with no disposition that may still be open. A Spawned window the agent
// refused (spawn_not_observed) holds nothing: it has no page, and an object
// alone must not be able to stall a session.
func (w *BrowserWindow) Unacknowledged() bool {
	return !w.Acknowledged() && w.DeletionTimestamp.IsZero() && w.Status.Phase != WindowClosed && w.Status.Phase != WindowGone && !w.Refused()
}

// Refused reports whether the agent refused the window's claim to its page
// (reason spawn_not_observed).
func (w *BrowserWindow) Refused() bool {
	for _, c := range w.Status.Conditions {
		if c.Type == OpenedCondition && c.Reason == ReasonSpawnNotObserved {
			return true
		}
	}
	return false
}

// Live reports whether the page is (or may be) open in the browser.
func (w *BrowserWindow) Live() bool {
	switch w.Status.Phase {
	case WindowOpen, WindowClosing, WindowUnknown:
		return true
	}
	return false
}

// SourceLabelValue is the value of the tabwarden.dev/source label for a source
// (open, spawned, bind).
func SourceLabelValue(s WindowSource) string {
	switch s {
	case SourceOpen:
		return "open"
	case SourceSpawned:
		return "spawned"
	case SourceBind:
		return "bind"
	}
	return "unknown"
}

// Register ties the window to its session s: the session and source labels,
// the session as controlling owner, and, once s is placed (status.profileName)
// and place is true, the profile label together with the agent's page
// finalizer, so that the finalizer is stored before any agent sees the window.
// The controller registers every window (place is false once an agent took it:
// a window with a page stays with that agent); a creator that already knows the
// session's placement registers the window in its create, which saves the
// controller's write and the hop to it (docs/design.md, "Writes per
// operation"). The profile label routes the window to an agent; it grants
// nothing: an agent serves a window only when its session is placed on the
// agent's profile.
func (w *BrowserWindow) Register(s *BrowserSession, place bool) {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[SessionLabel] = s.Name
	w.Labels[SourceLabel] = SourceLabelValue(w.Spec.Source)
	if p := s.Status.ProfileName; p != "" && place {
		w.Labels[ProfileLabel] = p
		if !slices.Contains(w.Finalizers, PageFinalizer) {
			w.Finalizers = append(w.Finalizers, PageFinalizer)
		}
	}
	if metav1.GetControllerOf(w) == nil {
		w.OwnerReferences = append(w.OwnerReferences, *metav1.NewControllerRef(s, GroupVersion.WithKind("BrowserSession")))
	}
}
