package wire

import "encoding/json"

// The events tabwarden reads. ParseEvent returns one of these (a pointer) for
// an Event of a known method whose params decode, and nil otherwise.

// TargetCreated is Target.targetCreated.
type TargetCreated struct {
	TargetInfo TargetInfo `json:"targetInfo"`
}

// TargetInfoChanged is Target.targetInfoChanged.
type TargetInfoChanged struct {
	TargetInfo TargetInfo `json:"targetInfo"`
}

// TargetDestroyed is Target.targetDestroyed.
type TargetDestroyed struct {
	TargetID string `json:"targetId"`
}

// DetachedFromTarget is Target.detachedFromTarget: a session ended.
type DetachedFromTarget struct {
	SessionID string `json:"sessionId"`
	TargetID  string `json:"targetId,omitempty"`
}

// JavaScriptDialogOpening is Page.javascriptDialogOpening (on a session).
type JavaScriptDialogOpening struct {
	Type    string `json:"type"` // alert, confirm, prompt, beforeunload
	Message string `json:"message"`
	URL     string `json:"url,omitempty"`
	// DefaultPrompt is a prompt's default answer.
	DefaultPrompt string `json:"defaultPrompt,omitempty"`
}

// JavaScriptDialogClosed is Page.javascriptDialogClosed (on a session).
type JavaScriptDialogClosed struct {
	Result    bool   `json:"result"`
	UserInput string `json:"userInput,omitempty"`
}

// ServiceWorkerVersion is one version of a service worker.
type ServiceWorkerVersion struct {
	VersionID     string `json:"versionId"`
	ScriptURL     string `json:"scriptURL"`
	RunningStatus string `json:"runningStatus"` // stopped, starting, running, stopping
	Status        string `json:"status"`
}

// WorkerVersionUpdated is ServiceWorker.workerVersionUpdated (on a session
// with ServiceWorkerEnable).
type WorkerVersionUpdated struct {
	Versions []ServiceWorkerVersion `json:"versions"`
}

// RequestPaused is Fetch.requestPaused: a request waits for
// Fetch.continueRequest or Fetch.failRequest.
type RequestPaused struct {
	RequestID string `json:"requestId"`
	Request   struct {
		URL    string `json:"url"`
		Method string `json:"method"`
	} `json:"request"`
	FrameID      string `json:"frameId,omitempty"`
	ResourceType string `json:"resourceType,omitempty"`
}

// WindowOpen is Page.windowOpen (on a page's session): the page is about to
// open a new window or tab (window.open, a target=_blank link, a form), noopener
// ones too, with the user gesture that caused it.
type WindowOpen struct {
	URL            string   `json:"url"`
	WindowName     string   `json:"windowName"`
	WindowFeatures []string `json:"windowFeatures"`
	UserGesture    bool     `json:"userGesture"`
}

// FrameRequestedNavigation is Page.frameRequestedNavigation: a frame of the
// page asked for a navigation; Disposition newTab or newWindow is a link the
// page's input opens elsewhere (a Ctrl, Shift or middle click, or its keyboard
// form), which Chromium announces with no Page.windowOpen and creates with no
// opener.
type FrameRequestedNavigation struct {
	FrameID     string `json:"frameId"`
	Reason      string `json:"reason"`
	URL         string `json:"url"`
	Disposition string `json:"disposition"`
}

// AttachedToTarget is Target.attachedToTarget: on a page's session with
// auto-attach, a frame of another process (an OOPIF) of that page.
type AttachedToTarget struct {
	SessionID  string     `json:"sessionId"`
	TargetInfo TargetInfo `json:"targetInfo"`
}

var eventTypes = map[string]func() any{
	"Page.frameNavigated":                func() any { return &FrameNavigated{} },
	"Target.attachedToTarget":            func() any { return &AttachedToTarget{} },
	"Fetch.requestPaused":                func() any { return &RequestPaused{} },
	"Page.windowOpen":                    func() any { return &WindowOpen{} },
	"Page.frameRequestedNavigation":      func() any { return &FrameRequestedNavigation{} },
	"Target.targetCreated":               func() any { return &TargetCreated{} },
	"Target.targetInfoChanged":           func() any { return &TargetInfoChanged{} },
	"Target.targetDestroyed":             func() any { return &TargetDestroyed{} },
	"Target.detachedFromTarget":          func() any { return &DetachedFromTarget{} },
	"Page.javascriptDialogOpening":       func() any { return &JavaScriptDialogOpening{} },
	"Page.javascriptDialogClosed":        func() any { return &JavaScriptDialogClosed{} },
	"ServiceWorker.workerVersionUpdated": func() any { return &WorkerVersionUpdated{} },
}

// FrameNavigated is Page.frameNavigated: a frame committed a document.
type FrameNavigated struct {
	Frame Frame `json:"frame"`
}

// ParseEvent decodes e into its typed struct: *TargetCreated,
// *TargetInfoChanged, *TargetDestroyed, *DetachedFromTarget,
// *JavaScriptDialogOpening, *JavaScriptDialogClosed, *WorkerVersionUpdated,
// *RequestPaused or *FrameNavigated (among others);
// nil for any other
// method or params that do not decode.
func ParseEvent(e Event) any {
	mk, ok := eventTypes[e.Method]
	if !ok {
		return nil
	}
	v := mk()
	if json.Unmarshal(e.Params, v) != nil {
		return nil
	}
	return v
}
