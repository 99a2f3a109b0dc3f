package extension

import (
	"encoding/json"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Frame types, events and close codes of docs/extension-protocol.md.
const (
	frameHello     = "hello"
	frameChallenge = "challenge"
	frameAuth      = "auth"
	frameWelcome   = "welcome"
	framePing      = "ping"
	framePong      = "pong"
	frameEvent     = "event"
	frameResult    = "result"
	frameCommand   = "command"
	frameForget    = "forget"

	evTabCreated    = "tabCreated"
	evTabUpdated    = "tabUpdated"
	evTabRemoved    = "tabRemoved"
	evWindowCreated = "windowCreated"
	evWindowRemoved = "windowRemoved"

	// CloseUnauthorized closes a connection whose hello names a key the host does not
	// have (a newer pairing or `tabwarden unpair` revoked it), or whose proof is wrong.
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
	// Attributed is the act key an opener-less tab is attributed to (it appeared while
	// that act ran); tabCreated and observe carry it.
	Attributed string `json:"attributed,omitempty"`
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
	// Kind is opened, spawned or bound (browser.RecordKind); Parent the owner whose
	// page spawned the tab (spawned only).
	Kind   string `json:"kind"`
	Parent string `json:"parent,omitempty"`
}

// seam converts a wire record to the seam's.
func (r Record) seam() browser.Record {
	return browser.Record{Key: r.Owner, Page: id(r.TabID), Kind: browser.RecordKind(r.Kind), Parent: r.Parent}
}

type wireError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Candidates are the matches of an ambiguous act target; Document and Epoch the
	// page state their ids are refs of.
	Candidates []wireElement `json:"candidates,omitempty"`
	Document   string        `json:"document,omitempty"`
	Epoch      int64         `json:"epoch,omitempty"`
}

// inFrame is any frame from the extension. No frame carries a secret: hello has a
// nonce and the key id, auth an HMAC proof bound to this connection's nonces.
type inFrame struct {
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
	Nonce   string `json:"nonce,omitempty"`
	KeyID   string `json:"kid,omitempty"`
	Proof   string `json:"proof,omitempty"`

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

type challengeFrame struct {
	Type  string `json:"type"`
	Nonce string `json:"nonce"`
	Epoch int64  `json:"epoch"`
	Proof string `json:"proof"`
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

type adoptArgs struct {
	Owner  string `json:"owner"`
	TabID  int64  `json:"tabId"`
	Parent string `json:"parent"`
}

type tabResult struct {
	TabID         int64 `json:"tabId"`
	WindowID      int64 `json:"windowId"`
	CreatedWindow bool  `json:"createdWindow"`
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
type SessionInfo = browser.MonitorSession

// SessionWindow is one BrowserWindow of a session in the Session Monitor. TabID is
// the decimal tab id, as the driver carries it.
type SessionWindow = browser.MonitorWindow

// act: one curated step (docs/extension-protocol.md "act").

type actArgs struct {
	Key   string   `json:"key"`
	Owner string   `json:"owner"`
	TabID int64    `json:"tabId"`
	Step  wireStep `json:"step"`
	// Frames is the url policy's answers for the tab's cross-origin frames
	// (ActRequest.FrameAllowed); nil: no policy, every frame is reached.
	Frames *wireFramePolicy `json:"frames,omitempty"`
}

// wireFramePolicy: frame urls the policy allows and refuses. The extension
// reaches a frame only when its url is allowed; one in neither list makes the
// act answer frameCheck (nothing ran past the check).
type wireFramePolicy struct {
	Allowed []string `json:"allowed"`
	Refused []string `json:"refused"`
}

type wireStep struct {
	Kind        string      `json:"kind"`
	URL         string      `json:"url,omitempty"`
	Target      *wireTarget `json:"target,omitempty"`
	Text        string      `json:"text,omitempty"`
	Key         string      `json:"key,omitempty"`
	DeltaX      int         `json:"deltaX,omitempty"`
	DeltaY      int         `json:"deltaY,omitempty"`
	TimeoutMs   int64       `json:"timeoutMs,omitempty"`
	MaxElements int         `json:"maxElements,omitempty"`
	// OutlineOffset is observe's first outline node.
	OutlineOffset int         `json:"outlineOffset,omitempty"`
	Fields        []wireField `json:"fields,omitempty"`
	// Files are an upload's files (their data in base64, as encoding/json
	// writes a []byte).
	Files []wireFile `json:"files,omitempty"`
	// Accept answers a dialog step's dialog with OK (true) or Cancel.
	Accept *bool `json:"accept,omitempty"`
	// Format, Quality, Scale and MaxBytes: a screenshot's.
	Format   string  `json:"format,omitempty"`
	Quality  int     `json:"quality,omitempty"`
	Scale    float64 `json:"scale,omitempty"`
	MaxBytes int     `json:"maxBytes,omitempty"`
}

// wireFile is one file of an upload step.
type wireFile struct {
	Name         string `json:"name"`
	Type         string `json:"type,omitempty"`
	LastModified int64  `json:"lastModified,omitempty"`
	Data         []byte `json:"data"`
}

// wireField is one field of a fill step.
type wireField struct {
	Target *wireTarget `json:"target"`
	Text   string      `json:"text"`
}

type wireTarget struct {
	Ref      string  `json:"ref,omitempty"`
	Document string  `json:"document,omitempty"`
	Text     string  `json:"text,omitempty"`
	Selector string  `json:"selector,omitempty"`
	Point    bool    `json:"point,omitempty"`
	X        float64 `json:"x,omitempty"`
	Y        float64 `json:"y,omitempty"`
	Epoch    int64   `json:"epoch,omitempty"`
}

type wireElement struct {
	ID     string `json:"id"`
	Role   string `json:"role"`
	Name   string `json:"name"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

type wireObservation struct {
	Document  string        `json:"document"`
	Epoch     int64         `json:"epoch"`
	URL       string        `json:"url"`
	Title     string        `json:"title"`
	ScrollX   int           `json:"scrollX"`
	ScrollY   int           `json:"scrollY"`
	Elements  []wireElement `json:"elements"`
	Truncated bool          `json:"truncated"`
	// Outline is the page's content from node OutlineOffset on (page.js observe).
	Outline       []wireOutlineNode `json:"outline"`
	OutlineOffset int               `json:"outlineOffset"`
	OutlineMore   bool              `json:"outlineMore"`
}

type wireOutlineNode struct {
	Depth    int    `json:"depth"`
	Role     string `json:"role"`
	Name     string `json:"name"`
	Text     string `json:"text"`
	ID       string `json:"id"`
	Level    int    `json:"level"`
	Checked  bool   `json:"checked"`
	Disabled bool   `json:"disabled"`
}

type actResult struct {
	Observation *wireObservation `json:"observation,omitempty"`
	// Spawns counts the Page.windowOpen events the tab fired while the step
	// ran on its debugger session; absent for a step run without one (navigate).
	Spawns *int `json:"spawns,omitempty"`
	// Dialog is the JavaScript dialog the step's input made the page open,
	// left open (and the tab's debugger session kept) for a dialog step.
	Dialog *browser.Dialog `json:"dialog,omitempty"`
	// Screenshot is a screenshot step's image (base64 in JSON), or only its
	// size when it is larger than the step's maxBytes.
	Screenshot *wireScreenshot `json:"screenshot,omitempty"`
	// FrameCheck: the step reached frames whose urls the act's Frames does
	// not answer for; nothing ran past that check.
	FrameCheck []string `json:"frameCheck,omitempty"`
}

type wireScreenshot struct {
	Format string `json:"format"`
	Size   int    `json:"size"`
	Data   []byte `json:"data,omitempty"`
}
