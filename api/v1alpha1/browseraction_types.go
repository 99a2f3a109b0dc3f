package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StepType is what one step of a BrowserAction does.
// +kubebuilder:validation:Enum=Observe;Navigate;Click;Type;Press;Scroll;Wait;Back;Forward;Reload;Hover;Select;Fill;Screenshot;Dialog;Upload
type StepType string

const (
	// StepObserve reads the page: url, title, scroll position, the visible
	// interactive elements, each with a ref that later steps can target, and the
	// page's content as an outline (roles, names and text; refs on interactive
	// nodes), bounded and paged with outlineOffset.
	StepObserve StepType = "Observe"
	// StepNavigate loads url in the window's page.
	StepNavigate StepType = "Navigate"
	// StepClick clicks a target with a real mouse click.
	StepClick StepType = "Click"
	// StepType types text into a target (or the focused element).
	StepTypeText StepType = "Type"
	// StepPress presses one key (Enter, Tab, Escape, ArrowDown, a letter...).
	StepPress StepType = "Press"
	// StepScroll scrolls the page by deltaX/deltaY pixels.
	StepScroll StepType = "Scroll"
	// StepWait waits for text to appear on the page, or for a duration.
	StepWait StepType = "Wait"
	// StepBack goes one entry back in the page's history, as the browser's back
	// button does; a page with no earlier entry is refused (no_history).
	StepBack StepType = "Back"
	// StepForward goes one entry forward in the page's history; a page with no
	// later entry is refused (no_history).
	StepForward StepType = "Forward"
	// StepReload loads the page's current document again (refs and points of the
	// old document are stale after it).
	StepReload StepType = "Reload"
	// StepHover moves the mouse pointer over a target (a menu that opens on
	// hover, a tooltip), without clicking.
	StepHover StepType = "Hover"
	// StepSelect chooses the option of a drop-down (<select>) target whose
	// visible label (else value) is text, as the user's choice would.
	StepSelect StepType = "Select"
	// StepFill fills several fields in one step: each of fields is a target
	// (the same rules as Type's) and the text that replaces the field's
	// content. Every target is checked before any field is typed into.
	StepFill StepType = "Fill"
	// StepDialog answers the JavaScript dialog (alert, confirm, prompt) the
	// page shows: answer Accept (OK; a prompt gets text, else its default) or
	// Dismiss (Cancel). A page with no dialog open is refused (no_dialog).
	StepDialog StepType = "Dialog"
	// StepScreenshot takes a picture of the page: its viewport, or the box of
	// one element (target), as PNG or JPEG, without focusing the tab. The image
	// goes to a BrowserScreenshot in the action's namespace that the step's
	// result names (never into the action's status).
	StepScreenshot StepType = "Screenshot"
	// StepUpload puts files into a file input (target: the <input type=file>,
	// its label, or an element holding exactly one file input), as the user's
	// choice in the file picker would: the input's files are set, then input
	// and change events. files name files in the directory the profile's admin
	// allows (BrowserProfile spec.uploadDirectory); a profile without one
	// refuses every Upload (upload_not_allowed).
	StepUpload StepType = "Upload"
)

// StepTypes lists every step type; the guard coverage test classifies each.
var StepTypes = []StepType{StepObserve, StepNavigate, StepClick, StepTypeText, StepPress, StepScroll, StepWait, StepBack, StepForward, StepReload, StepHover, StepSelect, StepFill,
	StepScreenshot, StepDialog, StepUpload}

// Mutating reports whether a step changes the page (and so is refused while the
// session waits for the user or has unacknowledged spawns). Observe, Scroll and
// Wait only read or move the viewport; Back, Forward and Reload load a document.
func (t StepType) Mutating() bool {
	switch t {
	case StepNavigate, StepClick, StepTypeText, StepPress, StepBack, StepForward, StepReload, StepSelect, StepFill, StepUpload:
		return true
	case StepDialog:
		// Answering lets the page's script go on, and it may change the page or spawn.
		return true
	}
	return false
}

// ActionPhase is where a BrowserAction is.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Refused;Failed
type ActionPhase string

const (
	// ActionPending: no agent has taken the action yet.
	ActionPending ActionPhase = "Pending"
	// ActionRunning: the agent is running the steps.
	ActionRunning ActionPhase = "Running"
	// ActionSucceeded: every step ran.
	ActionSucceeded ActionPhase = "Succeeded"
	// ActionRefused: a guard refused a step (status.reason, status.hint); the steps
	// before it ran, none after.
	ActionRefused ActionPhase = "Refused"
	// ActionFailed: a step failed in the browser (the page is gone, a timeout).
	ActionFailed ActionPhase = "Failed"
)

// Finished reports whether the phase is final.
func (p ActionPhase) Finished() bool {
	return p == ActionSucceeded || p == ActionRefused || p == ActionFailed
}

// ActionTarget is what a Click, Type, Hover, Select, Upload or Screenshot step (or a Fill step's field) aims at: exactly one of ref, text or
// a point (x and y with the observation they were read from).
// +kubebuilder:validation:XValidation:rule="(has(self.ref) ? 1 : 0) + (has(self.text) ? 1 : 0) + (has(self.x) || has(self.y) ? 1 : 0) == 1",message="a target is exactly one of ref (from an Observe step, e.g. {ref: o3.e12}), text (the element's visible text, e.g. {text: \"Send\"}) or a point with its observation (e.g. {x: 120, y: 340, observation: o3})"
// +kubebuilder:validation:XValidation:rule="has(self.x) == has(self.y)",message="a point target needs both x and y, for example {x: 120, y: 340, observation: o3}"
// +kubebuilder:validation:XValidation:rule="!has(self.x) || has(self.observation)",message="a point target names the observation its coordinates came from (stale_coordinates is checked against it), for example {x: 120, y: 340, observation: o3}"
type ActionTarget struct {
	// ref is an element ref from an earlier Observe step of the same session and
	// page, e.g. o3.e12 (o3.f2.e12: an element of a same-origin frame, f2;
	// o3.x1.e4: of a cross-origin or out-of-process frame, x1). A ref from
	// another document (the page navigated or re-loaded, or the frame
	// navigated) is refused (stale_ref), never retargeted.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^o[0-9]+\.(x[0-9]+\.)?(f[0-9]+\.)?e[0-9]+$`
	Ref string `json:"ref,omitempty"`
	// text is the visible text (or accessible name) of the element. More than one
	// visible match is refused (ambiguous_target) with the candidates' refs.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Text string `json:"text,omitempty"`
	// x is the horizontal viewport coordinate in CSS pixels.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	X *int32 `json:"x,omitempty"`
	// y is the vertical viewport coordinate in CSS pixels.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Y *int32 `json:"y,omitempty"`
	// observation is the Observe step (e.g. o3) a point was read from; a point is
	// refused (stale_coordinates) once the page scrolled, navigated or re-rendered
	// since.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^o[0-9]+$`
	Observation string `json:"observation,omitempty"`
}

// ActionStep is one step of a BrowserAction.
// +kubebuilder:validation:XValidation:rule="self.type != 'Navigate' || has(self.url)",message="a Navigate step needs url, for example {type: Navigate, url: \"https://example.com/form\"}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Click' || has(self.target)",message="a Click step needs a target, for example {type: Click, target: {ref: o3.e12}} or {type: Click, target: {text: \"Send\"}}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Hover' || has(self.target)",message="a Hover step needs a target, for example {type: Hover, target: {ref: o3.e7}} or {type: Hover, target: {text: \"Menu\"}}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Select' || (has(self.target) && has(self.text))",message="a Select step needs a target (the drop-down) and text (the option's label or value), for example {type: Select, target: {ref: o3.e5}, text: \"Canada\"}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Upload' || (has(self.target) && has(self.files))",message="an Upload step needs a target (the file input, or its label) and files (names in the profile's upload directory), for example {type: Upload, target: {ref: o3.e9}, files: [\"resume.pdf\"]}"
// +kubebuilder:validation:XValidation:rule="self.type == 'Upload' || !has(self.files)",message="files belong to an Upload step only, for example {type: Upload, target: {text: \"Attach\"}, files: [\"resume.pdf\"]}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Fill' || has(self.fields)",message="a Fill step needs fields, each a target and its text, for example {type: Fill, fields: [{target: {ref: o3.e4}, text: \"Ada\"}, {target: {text: \"Email\"}, text: \"ada@example.com\"}]}"
// +kubebuilder:validation:XValidation:rule="self.type == 'Fill' || !has(self.fields)",message="fields belong to a Fill step only; for one field use {type: Type, target: {ref: o3.e4}, text: \"Ada\"} or {type: Fill, fields: [{target: {ref: o3.e4}, text: \"Ada\"}]}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Type' || has(self.text)",message="a Type step needs text, for example {type: Type, target: {ref: o3.e4}, text: \"Ada Lovelace\"}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Press' || has(self.key)",message="a Press step needs key, for example {type: Press, key: Enter}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Scroll' || has(self.deltaX) || has(self.deltaY)",message="a Scroll step needs deltaY (or deltaX) in pixels, for example {type: Scroll, deltaY: 600}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Wait' || has(self.text) || has(self.duration)",message="a Wait step needs text to wait for or a duration, for example {type: Wait, text: \"Saved\"} or {type: Wait, duration: 2s}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Dialog' || has(self.answer)",message="a Dialog step needs answer, Accept or Dismiss, for example {type: Dialog, answer: Dismiss} or {type: Dialog, answer: Accept, text: \"Ada\"} (text answers a prompt)"
// +kubebuilder:validation:XValidation:rule="self.type == 'Dialog' || !has(self.answer)",message="answer belongs to a Dialog step only, for example {type: Dialog, answer: Accept}"
// +kubebuilder:validation:XValidation:rule="self.type != 'Dialog' || !has(self.text) || (has(self.answer) && self.answer == 'Accept')",message="a Dialog step's text is what a prompt is answered with, so it goes with answer Accept only, for example {type: Dialog, answer: Accept, text: \"Ada\"}; to cancel use {type: Dialog, answer: Dismiss}"
// +kubebuilder:validation:XValidation:rule="self.type == 'Screenshot' || (!has(self.format) && !has(self.quality))",message="format and quality belong to a Screenshot step only, for example {type: Screenshot, format: JPEG, quality: 70}"
// +kubebuilder:validation:XValidation:rule="!has(self.quality) || (has(self.format) && self.format == 'JPEG')",message="quality applies to a JPEG screenshot only (a PNG is lossless), for example {type: Screenshot, format: JPEG, quality: 70}"
// +kubebuilder:validation:XValidation:rule="self.type == 'Observe' || !has(self.outlineOffset)",message="outlineOffset pages through an Observe step's outline; only an Observe step takes it, for example {type: Observe, outlineOffset: 400} (an earlier observation's outline.nextOffset)"
type ActionStep struct {
	// type is Observe, Navigate, Click, Type, Press, Scroll, Wait, Back, Forward,
	// Reload, Hover, Select, Fill, Screenshot, Dialog or Upload.
	// +required
	Type StepType `json:"type,omitempty"`
	// url to load (Navigate): http, https or about:blank.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://') || self == 'about:blank'",message="url must be http(s) or about:blank, for example https://example.com/form"
	URL string `json:"url,omitempty"`
	// target is what Click, Type, Hover, Select and Upload aim at (Type without a target types
	// into the focused element), and the element a Screenshot takes (none: the
	// viewport).
	// +optional
	Target *ActionTarget `json:"target,omitempty"`
	// text to type (Type), to wait for (Wait), the option to choose (Select:
	// its visible label, else its value), or a prompt's answer (Dialog with
	// answer Accept; without it a prompt is accepted with its default).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Text string `json:"text,omitempty"`
	// key to press (Press): a key name such as Enter, Tab, Escape, Backspace,
	// ArrowDown, or one character.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Key string `json:"key,omitempty"`
	// deltaX scrolls right by this many CSS pixels (negative: left).
	// +optional
	// +kubebuilder:validation:Minimum=-100000
	// +kubebuilder:validation:Maximum=100000
	DeltaX *int32 `json:"deltaX,omitempty"`
	// deltaY scrolls down by this many CSS pixels (negative: up).
	// +optional
	// +kubebuilder:validation:Minimum=-100000
	// +kubebuilder:validation:Maximum=100000
	DeltaY *int32 `json:"deltaY,omitempty"`
	// duration to wait (Wait), at most 30s; with text, how long to wait for it
	// (default 10s).
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// outlineOffset (Observe) is the first line of the page's outline to return:
	// 0 (the default) starts at the top; an earlier observation's
	// outline.nextOffset reads the next chunk. The outline is read again from the
	// page as it is now, and its refs are the new observation's.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	OutlineOffset *int32 `json:"outlineOffset,omitempty"`
	// fields to fill (Fill), in order: each a target and the text that replaces
	// its content. Every target is checked (stale_ref, stale_coordinates,
	// ambiguous_target, target_not_found, not a text field) before any field is
	// typed into.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Fields []FillField `json:"fields,omitempty"`
	// files (Upload) name the files to put into the file input, in order: each
	// a path relative to the profile's spec.uploadDirectory (for example
	// "resume.pdf" or "2026/receipt.png"), never absolute and never leaving it
	// (no ".." segment; a symbolic link that points out of it is refused). More
	// than one needs an input that takes several (multiple). At most 10 files
	// and 10 MiB in all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:items:XValidation:rule="!self.startsWith('/') && !self.contains('\\\\') && self.split('/').all(s, s != '..' && s != '.' && s != '')",message="a file is a path relative to the profile's upload directory, without '..', '.', empty or backslash segments, for example \"resume.pdf\" or \"2026/receipt.png\""
	Files []string `json:"files,omitempty"`
	// answer (Dialog) is Accept (OK) or Dismiss (Cancel) for the JavaScript
	// dialog the page shows.
	// +optional
	Answer DialogAnswer `json:"answer,omitempty"`
	// format of a Screenshot step's image: PNG (the default; lossless) or JPEG
	// (smaller). A Screenshot with a target takes the box of that element only.
	// +optional
	Format ImageFormat `json:"format,omitempty"`
	// quality of a JPEG Screenshot, 1-100 (default 80). The image is at most
	// 768 KiB: a JPEG that would be larger is taken again at a lower quality,
	// then at a smaller scale (the result says which); a PNG that would be
	// larger is refused (screenshot_too_large) with the JPEG call as the hint.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Quality int32 `json:"quality,omitempty"`
}

// DialogAnswer is how a Dialog step answers the page's JavaScript dialog.
// +kubebuilder:validation:Enum=Accept;Dismiss
type DialogAnswer string

const (
	// DialogAccept presses OK (a prompt answers the step's text, else its default).
	DialogAccept DialogAnswer = "Accept"
	// DialogDismiss presses Cancel (a confirm returns false, a prompt null).
	DialogDismiss DialogAnswer = "Dismiss"
)

// OpenDialog is a JavaScript dialog a page shows, waiting for a Dialog step.
type OpenDialog struct {
	// type is alert, confirm or prompt.
	// +required
	// +kubebuilder:validation:Enum=alert;confirm;prompt
	Type string `json:"type,omitempty"`
	// message is the dialog's text, truncated.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// defaultPrompt is a prompt's default answer, truncated.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	DefaultPrompt string `json:"defaultPrompt,omitempty"`
}

// ImageFormat is the format of a screenshot.
// +kubebuilder:validation:Enum=PNG;JPEG
type ImageFormat string

const (
	// ImagePNG is a lossless PNG.
	ImagePNG ImageFormat = "PNG"
	// ImageJPEG is a JPEG (lossy, smaller).
	ImageJPEG ImageFormat = "JPEG"
)

// FillField is one field of a Fill step: the field and the text it gets.
// +kubebuilder:validation:XValidation:rule="has(self.target)",message="each field of a Fill names its target, for example {target: {ref: o3.e4}, text: \"Ada\"} or {target: {text: \"Email\"}, text: \"ada@example.com\"}"
type FillField struct {
	// target is the field: a ref, a text (its label or name) or a point, as for
	// a Type step. Every field needs one.
	// +optional
	Target *ActionTarget `json:"target,omitempty"`
	// text replaces the field's content.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Text string `json:"text,omitempty"`
}

// ActionWindowReference names the BrowserWindow an action drives.
type ActionWindowReference struct {
	// name of the BrowserWindow, in the action's namespace and of its session.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// BrowserActionSpec is one call of one or more steps against a window of a session.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BrowserAction is one call and cannot be changed; create a new BrowserAction for the next step"
type BrowserActionSpec struct {
	// sessionRef names the BrowserSession, in the action's namespace.
	// +required
	SessionRef SessionReference `json:"sessionRef,omitzero"`
	// thread is who calls: it must be the session's spec.thread
	// (session_owned_by_another_thread otherwise).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Thread string `json:"thread,omitempty"`
	// windowRef names the BrowserWindow of the session whose page the steps drive.
	// +required
	WindowRef ActionWindowReference `json:"windowRef,omitzero"`
	// profileName is optional; when set, it must be the session's profile
	// (profile_mismatch otherwise).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ProfileName string `json:"profileName,omitempty"`
	// steps run in order in one call; the first refused or failed step ends it.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Steps []ActionStep `json:"steps,omitempty"`
	// ttlSecondsAfterFinished removes the action this long after it finished.
	// +optional
	// +default=600
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ObservedElement is one visible interactive element of an observation.
type ObservedElement struct {
	// ref targets the element in a later Click or Type step of the same session, e.g. o3.e12.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Ref string `json:"ref,omitempty"`
	// role is the element's role: link, button, textbox, checkbox, combobox...
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Role string `json:"role,omitempty"`
	// name is the element's visible text or accessible name, truncated.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`
	// x is the left of the element's box in viewport CSS pixels.
	// +optional
	X int32 `json:"x"`
	// y is the top of the element's box in viewport CSS pixels.
	// +optional
	Y int32 `json:"y"`
	// width of the element's box in CSS pixels.
	// +optional
	Width int32 `json:"width"`
	// height of the element's box in CSS pixels.
	// +optional
	Height int32 `json:"height"`
}

// Observation is what an Observe step saw.
type Observation struct {
	// id names the observation (e.g. o3): point targets cite it, refs start with it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	ID string `json:"id,omitempty"`
	// url of the page.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	URL string `json:"url,omitempty"`
	// title of the page.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Title string `json:"title,omitempty"`
	// scrollX is the page's horizontal scroll offset in CSS pixels.
	// +optional
	ScrollX int32 `json:"scrollX"`
	// scrollY is the page's vertical scroll offset in CSS pixels.
	// +optional
	ScrollY int32 `json:"scrollY"`
	// elements are the visible interactive elements, in document order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	Elements []ObservedElement `json:"elements,omitempty"`
	// truncated is true when the page had more elements than listed.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
	// outline is the page's content (the whole document, not only the viewport),
	// one line per node. Only the action's last observation (status.observation)
	// carries it; the observations in status.steps list elements only.
	// +optional
	Outline *PageOutline `json:"outline,omitempty"`
}

// PageOutline is a chunk of a page's content as an accessibility-tree-like
// outline: one line per visible node, indented two spaces per level, of the form
//
//   - role "name" [ref=o3.e12] [level=2] [checked] [disabled]: "text"
//
// where the page's strings (name, text) are always double-quoted and escaped, so
// that page text can never read as a ref or a line of its own. Interactive nodes
// that can be targeted carry a ref of the same observation as its elements (also
// those outside the viewport: a ref target is scrolled into view). Hidden nodes
// (display:none, visibility:hidden, aria-hidden, zero-size) are left out.
type PageOutline struct {
	// text is the outline chunk: at most 32 KiB of whole lines.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Text string `json:"text,omitempty"`
	// offset is the outline line text starts at (the step's outlineOffset).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Offset int32 `json:"offset"`
	// lines is how many lines text holds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Lines int32 `json:"lines"`
	// truncated is true when the page's outline goes on past text.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
	// nextOffset is the outlineOffset of an Observe step that reads on (offset +
	// lines); it is set only when truncated.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NextOffset *int32 `json:"nextOffset,omitempty"`
}

// StepResult is what one step did.
type StepResult struct {
	// index of the step in spec.steps.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// type of the step.
	// +required
	Type StepType `json:"type,omitempty"`
	// phase is Succeeded, Refused or Failed.
	// +required
	Phase ActionPhase `json:"phase,omitempty"`
	// reason is the guard reason when Refused, or why it Failed.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// message says what happened.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`
	// observation is set by an Observe step.
	// +optional
	Observation *Observation `json:"observation,omitempty"`
	// candidates lists the matching elements when a text target was ambiguous.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Candidates []ObservedElement `json:"candidates,omitempty"`
	// dialog is the JavaScript dialog the step left open on the page (its
	// input made the page call alert, confirm or prompt): every later step on
	// the page but a Dialog step is refused (dialog_open) until one answers it.
	// +optional
	Dialog *OpenDialog `json:"dialog,omitempty"`
	// screenshot names the BrowserScreenshot a Screenshot step wrote, with its
	// format, size and dimensions.
	// +optional
	Screenshot *ScreenshotReference `json:"screenshot,omitempty"`
}

// ScreenshotReference is what a Screenshot step's result says of its image:
// the BrowserScreenshot that holds it (in the action's namespace), and enough
// to use it without reading it.
type ScreenshotReference struct {
	// name of the BrowserScreenshot, in the action's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// format of the image.
	// +required
	Format ImageFormat `json:"format,omitempty"`
	// width of the image in pixels.
	// +required
	// +kubebuilder:validation:Minimum=1
	Width int32 `json:"width,omitempty"`
	// height of the image in pixels.
	// +required
	// +kubebuilder:validation:Minimum=1
	Height int32 `json:"height,omitempty"`
	// sizeBytes is the image's size in bytes.
	// +required
	// +kubebuilder:validation:Minimum=1
	SizeBytes int32 `json:"sizeBytes,omitempty"`
	// quality is the JPEG quality the image was taken at (lower than asked when
	// the image had to fit the size bound).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Quality int32 `json:"quality,omitempty"`
	// scalePercent is the scale the image was taken at, in percent of the
	// page's CSS pixels (100 unless the image had to fit the size bound).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	ScalePercent int32 `json:"scalePercent,omitempty"`
}

// SpawnedWindow is a window a page spawned while the action ran.
type SpawnedWindow struct {
	// name of the BrowserWindow the agent created for the spawned page.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// url is the spawned page's first url, when the browser said. For a page
	// adopted before its first navigation committed (a window.open popup), the
	// agent waits up to a second for that url; a page still blank by then is
	// listed as about:blank, or with no url.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	URL string `json:"url,omitempty"`
}

// BrowserActionStatus is what the agent did.
type BrowserActionStatus struct {
	// phase is Pending, Running, Succeeded, Refused or Failed.
	// +optional
	Phase ActionPhase `json:"phase,omitempty"`
	// profileName is the profile whose agent took the action.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ProfileName string `json:"profileName,omitempty"`
	// reason is the stable snake_case reason of a refusal or failure (a guard
	// reason such as unacknowledged_spawns).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// message says what happened and why.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`
	// hint is the corrected call, ready to run.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Hint string `json:"hint,omitempty"`
	// warnings are guard warnings that did not refuse the action (no_keepalive).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=1024
	Warnings []string `json:"warnings,omitempty"`
	// steps are the results of the steps that ran, in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Steps []StepResult `json:"steps,omitempty"`
	// observation is the last observation the action made.
	// +optional
	Observation *Observation `json:"observation,omitempty"`
	// spawned are the windows the action's pages spawned while it ran; each needs
	// a disposition before the session's next mutating step.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Spawned []SpawnedWindow `json:"spawned,omitempty"`
	// startTime is when the agent started the action.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the action finished; the TTL counts from it.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// observedGeneration is the generation of the action that ran.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions summarise the phase for kstatus (kubectl wait, Flux, Argo CD):
	// Ready=True once Succeeded; Reconciling=True while Pending or Running;
	// Stalled=True (reason: the refusal's or failure's) once Refused or Failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// GetConditions returns the action's conditions.
func (a *BrowserAction) GetConditions() []metav1.Condition { return a.Status.Conditions }

// SetConditions replaces the action's conditions.
func (a *BrowserAction) SetConditions(c []metav1.Condition) { a.Status.Conditions = c }

// BrowserAction is one call of steps (observe, navigate, click, type, press,
// scroll, wait, back, forward, reload, hover, select, fill, screenshot, dialog) against a window of a session, admitted or refused by the guards
// and executed by the session's agent.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bact,categories=tabwarden
// +kubebuilder:printcolumn:name="Session",type=string,JSONPath=`.spec.sessionRef.name`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.spec.windowRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Thread",type=string,JSONPath=`.spec.thread`,priority=1
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.status.profileName`,priority=1
// +kubebuilder:printcolumn:name="Started",type=date,JSONPath=`.status.startTime`,priority=1
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`,priority=1
type BrowserAction struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the call.
	// +required
	Spec BrowserActionSpec `json:"spec,omitzero"`
	// status is what the agent did.
	// +optional
	Status BrowserActionStatus `json:"status,omitempty"`
}

// BrowserActionList is a list of BrowserActions.
// +kubebuilder:object:root=true
type BrowserActionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrowserAction `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BrowserAction{}, &BrowserActionList{})
}

// MaxUploadBytes bounds the files of one Upload step, together: their content
// travels in the step's one call into the page.
const MaxUploadBytes = 10 << 20
