// Package browser is the seam between the agent and one browser profile: observe
// its windows and pages, open a page, close a page, and a stream of events. Drivers
// (cdp, extension, fake) live behind it, like container runtimes behind the CRI.
//
// Every call is idempotent: opening with a key that already has a live page
// returns that page; closing a page that is already gone succeeds. Nothing here
// ever focuses a window or tab.
package browser

import (
	"context"
	"errors"
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
	// Context isolates the page in a browser context of that name (pool members).
	Context string
}

// CloseRequest asks for a page to be closed.
type CloseRequest struct {
	// Key is the owner the page was opened or adopted under; drivers that keep
	// ownership records refuse pages not recorded under it.
	Key string
	ID  string
	// OwnsWindow says the page's window was created for it (a new window or a popup);
	// otherwise the window is the user's, and closing its last tab leaves an
	// about:blank tab instead of closing the window.
	OwnsWindow bool
}

// ActRequest is one curated step against a page. No evaluation, no passthrough.
type ActRequest struct {
	// Key is the operation's key; pages that appear without an opener while it runs
	// are attributed to it.
	Key  string
	Page string
	// Click dispatches a real mouse click on the centre of the first element matching
	// the CSS selector.
	ClickSelector string
}

// Browser is one browser profile as the agent sees it.
type Browser interface {
	// Snapshot returns what the browser reports now.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Open opens a page without focusing anything; idempotent by key.
	Open(ctx context.Context, req OpenRequest) (Page, error)
	// Close closes a page and returns once the browser reports it gone. A page that
	// is already gone is not an error.
	Close(ctx context.Context, req CloseRequest) error
	// Adopt records a spawned page under an owner key so that it can be closed
	// later, also by a fresh driver process (drivers without records return nil).
	Adopt(ctx context.Context, key, id string) error
	// Act runs one curated step.
	Act(ctx context.Context, req ActRequest) error
	// Events streams what the browser reports until ctx ends. One consumer.
	Events() <-chan Event
	// Connected reports whether the driver reaches the browser now.
	Connected() bool
}

var (
	// ErrNotConnected: the browser is unreachable now; try again later.
	ErrNotConnected = errors.New("browser not connected")
	// ErrNotFound: no such page or window.
	ErrNotFound = errors.New("page not found")
	// ErrNotOwned: the page is not recorded under the owner key given.
	ErrNotOwned = errors.New("page not owned by this key")
)
