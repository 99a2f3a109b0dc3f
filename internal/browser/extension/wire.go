package extension

import "encoding/json"

// Frame types, events and close codes of docs/extension-protocol.md.
const (
	frameHello   = "hello"
	frameWelcome = "welcome"
	framePing    = "ping"
	framePong    = "pong"
	frameEvent   = "event"
	frameResult  = "result"
	frameCommand = "command"

	evTabCreated    = "tabCreated"
	evTabUpdated    = "tabUpdated"
	evTabRemoved    = "tabRemoved"
	evWindowCreated = "windowCreated"
	evWindowRemoved = "windowRemoved"

	// CloseUnauthorized closes a connection whose hello is missing, late or carries a
	// token the host does not know (also when a newer pairing revoked it).
	CloseUnauthorized = 4401
	// CloseAlreadyConnected refuses a second simultaneous connection.
	CloseAlreadyConnected = 4409
)

// wireTab is the protocol's Tab.
type wireTab struct {
	ID          int64  `json:"id"`
	WindowID    int64  `json:"windowId"`
	OpenerTabID *int64 `json:"openerTabId,omitempty"`
	URL         string `json:"url"`
	Title       string `json:"title"`
	Active      bool   `json:"active"`
	Index       int    `json:"index"`
}

// wireWindow is the protocol's Window.
type wireWindow struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	Focused bool   `json:"focused"`
}

// Record is one ownership record the extension keeps in chrome.storage.session.
type Record struct {
	Owner         string `json:"owner"`
	TabID         int64  `json:"tabId"`
	WindowID      int64  `json:"windowId"`
	CreatedWindow bool   `json:"createdWindow"`
}

type wireError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// inFrame is any frame from the extension. It may carry the token (hello): never
// log it or format it.
type inFrame struct {
	Type    string `json:"type"`
	Token   string `json:"token,omitempty"`
	Version string `json:"version,omitempty"`

	Event    string      `json:"event,omitempty"`
	Tab      *wireTab    `json:"tab,omitempty"`
	Owner    string      `json:"owner,omitempty"`
	TabID    *int64      `json:"tabId,omitempty"`
	WindowID *int64      `json:"windowId,omitempty"`
	Window   *wireWindow `json:"window,omitempty"`

	ID     string          `json:"id,omitempty"`
	OK     bool            `json:"ok,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

type welcomeFrame struct {
	Type  string `json:"type"`
	Epoch int64  `json:"epoch"`
}

type commandFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Op   string `json:"op"`
	Args any    `json:"args"`
}

// Command args and results.

type openArgs struct {
	Owner     string `json:"owner"`
	URL       string `json:"url"`
	WindowID  *int64 `json:"windowId,omitempty"`
	NewWindow bool   `json:"newWindow,omitempty"`
}

type openResult struct {
	TabID         int64 `json:"tabId"`
	WindowID      int64 `json:"windowId"`
	CreatedWindow bool  `json:"createdWindow"`
}

type ownerTabArgs struct {
	Owner string `json:"owner"`
	TabID int64  `json:"tabId"`
}

type closeResult struct {
	Closed bool `json:"closed"`
}

type observeResult struct {
	Windows []wireWindow `json:"windows"`
	Tabs    []wireTab    `json:"tabs"`
}

// SessionInfo is one session as the popup's Session Monitor shows it (the
// `sessions` command).
type SessionInfo struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Thread    string          `json:"thread"`
	Purpose   string          `json:"purpose"`
	Phase     string          `json:"phase"`
	Windows   []SessionWindow `json:"windows"`
}

// SessionWindow is one BrowserWindow of a session in the Session Monitor. TabID is
// the decimal tab id, as the driver carries it.
type SessionWindow struct {
	Name        string `json:"name"`
	TabID       string `json:"tabId"`
	Source      string `json:"source"`
	Disposition string `json:"disposition"`
}
