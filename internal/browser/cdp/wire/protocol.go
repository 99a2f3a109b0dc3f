package wire

import "encoding/json"

// The commands tabwarden sends, one struct per method, fields as in the
// protocol (https://chromedevtools.github.io/devtools-protocol/). A zero
// optional field is not sent.

// --- Browser ---

// GetVersion is Browser.getVersion.
type GetVersion struct{}

// GetVersionResult is the reply of Browser.getVersion.
type GetVersionResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	Product         string `json:"product"` // e.g. "Chrome/156.0.8078.114"
	UserAgent       string `json:"userAgent"`
}

func (GetVersion) Method() string           { return "Browser.getVersion" }
func (GetVersion) result() GetVersionResult { return GetVersionResult{} }

// GetWindowForTarget is Browser.getWindowForTarget.
type GetWindowForTarget struct {
	TargetID string `json:"targetId"`
}

// GetWindowForTargetResult is the reply of Browser.getWindowForTarget.
type GetWindowForTargetResult struct {
	WindowID int64 `json:"windowId"`
}

func (GetWindowForTarget) Method() string { return "Browser.getWindowForTarget" }
func (GetWindowForTarget) result() GetWindowForTargetResult {
	return GetWindowForTargetResult{}
}

// --- Target ---

// TargetInfo describes one target.
type TargetInfo struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	Title    string `json:"title"`
	URL      string `json:"url"`
	OpenerID string `json:"openerId,omitempty"`
	// OpenerFrameID is the frame that opened the target (Chromium reports it
	// for noopener opens too, where OpenerID is empty).
	OpenerFrameID    string `json:"openerFrameId,omitempty"`
	BrowserContextID string `json:"browserContextId,omitempty"`
	Subtype          string `json:"subtype,omitempty"`
	// ParentFrameID is, for an iframe target (an out-of-process frame), the
	// frame that holds it.
	ParentFrameID string `json:"parentFrameId,omitempty"`
	// Attached: some debugger client (a DevTools session, an extension's
	// chrome.debugger) is attached to the target now.
	Attached bool `json:"attached,omitempty"`
}

// SetDiscoverTargets is Target.setDiscoverTargets: with Discover, a
// TargetCreated for every existing target arrives before the reply, and
// TargetCreated, TargetInfoChanged and TargetDestroyed follow.
type SetDiscoverTargets struct {
	Discover bool `json:"discover"`
}

func (SetDiscoverTargets) Method() string { return "Target.setDiscoverTargets" }
func (SetDiscoverTargets) result() Empty  { return Empty{} }

// GetTargets is Target.getTargets.
type GetTargets struct{}

// GetTargetsResult is the reply of Target.getTargets.
type GetTargetsResult struct {
	TargetInfos []TargetInfo `json:"targetInfos"`
}

func (GetTargets) Method() string           { return "Target.getTargets" }
func (GetTargets) result() GetTargetsResult { return GetTargetsResult{} }

// CreateTarget is Target.createTarget. Without Background the page opens in
// the foreground (as a user's Ctrl+T or Ctrl+N does).
type CreateTarget struct {
	URL              string `json:"url"`
	Background       bool   `json:"background,omitempty"`
	NewWindow        bool   `json:"newWindow,omitempty"`
	BrowserContextID string `json:"browserContextId,omitempty"`
}

// CreateTargetResult is the reply of Target.createTarget.
type CreateTargetResult struct {
	TargetID string `json:"targetId"`
}

func (CreateTarget) Method() string             { return "Target.createTarget" }
func (CreateTarget) result() CreateTargetResult { return CreateTargetResult{} }

// CloseTarget is Target.closeTarget; the page is gone at TargetDestroyed.
type CloseTarget struct {
	TargetID string `json:"targetId"`
}

func (CloseTarget) Method() string { return "Target.closeTarget" }
func (CloseTarget) result() Empty  { return Empty{} }

// ActivateTarget is Target.activateTarget: the page comes to the front. The
// driver never sends it (it never focuses); tests do, as the user's hand.
type ActivateTarget struct {
	TargetID string `json:"targetId"`
}

func (ActivateTarget) Method() string { return "Target.activateTarget" }
func (ActivateTarget) result() Empty  { return Empty{} }

// AttachToTarget is Target.attachToTarget.
type AttachToTarget struct {
	TargetID string `json:"targetId"`
	Flatten  bool   `json:"flatten"`
}

// AttachToTargetResult is the reply of Target.attachToTarget.
type AttachToTargetResult struct {
	SessionID string `json:"sessionId"`
}

func (AttachToTarget) Method() string               { return "Target.attachToTarget" }
func (AttachToTarget) result() AttachToTargetResult { return AttachToTargetResult{} }

// DetachFromTarget is Target.detachFromTarget.
type DetachFromTarget struct {
	SessionID string `json:"sessionId"`
}

func (DetachFromTarget) Method() string { return "Target.detachFromTarget" }
func (DetachFromTarget) result() Empty  { return Empty{} }

// GetBrowserContexts is Target.getBrowserContexts.
type GetBrowserContexts struct{}

// GetBrowserContextsResult is the reply of Target.getBrowserContexts: the
// contexts other than the default one.
type GetBrowserContextsResult struct {
	BrowserContextIDs []string `json:"browserContextIds"`
}

func (GetBrowserContexts) Method() string { return "Target.getBrowserContexts" }
func (GetBrowserContexts) result() GetBrowserContextsResult {
	return GetBrowserContextsResult{}
}

// CreateBrowserContext is Target.createBrowserContext.
type CreateBrowserContext struct {
	DisposeOnDetach bool `json:"disposeOnDetach"`
}

// CreateBrowserContextResult is the reply of Target.createBrowserContext.
type CreateBrowserContextResult struct {
	BrowserContextID string `json:"browserContextId"`
}

func (CreateBrowserContext) Method() string { return "Target.createBrowserContext" }
func (CreateBrowserContext) result() CreateBrowserContextResult {
	return CreateBrowserContextResult{}
}

// DisposeBrowserContext is Target.disposeBrowserContext.
type DisposeBrowserContext struct {
	BrowserContextID string `json:"browserContextId"`
}

func (DisposeBrowserContext) Method() string { return "Target.disposeBrowserContext" }
func (DisposeBrowserContext) result() Empty  { return Empty{} }

// --- Page ---

// PageEnable is Page.enable (JavaScriptDialogOpening and …Closed follow).
type PageEnable struct{}

func (PageEnable) Method() string { return "Page.enable" }
func (PageEnable) result() Empty  { return Empty{} }

// Navigate is Page.navigate.
type Navigate struct {
	URL string `json:"url"`
}

// NavigateResult is the reply of Page.navigate: no LoaderID for a same-document
// navigation; ErrorText when the load failed.
type NavigateResult struct {
	FrameID   string `json:"frameId"`
	LoaderID  string `json:"loaderId"`
	ErrorText string `json:"errorText"`
}

func (Navigate) Method() string         { return "Page.navigate" }
func (Navigate) result() NavigateResult { return NavigateResult{} }

// HandleJavaScriptDialog is Page.handleJavaScriptDialog.
type HandleJavaScriptDialog struct {
	Accept bool `json:"accept"`
	// PromptText answers a prompt (accept only).
	PromptText string `json:"promptText,omitempty"`
}

func (HandleJavaScriptDialog) Method() string { return "Page.handleJavaScriptDialog" }
func (HandleJavaScriptDialog) result() Empty  { return Empty{} }

// PageCrash is Page.crash: the page's renderer crashes (tests: a crashed tab).
type PageCrash struct{}

func (PageCrash) Method() string { return "Page.crash" }
func (PageCrash) result() Empty  { return Empty{} }

// GetFrameTree is Page.getFrameTree.
type GetFrameTree struct{}

// Frame is a frame of a page.
type Frame struct {
	ID       string `json:"id"`
	ParentID string `json:"parentId,omitempty"`
	LoaderID string `json:"loaderId"`
	URL      string `json:"url"`
}

// FrameTree is a frame and the frames in it that share its process (a frame
// of another process, an OOPIF, is a target of its own).
type FrameTree struct {
	Frame       Frame       `json:"frame"`
	ChildFrames []FrameTree `json:"childFrames,omitempty"`
}

// GetFrameTreeResult is the reply of Page.getFrameTree.
type GetFrameTreeResult struct {
	FrameTree FrameTree `json:"frameTree"`
}

func (GetFrameTree) Method() string             { return "Page.getFrameTree" }
func (GetFrameTree) result() GetFrameTreeResult { return GetFrameTreeResult{} }

// CreateIsolatedWorld is Page.createIsolatedWorld.
type CreateIsolatedWorld struct {
	FrameID   string `json:"frameId"`
	WorldName string `json:"worldName"`
}

// CreateIsolatedWorldResult is the reply of Page.createIsolatedWorld.
type CreateIsolatedWorldResult struct {
	ExecutionContextID int64 `json:"executionContextId"`
}

func (CreateIsolatedWorld) Method() string { return "Page.createIsolatedWorld" }
func (CreateIsolatedWorld) result() CreateIsolatedWorldResult {
	return CreateIsolatedWorldResult{}
}

// CaptureScreenshot is Page.captureScreenshot (tests: the popup's picture in
// docs/). Clip, in CSS pixels, captures that rectangle of the page.
type CaptureScreenshot struct {
	Format string `json:"format,omitempty"`
	// Quality is a JPEG's, 0-100 (0: Chromium's default).
	Quality               int       `json:"quality,omitempty"`
	Clip                  *Viewport `json:"clip,omitempty"`
	CaptureBeyondViewport bool      `json:"captureBeyondViewport,omitempty"`
	// FromSurface false captures the view instead of the surface (Chromium's default: true).
	FromSurface *bool `json:"fromSurface,omitempty"`
}

// Viewport is a rectangle of the page, in CSS pixels, at Scale.
type Viewport struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Scale  float64 `json:"scale"`
}

// CaptureScreenshotResult is the reply of Page.captureScreenshot: the image,
// base64 encoded.
type CaptureScreenshotResult struct {
	Data string `json:"data"`
}

func (CaptureScreenshot) Method() string { return "Page.captureScreenshot" }
func (CaptureScreenshot) result() CaptureScreenshotResult {
	return CaptureScreenshotResult{}
}

// --- Emulation ---

// SetDeviceMetricsOverride is Emulation.setDeviceMetricsOverride: the page is
// laid out and drawn at Width x Height CSS pixels (tests: a picture of a whole
// page).
type SetDeviceMetricsOverride struct {
	Width             int     `json:"width"`
	Height            int     `json:"height"`
	DeviceScaleFactor float64 `json:"deviceScaleFactor"`
	Mobile            bool    `json:"mobile"`
}

func (SetDeviceMetricsOverride) Method() string { return "Emulation.setDeviceMetricsOverride" }
func (SetDeviceMetricsOverride) result() Empty  { return Empty{} }

// ClearDeviceMetricsOverride is Emulation.clearDeviceMetricsOverride.
type ClearDeviceMetricsOverride struct{}

func (ClearDeviceMetricsOverride) Method() string { return "Emulation.clearDeviceMetricsOverride" }
func (ClearDeviceMetricsOverride) result() Empty  { return Empty{} }

// --- Runtime ---

// Evaluate is Runtime.evaluate. ContextID 0 is the page's main world.
type Evaluate struct {
	Expression    string `json:"expression"`
	ContextID     int64  `json:"contextId,omitempty"`
	ReturnByValue bool   `json:"returnByValue"`
	Silent        bool   `json:"silent,omitempty"`
	// AwaitPromise: when the expression is a promise, the reply waits for it
	// and carries its value.
	AwaitPromise bool `json:"awaitPromise,omitempty"`
	// UserGesture runs the expression as if the user acted (sticky activation).
	UserGesture bool `json:"userGesture,omitempty"`
	// ObjectGroup names the group a result returned by reference (not by
	// value) belongs to, for Runtime.releaseObjectGroup.
	ObjectGroup string `json:"objectGroup,omitempty"`
}

// RemoteObject is a value returned by Runtime (by value: Value holds its JSON).
type RemoteObject struct {
	Type        string          `json:"type"`
	Value       json.RawMessage `json:"value,omitempty"`
	Description string          `json:"description,omitempty"`
	// ObjectID names the object when it was returned by reference.
	ObjectID string `json:"objectId,omitempty"`
}

// ExceptionDetails says what a script threw.
type ExceptionDetails struct {
	Text      string       `json:"text"`
	Exception RemoteObject `json:"exception"`
}

// EvaluateResult is the reply of Runtime.evaluate.
type EvaluateResult struct {
	Result           RemoteObject      `json:"result"`
	ExceptionDetails *ExceptionDetails `json:"exceptionDetails,omitempty"`
}

func (Evaluate) Method() string         { return "Runtime.evaluate" }
func (Evaluate) result() EvaluateResult { return EvaluateResult{} }

// RuntimeEnable is Runtime.enable.
type RuntimeEnable struct{}

func (RuntimeEnable) Method() string { return "Runtime.enable" }
func (RuntimeEnable) result() Empty  { return Empty{} }

// RunIfWaitingForDebugger is Runtime.runIfWaitingForDebugger: a target paused
// at start for its debugger runs on.
type RunIfWaitingForDebugger struct{}

func (RunIfWaitingForDebugger) Method() string { return "Runtime.runIfWaitingForDebugger" }
func (RunIfWaitingForDebugger) result() Empty  { return Empty{} }

// --- ServiceWorker (the extension's end-to-end tests) ---

// ServiceWorkerEnable is ServiceWorker.enable (on a page session):
// WorkerVersionUpdated follows for every worker of the browser context.
type ServiceWorkerEnable struct{}

func (ServiceWorkerEnable) Method() string { return "ServiceWorker.enable" }
func (ServiceWorkerEnable) result() Empty  { return Empty{} }

// ServiceWorkerDisable is ServiceWorker.disable.
type ServiceWorkerDisable struct{}

func (ServiceWorkerDisable) Method() string { return "ServiceWorker.disable" }
func (ServiceWorkerDisable) result() Empty  { return Empty{} }

// StartWorker is ServiceWorker.startWorker: the worker of the scope starts.
type StartWorker struct {
	ScopeURL string `json:"scopeURL"`
}

func (StartWorker) Method() string { return "ServiceWorker.startWorker" }
func (StartWorker) result() Empty  { return Empty{} }

// StopWorker is ServiceWorker.stopWorker: the running version stops, as when
// the browser puts an idle worker to sleep.
type StopWorker struct {
	VersionID string `json:"versionId"`
}

func (StopWorker) Method() string { return "ServiceWorker.stopWorker" }
func (StopWorker) result() Empty  { return Empty{} }

// --- Input ---

// Mouse event types and buttons of DispatchMouseEvent.
const (
	MouseMoved    = "mouseMoved"
	MousePressed  = "mousePressed"
	MouseReleased = "mouseReleased"
	ButtonLeft    = "left"
	ButtonMiddle  = "middle"
)

// DispatchMouseEvent is Input.dispatchMouseEvent. Buttons is the bit mask of
// the buttons held after the event (1 left, 4 middle); Button is not sent on
// a MouseMoved with no button.
type DispatchMouseEvent struct {
	Type       string  `json:"type"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
	Button     string  `json:"button,omitempty"`
	Buttons    int     `json:"buttons"`
	ClickCount int     `json:"clickCount"`
}

func (DispatchMouseEvent) Method() string { return "Input.dispatchMouseEvent" }
func (DispatchMouseEvent) result() Empty  { return Empty{} }

// DispatchKeyEvent is Input.dispatchKeyEvent (Type rawKeyDown, keyDown with
// Text, or keyUp).
type DispatchKeyEvent struct {
	Type                  string `json:"type"`
	Key                   string `json:"key"`
	Code                  string `json:"code"`
	WindowsVirtualKeyCode int    `json:"windowsVirtualKeyCode"`
	NativeVirtualKeyCode  int    `json:"nativeVirtualKeyCode"`
	Modifiers             int    `json:"modifiers"`
	Text                  string `json:"text,omitempty"`
	UnmodifiedText        string `json:"unmodifiedText,omitempty"`
	// Commands are editing commands the key runs (e.g. "selectAll" with Ctrl+A).
	Commands []string `json:"commands,omitempty"`
}

func (DispatchKeyEvent) Method() string { return "Input.dispatchKeyEvent" }
func (DispatchKeyEvent) result() Empty  { return Empty{} }

// InsertText is Input.insertText.
type InsertText struct {
	Text string `json:"text"`
}

func (InsertText) Method() string { return "Input.insertText" }
func (InsertText) result() Empty  { return Empty{} }

// --- DOM (the benchmark's baseline click) ---

// GetDocument is DOM.getDocument.
type GetDocument struct {
	Depth int `json:"depth"`
}

// Node is a DOM node.
type Node struct {
	NodeID int64 `json:"nodeId"`
}

// GetDocumentResult is the reply of DOM.getDocument.
type GetDocumentResult struct {
	Root Node `json:"root"`
}

func (GetDocument) Method() string            { return "DOM.getDocument" }
func (GetDocument) result() GetDocumentResult { return GetDocumentResult{} }

// QuerySelector is DOM.querySelector.
type QuerySelector struct {
	NodeID   int64  `json:"nodeId"`
	Selector string `json:"selector"`
}

// QuerySelectorResult is the reply of DOM.querySelector: NodeID 0 when nothing matched.
type QuerySelectorResult struct {
	NodeID int64 `json:"nodeId"`
}

func (QuerySelector) Method() string              { return "DOM.querySelector" }
func (QuerySelector) result() QuerySelectorResult { return QuerySelectorResult{} }

// GetBoxModel is DOM.getBoxModel.
type GetBoxModel struct {
	NodeID int64 `json:"nodeId"`
}

// GetBoxModelResult is the reply of DOM.getBoxModel: Content is the content
// box's quad (x1, y1, … x4, y4).
type GetBoxModelResult struct {
	Model struct {
		Content []float64 `json:"content"`
	} `json:"model"`
}

func (GetBoxModel) Method() string            { return "DOM.getBoxModel" }
func (GetBoxModel) result() GetBoxModelResult { return GetBoxModelResult{} }

// --- Fetch ---

// RequestPattern is Fetch.RequestPattern: which requests to pause, and at which
// stage ("Request" before it is sent, "Response" when headers arrived).
type RequestPattern struct {
	URLPattern   string `json:"urlPattern,omitempty"`
	ResourceType string `json:"resourceType,omitempty"`
	RequestStage string `json:"requestStage,omitempty"`
}

// FetchEnable is Fetch.enable. Sent on the browser session (""), it pauses the
// matching requests of every target of the browser: pages, frames, workers.
type FetchEnable struct {
	Patterns []RequestPattern `json:"patterns,omitempty"`
}

func (FetchEnable) Method() string { return "Fetch.enable" }
func (FetchEnable) result() Empty  { return Empty{} }

// FetchContinueRequest is Fetch.continueRequest: a paused request goes on unchanged.
type FetchContinueRequest struct {
	RequestID string `json:"requestId"`
}

func (FetchContinueRequest) Method() string { return "Fetch.continueRequest" }
func (FetchContinueRequest) result() Empty  { return Empty{} }

// FetchFailRequest is Fetch.failRequest: a paused request fails with
// ErrorReason (Network.ErrorReason, e.g. "BlockedByClient").
type FetchFailRequest struct {
	RequestID   string `json:"requestId"`
	ErrorReason string `json:"errorReason"`
}

func (FetchFailRequest) Method() string { return "Fetch.failRequest" }
func (FetchFailRequest) result() Empty  { return Empty{} }

// SetAutoAttach is Target.setAutoAttach on a page's session: the browser
// attaches the driver to the targets of that page that Filter lets through
// (iframe: its out-of-process frames) as flattened child sessions, announced
// by Target.attachedToTarget on the page's session.
type SetAutoAttach struct {
	AutoAttach             bool           `json:"autoAttach"`
	WaitForDebuggerOnStart bool           `json:"waitForDebuggerOnStart"`
	Flatten                bool           `json:"flatten"`
	Filter                 []TargetFilter `json:"filter,omitempty"`
}

// TargetFilter is one entry of a target filter.
type TargetFilter struct {
	Type    string `json:"type,omitempty"`
	Exclude bool   `json:"exclude,omitempty"`
}

func (SetAutoAttach) Method() string { return "Target.setAutoAttach" }
func (SetAutoAttach) result() Empty  { return Empty{} }

// GetFrameOwner is DOM.getFrameOwner: the <iframe> element that holds a frame,
// asked of the session of the frame's parent.
type GetFrameOwner struct {
	FrameID string `json:"frameId"`
}

// GetFrameOwnerResult is the reply of DOM.getFrameOwner.
type GetFrameOwnerResult struct {
	BackendNodeID int64 `json:"backendNodeId"`
}

func (GetFrameOwner) Method() string              { return "DOM.getFrameOwner" }
func (GetFrameOwner) result() GetFrameOwnerResult { return GetFrameOwnerResult{} }

// ResolveNode is DOM.resolveNode: a node as an object of an execution context
// (tabwarden's isolated world), released with its ObjectGroup.
type ResolveNode struct {
	BackendNodeID      int64  `json:"backendNodeId"`
	ExecutionContextID int64  `json:"executionContextId,omitempty"`
	ObjectGroup        string `json:"objectGroup,omitempty"`
}

// ResolveNodeResult is the reply of DOM.resolveNode.
type ResolveNodeResult struct {
	Object struct {
		ObjectID string `json:"objectId"`
	} `json:"object"`
}

func (ResolveNode) Method() string            { return "DOM.resolveNode" }
func (ResolveNode) result() ResolveNodeResult { return ResolveNodeResult{} }

// CallFunctionOn is Runtime.callFunctionOn: a function called with an object
// as its receiver (this) and JSON arguments, in the object's context.
type CallFunctionOn struct {
	FunctionDeclaration string         `json:"functionDeclaration"`
	ObjectID            string         `json:"objectId"`
	Arguments           []CallArgument `json:"arguments,omitempty"`
	ReturnByValue       bool           `json:"returnByValue"`
	Silent              bool           `json:"silent,omitempty"`
}

// CallArgument is one argument of Runtime.callFunctionOn: by value (JSON), or
// an object by its id (which must belong to the called object's context).
type CallArgument struct {
	Value    json.RawMessage `json:"value,omitempty"`
	ObjectID string          `json:"objectId,omitempty"`
}

func (CallFunctionOn) Method() string         { return "Runtime.callFunctionOn" }
func (CallFunctionOn) result() EvaluateResult { return EvaluateResult{} }

// ReleaseObjectGroup is Runtime.releaseObjectGroup.
type ReleaseObjectGroup struct {
	ObjectGroup string `json:"objectGroup"`
}

func (ReleaseObjectGroup) Method() string { return "Runtime.releaseObjectGroup" }
func (ReleaseObjectGroup) result() Empty  { return Empty{} }

// GetNodeForLocation is DOM.getNodeForLocation: the browser's own hit test at
// a point of the session's viewport (it stops at a frame of another process:
// the <iframe> element).
type GetNodeForLocation struct {
	X                       int  `json:"x"`
	Y                       int  `json:"y"`
	IgnorePointerEventsNone bool `json:"ignorePointerEventsNone,omitempty"`
}

// GetNodeForLocationResult is the reply of DOM.getNodeForLocation.
type GetNodeForLocationResult struct {
	BackendNodeID int64  `json:"backendNodeId"`
	FrameID       string `json:"frameId"`
}

func (GetNodeForLocation) Method() string                   { return "DOM.getNodeForLocation" }
func (GetNodeForLocation) result() GetNodeForLocationResult { return GetNodeForLocationResult{} }
