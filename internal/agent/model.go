package agent

import (
	"sync"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// owner names the window (and so the session) a page belongs to.
type owner struct {
	Namespace, Session, Window string
}

// model is the agent's view of its browser, fed by snapshots and events. Window
// reconciles read it instead of asking the browser, so observing N windows costs
// one snapshot per connection, not N round trips.
type model struct {
	mu        sync.RWMutex
	synced    bool // a snapshot was taken on the current connection
	connected bool
	epoch     int64
	version   string
	pages     map[string]browser.Page
	// owners remembers pages the agent opened or adopted before the cache shows
	// their BrowserWindow, so that a spawn's own spawn is never missed.
	owners map[string]owner
}

func newModel() *model {
	return &model{pages: map[string]browser.Page{}, owners: map[string]owner{}}
}

func (m *model) replace(s browser.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pages = make(map[string]browser.Page, len(s.Pages))
	for _, p := range s.Pages {
		m.pages[p.ID] = p
	}
	m.epoch, m.version, m.connected, m.synced = s.Epoch, s.Version, true, true
}

func (m *model) put(p browser.Page) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.pages[p.ID]; ok {
		// Events may carry less than the model knows (a created page has no url yet).
		if p.URL == "" {
			p.URL = old.URL
		}
		if p.Title == "" {
			p.Title = old.Title
		}
		if p.WindowID == "" {
			p.WindowID = old.WindowID
		}
		if p.OpenerID == "" {
			p.OpenerID = old.OpenerID
		}
		p.Popup = p.Popup || old.Popup
	}
	m.pages[p.ID] = p
}

func (m *model) remove(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pages, id)
	// A closed page spawns nothing more; its record has served.
	delete(m.owners, id)
}

func (m *model) disconnect() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.connected, m.synced = false, false
}

func (m *model) page(id string) (browser.Page, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.pages[id]
	return p, ok
}

// state reports whether the model can be trusted now (connected and synced).
func (m *model) state() (ready bool, epoch int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.connected && m.synced, m.epoch
}

func (m *model) all() []browser.Page {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]browser.Page, 0, len(m.pages))
	for _, p := range m.pages {
		out = append(out, p)
	}
	return out
}

func (m *model) rememberOwner(id string, o owner) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owners[id] = o
}

func (m *model) knownOwner(id string) (owner, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	o, ok := m.owners[id]
	return o, ok
}
