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
	// records mirrors the driver's ledger (page → record): the only source of
	// authority over a page. keys maps a record's key to its page.
	records map[string]browser.Record
	keys    map[string]string
	// owners names the window behind a record's key (a window uid) for windows the
	// agent opened, adopted or bound before the cache shows them, so that a
	// spawn's own spawn is never missed.
	owners map[string]owner
}

func newModel() *model {
	return &model{pages: map[string]browser.Page{}, records: map[string]browser.Record{}, keys: map[string]string{}, owners: map[string]owner{}}
}

func (m *model) replace(s browser.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pages = make(map[string]browser.Page, len(s.Pages))
	for _, p := range s.Pages {
		m.pages[p.ID] = p
	}
	m.records = make(map[string]browser.Record, len(s.Records))
	m.keys = make(map[string]string, len(s.Records))
	for _, r := range s.Records {
		m.records[r.Page], m.keys[r.Key] = r, r.Page
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
}

// putRecord mirrors a record the driver just accepted.
func (m *model) putRecord(r browser.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[r.Page], m.keys[r.Key] = r, r.Page
}

// dropRecord mirrors a record the driver just dropped (closed or released).
func (m *model) dropRecord(key, page string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[page]; ok && r.Key == key {
		delete(m.records, page)
	}
	if m.keys[key] == page {
		delete(m.keys, key)
	}
}

// record returns the ledger's record of a page.
func (m *model) record(page string) (browser.Record, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.records[page]
	return r, ok
}

// pageOfKey returns the page recorded under a key.
func (m *model) pageOfKey(key string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.keys[key]
	return p, ok
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

// rememberOwner names the window behind a key (a window uid).
func (m *model) rememberOwner(key string, o owner) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owners[key] = o
}

func (m *model) knownOwner(key string) (owner, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	o, ok := m.owners[key]
	return o, ok
}

// forgetOwner drops the name of a key whose window is gone.
func (m *model) forgetOwner(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.owners, key)
}
