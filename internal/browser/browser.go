// Package browser is the seam between the agent and one browser profile: observe
// its windows and pages, open a page, close a page, and a stream of events. Drivers
// (cdp, extension, fake) live behind it, like container runtimes behind the CRI.
//
// Every call is idempotent: opening with a key that already has a live page
// returns that page; closing a page that is already gone succeeds. Nothing here
// ever focuses a window or tab.
//
// Authority over a page comes from what the driver observed itself, never from
// what a caller claims. Every driver keeps a ledger of Records, one per page at
// most: pages it opened (recorded as soon as the browser answers the create, before
// Open returns; the create is marked beforehand so that the new page is never
// mistaken for a spawn or attributed to an action; the cdp driver also writes an
// intent before the create, so that a driver killed in between adopts the page it
// created instead of opening another), pages it saw spawned from a recorded page (or attributed to a running
// Act) and adopted, and tabs bound for use (never closed). Close, Act and Adopt
// check the ledger, so a bug or a forged object above the seam still cannot close
// or drive a page tabwarden does not own. The ledger survives the agent's restart
// (cdp: a state file; extension: chrome.storage.session; fake: the fake browser).
package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Page is one tab (a page target) as the browser reports it.
type Page struct {
	// ID is the driver's stable id of the page: a CDP target id or a Chrome tab id.
	ID string
	// WindowID is the browser window holding the page.
	WindowID string
	// OpenerID is the page that opened this one, when the browser says so.
	OpenerID string
	// URL and Title as last reported. A freshly spawned page may have no URL yet.
	URL   string
	Title string
	// Popup is true when the page lives in a standalone popup window.
	Popup bool
	// Context is the browser context (CDP) the page lives in; empty for the default.
	Context string
	// Misplaced is set by Open only, when a background tab asked for in
	// OpenRequest.WindowID landed in another window: why the driver could not
	// place it there.
	Misplaced string
	// Attributed names the key of an operation that was running when the page
	// appeared without an opener; the agent adopts it into that operation's session.
	Attributed string
}

// Window is one browser window.
type Window struct {
	ID    string
	Popup bool
}

// Snapshot is everything the driver sees of the profile at one moment.
type Snapshot struct {
	// Epoch counts connections to the browser; ids may change across epochs for
	// drivers whose ids are connection-scoped.
	Epoch   int64
	Version string
	Windows []Window
	Pages   []Page
	// Records is the driver's ledger at the same moment.
	Records []Record
}

// RecordKind says how a page came to be recorded under its key.
type RecordKind string

const (
	// RecordOpened: the driver created the page for the key (Open).
	RecordOpened RecordKind = "opened"
	// RecordSpawned: the driver saw the page spawned from a page recorded under
	// Parent, or attributed to an Act whose key is Parent, and adopted it.
	RecordSpawned RecordKind = "spawned"
	// RecordBound: an existing tab used under the key; it is never closed.
	RecordBound RecordKind = "bound"
)

// Record is the driver's proof of one page's provenance. A page has at most one.
type Record struct {
	// Key is the owner: the BrowserWindow's uid.
	Key string `json:"key"`
	// Page is the page's id.
	Page string `json:"page"`
	// Kind is opened, spawned or bound.
	Kind RecordKind `json:"kind"`
	// Parent is the key of the page that spawned this one (spawned only).
	Parent string `json:"parent,omitempty"`
}

// Owned reports whether the record lets its key close the page.
func (r Record) Owned() bool { return r.Kind == RecordOpened || r.Kind == RecordSpawned }

// RecordOf returns the record of a page in the snapshot.
func (s Snapshot) RecordOf(page string) (Record, bool) {
	for _, r := range s.Records {
		if r.Page == page {
			return r, true
		}
	}
	return Record{}, false
}

// Page returns the page with the given id.
func (s Snapshot) Page(id string) (Page, bool) {
	for _, p := range s.Pages {
		if p.ID == id {
			return p, true
		}
	}
	return Page{}, false
}

// EventType says what happened to a page.
type EventType string

const (
	PageCreated EventType = "Created"
	PageUpdated EventType = "Updated"
	PageRemoved EventType = "Removed"
	// Connected and Disconnected report the driver's link to the browser.
	Connected    EventType = "Connected"
	Disconnected EventType = "Disconnected"
)

// Event is one change the browser reported.
type Event struct {
	Type EventType
	Page Page
	// Epoch of the connection that reported the event.
	Epoch int64
	Time  time.Time
}

// OpenRequest asks for a page.
type OpenRequest struct {
	// Key identifies the request (the BrowserWindow's uid); opening again with the
	// same key returns the page already opened for it.
	Key string
	URL string
	// NewWindow opens the page in a new window; otherwise a background tab in WindowID
	// (or, when WindowID is empty, in the browser's current normal window).
	NewWindow bool
	WindowID  string
	// Anchors are keys (the session's other windows) whose owned pages (opened or
	// spawned, never bound) the driver may use to open the tab in WindowID when the
	// browser cannot name a new tab's window (CDP); drivers that can ignore them.
	Anchors []string
	// Context isolates the page in a browser context of that name (pool members).
	Context string
}

// AdoptRequest asks the driver to record a spawned page under a new key.
type AdoptRequest struct {
	// Key is the adopting window's uid.
	Key string
	// ID is the spawned page.
	ID string
	// Parent is the key the spawn is attributed to: the key its opener is recorded
	// under, or the key of the Act that was running when it appeared without an
	// opener. The driver checks it against what it observed (ErrNotObserved).
	Parent string
}

// BindRequest asks the driver to record an existing tab for use under a key.
type BindRequest struct {
	Key string
	ID  string
}

// ReleaseRequest drops a key's record of a page and leaves the page open (a Keep
// page released as a deliverable, a bound tab detached).
type ReleaseRequest struct {
	Key string
	ID  string
}

// CloseRequest asks for a page to be closed.
type CloseRequest struct {
	// Key is the owner the page was opened or adopted under; every driver refuses
	// (ErrNotOwned) a live page not recorded under it as opened or spawned.
	Key string
	ID  string
	// OwnsWindow says the page's window was created for it (a new window or a popup);
	// otherwise the window is the user's, and closing its last tab leaves an
	// about:blank tab instead of closing the window.
	OwnsWindow bool
}

// ActRequest is one curated step against a page. No evaluation, no passthrough:
// a driver runs only its bundled page functions (observe, locate, scroll, find
// text) and real input events.
type ActRequest struct {
	// Key is the operation's key; pages that appear without an opener while it runs
	// (and for about a second after a navigate, click, type or press returned: a
	// noopener link's page is reported late) are attributed to it.
	Key string
	// Owner is the key the page is recorded under (opened, spawned or bound); the
	// driver refuses (ErrNotOwned) to act on any other page.
	Owner string
	Page  string
	// Step is what to do.
	Step Step
	// ClickSelector is shorthand for Step{Kind: StepClick, Target: Target{Selector: s}}
	// (tests and the bench).
	ClickSelector string
	// FrameAllowed, when set, is the url policy for the page's frames: a
	// driver that reaches a cross-origin frame itself (cdp) asks it for the
	// frame's url, does not observe a frame it refuses, and refuses a step on
	// an element of one (ActError reason url_not_allowed).
	FrameAllowed func(url string) error
}

// StepKind is one kind of step.
type StepKind string

// Step kinds; they mirror the BrowserAction step types.
const (
	StepObserve  StepKind = "observe"
	StepNavigate StepKind = "navigate"
	StepClick    StepKind = "click"
	StepType     StepKind = "type"
	StepPress    StepKind = "press"
	StepScroll   StepKind = "scroll"
	StepWait     StepKind = "wait"
	// StepBack and StepForward move one entry through the page's history, as the
	// browser's buttons do; with no such entry the driver refuses
	// (ActError ReasonNoHistory) and loads nothing. StepReload loads the current
	// document again. Each waits for the document it loads, and makes a new
	// document: earlier refs and points are stale.
	StepBack    StepKind = "back"
	StepForward StepKind = "forward"
	StepReload  StepKind = "reload"
	// StepHover moves the pointer over a target (no button): what opens on
	// hover opens.
	StepHover StepKind = "hover"
	// StepSelect chooses the option of a drop-down (<select>) target whose
	// label (else value) is Text: the value set, then input and change events.
	// A target that is no drop-down, or an option it does not offer, is
	// ReasonTargetNotFound.
	StepSelect StepKind = "select"
	// StepFill fills Fields in order: each field's target is focused, its
	// content selected and replaced by its text (real text input). Every target
	// is checked first (stale, ambiguous, missing, not a text field) and a
	// refusal names the field (its index) and types into none.
	StepFill StepKind = "fill"
	// StepDialog answers the JavaScript dialog the page shows (dialog.go):
	// Accept presses OK (a prompt gets Text, else its default), else Cancel.
	// A page that shows none is ReasonNoDialog.
	StepDialog StepKind = "dialog"
	// StepScreenshot takes a picture of the viewport, or of Target's element
	// (its box as it shows in the viewport: the step never scrolls), as
	// Format, into ActResult.Screenshot. It never focuses or activates the tab.
	StepScreenshot StepKind = "screenshot"
	// StepUpload puts Files into the file input Target names (the
	// <input type=file> itself, a <label> whose control it is, or an element
	// holding exactly one): the input's files are replaced by Files, then input
	// and change events (bubbling), as the user's pick in the file chooser
	// would. A target that is no file input, or several files for an input
	// without multiple, is ReasonTargetNotFound. Nothing is focused.
	StepUpload StepKind = "upload"
)

// MaxUploadBytes bounds an upload step's files together (the API's bound).
const MaxUploadBytes = 10 << 20

// ValidUpload checks an upload step's fields (every driver's check).
func ValidUpload(s Step) error {
	if s.Target == (Target{}) || len(s.Files) == 0 {
		return errors.New(`act: an upload needs a target and Files, for example Step{Kind: "upload", Target: Target{Text: "Attach"}, Files: []UploadFile{{Name: "resume.pdf", Data: data}}}`)
	}
	total := 0
	for i, f := range s.Files {
		if f.Name == "" || strings.ContainsAny(f.Name, "/\\") {
			return fmt.Errorf("act: file %d of an upload needs a base name (no path), not %q", i, f.Name)
		}
		total += len(f.Data)
	}
	if total > MaxUploadBytes {
		return fmt.Errorf("act: an upload's files are at most %d bytes together, not %d", MaxUploadBytes, total)
	}
	return nil
}

// UploadFile is one file of an upload step: its content, as the agent read it
// from the profile's upload directory.
type UploadFile struct {
	// Name is the file's base name, as the page sees it (File.name).
	Name string
	// Type is its media type (File.type), from its extension; empty when unknown.
	Type string
	// LastModified is its modification time in ms since the epoch (File.lastModified).
	LastModified int64
	// Data is its content.
	Data []byte
}

// Image formats of a screenshot step.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
)

// Screenshot is what a screenshot step took.
type Screenshot struct {
	// Format is FormatPNG or FormatJPEG.
	Format string
	// Data is the image; nil when it was larger than the step's MaxBytes
	// (Size says how large).
	Data []byte
	// Size is the image's size in bytes.
	Size int
}

// TooLarge reports whether the image was taken but left out for its size.
func (s *Screenshot) TooLarge() bool { return s != nil && len(s.Data) == 0 && s.Size > 0 }

// FillField is one field of a fill step.
type FillField struct {
	Target Target
	Text   string
}

// Step is one curated step.
type Step struct {
	Kind StepKind
	// URL to load (navigate).
	URL string
	// Target is what click, type and hover aim at; zero for type means the focused element.
	Target Target
	// Text to type (type), to wait for (wait), or the option to choose (select).
	Text string
	// Key to press (press): a key name (Enter, Tab, Escape, Backspace, Delete,
	// ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown, Space) or one
	// character, optionally with modifiers: "Shift+Tab", "Control+a".
	Key string
	// DeltaX and DeltaY scroll by CSS pixels (scroll).
	DeltaX, DeltaY int
	// Timeout bounds a wait for text; a wait without text sleeps this long.
	Timeout time.Duration
	// MaxElements bounds an observation's element list (default 200).
	MaxElements int
	// OutlineOffset is the first outline node an observe returns (0: the top of
	// the page); the driver returns the nodes from there, about
	// OutlineChunkBytes of them (see OutlineNode).
	OutlineOffset int
	// Fields are the fields a fill step fills, in order.
	Fields []FillField
	// Files are what an upload step puts into its target's file input.
	Files []UploadFile
	// Accept answers a dialog step's dialog with OK (else Cancel).
	Accept bool
	// Screenshot: Format (FormatPNG, the default, or FormatJPEG), Quality
	// (JPEG, 1-100; 0: 80), Scale (0 < Scale <= 1 of the page's CSS pixels;
	// 0: 1) and MaxBytes (an image larger than this comes back without its
	// Data; 0: no bound).
	Format   string
	Quality  int
	Scale    float64
	MaxBytes int
}

// Target is an element or a point on the page, as an earlier observation saw it.
type Target struct {
	// Ref is an element id from an observation (e.g. "e12"), valid only in
	// Document; the driver refuses (ReasonStaleRef) a ref from another document
	// or one whose element is gone, and never picks another element.
	Ref string
	// Document is the observation's document id (PageObservation.Document). A ref
	// or point from another document is stale.
	Document string
	// Text picks the visible element whose text or accessible name is Text
	// (exactly, after trimming and collapsing white space; else the only one that
	// contains it): more than one is ReasonAmbiguousTarget, none ReasonTargetNotFound.
	Text string
	// Selector picks the single visible element matching a CSS selector (tests).
	Selector string
	// Point, with X and Y in viewport CSS pixels, clicks there; Epoch is the
	// observation's render epoch: once the page scrolled, navigated or re-rendered
	// since, the point is refused (ReasonStaleCoordinates).
	Point bool
	X, Y  float64
	Epoch int64
}

// Element is one visible interactive element of an observation.
type Element struct {
	// ID names the element within its document (e.g. "e12"), stable for as long as
	// the document lives.
	ID                  string
	Role                string
	Name                string
	X, Y, Width, Height int
}

// PageObservation is what an observe step saw.
type PageObservation struct {
	// Document identifies the page's current document: a navigation, a reload or
	// a new driver connection makes a new one, and refs of the old one are stale.
	Document string
	// Epoch counts the document's scrolls, resizes and re-renders (DOM changes).
	Epoch            int64
	URL, Title       string
	ScrollX, ScrollY int
	Elements         []Element
	Truncated        bool
	// Outline is the page's content from node OutlineOffset on (the step's),
	// in document order, about OutlineChunkBytes of it; OutlineMore says that
	// the page has nodes after the last one listed.
	Outline       []OutlineNode
	OutlineOffset int
	OutlineMore   bool
}

// ActResult is what a step returns.
type ActResult struct {
	// Observation is set by observe.
	Observation *PageObservation
	// Screenshot is set by screenshot.
	Screenshot *Screenshot
	// Spawns counts the new pages (windows, tabs, popups) the acted-on page
	// asked the browser for while the step ran, as the browser announced them
	// (CDP Page.windowOpen on the page's session; the extension's debugger
	// session on the tab): a window.open in a click handler, a target=_blank
	// link or form, a keyboard activation that opens a new tab. Only a driver
	// that implements SpawnReporter sets it, and it is meaningful even with an
	// error (a step that failed after its input ran). The announcement reaches
	// the driver before the step's last reply (an ordering barrier: the
	// browser answers an input event after the renderer handled it, and events
	// come before the reply that follows them); the page itself, and so its
	// adoption, may come later.
	Spawns int
	// SpawnsUnknown is set by a SpawnReporter when it could not watch this
	// step (the extension's navigate runs without a debugger session): the
	// caller settles as for a driver that cannot tell.
	SpawnsUnknown bool
	// Dialog is the JavaScript dialog (alert, confirm, prompt) the step's
	// input made the page open, left open for a dialog step (dialog.go).
	Dialog *Dialog
}

// SpawnReporter is implemented by drivers whose Act reports in
// ActResult.Spawns every new page the acted-on page announced while the step
// ran. The agent then waits after a mutating step only when it spawned (for
// the spawns to be adopted, bounded), instead of a fixed settle after every
// one. A page spawned later, from a timer, is still adopted through its opener
// (or the act's attribution linger) and holds the session's next step as
// unacknowledged once adopted; the action's result may then not list it.
// The agent checks for it with a type assertion.
type SpawnReporter interface {
	// ReportsSpawns reports whether ActResult.Spawns is set by this driver.
	ReportsSpawns() bool
}

// ActError is a step the driver refused because of the page's state: Reason is
// a guard reason of the API (stale_ref, stale_coordinates, ambiguous_target,
// target_not_found, no_history); Candidates lists the matches of an ambiguous target.
type ActError struct {
	Reason     string
	Message    string
	Candidates []Element
	// Document and Epoch are the page's current document and render epoch when
	// Candidates are listed, so that the candidates' ids can be used as refs.
	Document string
	Epoch    int64
}

func (e *ActError) Error() string { return e.Reason + ": " + e.Message }

// FieldError is err about field i of a fill step: an ActError keeps its reason
// and says which field, and what was filled (done); other errors are wrapped.
func FieldError(i int, err error, done string) error {
	var ae *ActError
	if errors.As(err, &ae) {
		c := *ae
		c.Message = fmt.Sprintf("field %d: %s; %s", i, ae.Message, done)
		return &c
	}
	return fmt.Errorf("field %d: %w; %s", i, err, done)
}

// FilledBefore says what a fill that stopped at field i had filled.
func FilledBefore(i int) string {
	switch i {
	case 0:
		return "no field was filled"
	case 1:
		return "field 0 was filled"
	}
	return fmt.Sprintf("fields 0 to %d were filled", i-1)
}

// Browser is one browser profile as the agent sees it.
// RecordLookup is implemented by a driver that can return the record of one
// key from its ledger without a whole Snapshot: the agent, missing a record in
// its mirror, asks for that one key (a cost per window, not per page of the
// browser). Its answer must be what a Snapshot taken now would list.
type RecordLookup interface {
	// RecordOf returns the record under key, if any; ErrNotConnected while the
	// browser is unreachable.
	RecordOf(ctx context.Context, key string) (Record, bool, error)
}

type Browser interface {
	// Snapshot returns what the browser reports now.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Open opens a page without focusing anything; idempotent by key.
	Open(ctx context.Context, req OpenRequest) (Page, error)
	// Close closes a page and returns once the browser reports it gone. A page that
	// is already gone is not an error.
	Close(ctx context.Context, req CloseRequest) error
	// Adopt records a spawned page under req.Key once the driver has checked that
	// it saw the spawn itself: the page's opener is recorded under req.Parent, or
	// the page appeared without an opener while an Act keyed req.Parent ran.
	// Idempotent for the same key; ErrInUse when another key has the page;
	// ErrNotObserved when the driver did not see the spawn; ErrNotFound when the
	// page is gone.
	Adopt(ctx context.Context, req AdoptRequest) error
	// Bind records an existing tab for use under req.Key; it is never closed.
	// Idempotent for the same key; ErrInUse when another key has the page.
	Bind(ctx context.Context, req BindRequest) error
	// Release drops req.Key's record of the page and leaves the page open.
	// Idempotent; a page recorded under another key is left alone.
	Release(ctx context.Context, req ReleaseRequest) error
	// Act runs one curated step on a page recorded under req.Owner (ErrNotOwned
	// otherwise). It never focuses a window or tab. A step refused because of the
	// page's state returns an *ActError.
	Act(ctx context.Context, req ActRequest) (ActResult, error)
	// Events streams what the browser reports until ctx ends. One consumer.
	Events() <-chan Event
	// Connected reports whether the driver reaches the browser now.
	Connected() bool
}

// EventFlusher is implemented by drivers that queue events on their way to
// Events(): FlushEvents returns once every event reported before the call is
// in the Events() channel, so that a consumer draining the channel has seen
// them all (the agent does so before it forgets a closed page's record). A
// driver that sends to the channel directly needs nothing.
type EventFlusher interface {
	FlushEvents(ctx context.Context) error
}

// LostRecords is implemented by drivers that know which browser instance they
// drive (cdp, with a launch nonce from the launcher that restarted the
// browser): records of pages of an earlier instance are void, their pages gone
// with that browser, and the driver keeps them apart so that the agent tells a
// page lost to a browser restart from one the user closed. The agent checks
// for it with a type assertion.
type LostRecords interface {
	// LostRecord returns the record key had of a page of an earlier browser instance.
	LostRecord(key string) (Record, bool)
	// ForgetLost drops it once the key's window says what became of the page
	// (opened anew, or gone for good). A new record of the key drops it too.
	ForgetLost(key string) error
}

// ContextPool is implemented by drivers that isolate pool sessions in browser
// contexts of their own (cdp). The agent checks for it with a type assertion;
// the fake and extension drivers need nothing.
type ContextPool interface {
	// PoolContexts names the contexts the driver has recorded (persisted, so a
	// restarted driver reuses a session's context).
	PoolContexts() []string
	// DisposeContext ends a context and every page in it, and returns once
	// the driver has seen each of them go; unknown names are not an error.
	// gone, when not nil, is called with the id of each page as the driver
	// sees it go (the page is no longer in the driver's model then), one at a
	// time, from the call's own goroutine: the caller can start the work that
	// follows a page's end without waiting for the whole context.
	DisposeContext(ctx context.Context, name string, gone func(page string)) error
}

var (
	// ErrNotConnected: the browser is unreachable now; try again later.
	ErrNotConnected = errors.New("browser not connected")
	// ErrNotFound: no such page or window.
	ErrNotFound = errors.New("page not found")
	// ErrNotOwned: the page is not recorded under the owner key given.
	ErrNotOwned = errors.New("page not owned by this key")
	// ErrNotObserved: the driver did not see the page spawned from the claimed parent.
	ErrNotObserved = errors.New("spawn not observed by the driver")
	// ErrInUse: the page is recorded under another key (owned or bound).
	ErrInUse = errors.New("page already recorded under another key")
)

// SessionMonitor is implemented by drivers that show the user which sessions
// drive the browser (extension: the popup's Session Monitor and Chrome tab
// groups). The agent checks for it with a type assertion and publishes the
// sessions placed on its profile whenever they or their windows change.
type SessionMonitor interface {
	// PublishSessions replaces what the browser shows with sessions.
	PublishSessions(ctx context.Context, sessions []MonitorSession) error
}

// MonitorSession is one session as the Session Monitor shows it.
type MonitorSession struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Thread    string          `json:"thread"`
	Purpose   string          `json:"purpose"`
	Phase     string          `json:"phase"`
	Windows   []MonitorWindow `json:"windows"`
}

// MonitorWindow is one BrowserWindow of a session in the Session Monitor. TabID
// is the page id the driver carries (decimal for the extension).
type MonitorWindow struct {
	Name        string `json:"name"`
	TabID       string `json:"tabId"`
	Source      string `json:"source"`
	Disposition string `json:"disposition"`
	Phase       string `json:"phase"`
	// Unacknowledged marks a Spawned window without a disposition.
	Unacknowledged bool `json:"unacknowledged"`
}
