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
	// spawns indexes pages by their opener (opener id → page ids), so that
	// finding a page's spawns costs its spawns, not every page of the browser.
	spawns map[string]map[string]bool
	// attributed indexes the pages a driver attributed to an action (action
	// key → page ids): what an action caused without an opener.
	attributed map[string]map[string]bool
	// records mirrors the driver's ledger (page → record): the only source of
	// authority over a page. keys maps a record's key to its page.
	records map[string]browser.Record
	keys    map[string]string
	// owners names the window behind a record's key (a window uid): every
	// window in the cache (trackOwners), and those the agent opened, adopted or
	// bound before the cache shows them, so that a spawn's own spawn is never
	// missed.
	owners map[string]owner
	// recSeq numbers record changes; recLog keeps those a snapshot taken
	// meanwhile may not show, so that replace never forgets a record the driver
	// accepted after the snapshot began (or revives one it dropped).
	recSeq   int64
	recLog   []recordOp
	snapping int // snapshots in flight; the log is kept only meanwhile
	// recordsKnown: a snapshot brought the driver's records at least once, so a
	// missing record means the driver has none (it is kept across disconnects).
	recordsKnown bool
	// pageChanged is closed (and dropped) when a page is put or removed:
	// pageChanges hands it out to those who wait for a page to change.
	pageChanged chan struct{}
}

// recordOp is one record change mirrored from the driver.
type recordOp struct {
	seq  int64
	rec  browser.Record
	drop bool
}

func newModel() *model {
	return &model{pages: map[string]browser.Page{}, spawns: map[string]map[string]bool{}, attributed: map[string]map[string]bool{}, records: map[string]browser.Record{}, keys: map[string]string{}, owners: map[string]owner{}}
}

// beginSnapshot is called before asking the driver for a snapshot: record
// changes after the mark it returns are applied again over the snapshot's
// records. Every call is followed by replace or abortSnapshot.
func (m *model) beginSnapshot() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snapping++
	return m.recSeq
}

// abortSnapshot ends a snapshot that failed.
func (m *model) abortSnapshot() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endSnapshotLocked()
}

func (m *model) endSnapshotLocked() {
	if m.snapping--; m.snapping <= 0 {
		m.snapping, m.recLog = 0, nil
	}
}

func (m *model) replace(s browser.Snapshot, mark int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pages = make(map[string]browser.Page, len(s.Pages))
	m.spawns, m.attributed = map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, p := range s.Pages {
		m.pages[p.ID] = p
		m.linkLocked(p)
	}
	m.records = make(map[string]browser.Record, len(s.Records))
	m.keys = make(map[string]string, len(s.Records))
	for _, r := range s.Records {
		m.records[r.Page], m.keys[r.Key] = r, r.Page
	}
	kept := m.recLog[:0]
	for _, op := range m.recLog {
		if op.seq <= mark {
			continue // the driver had it before the snapshot began
		}
		m.applyLocked(op)
		kept = append(kept, op)
	}
	m.recLog = kept
	m.recordsKnown = true
	m.endSnapshotLocked()
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
		if p.Attributed == "" {
			p.Attributed = old.Attributed
		}
		p.Popup = p.Popup || old.Popup
		m.unlinkLocked(old)
	}
	m.pages[p.ID] = p
	m.linkLocked(p)
	m.pageChangedLocked()
}

func (m *model) remove(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.pages[id]; ok {
		m.unlinkLocked(old)
	}
	delete(m.pages, id)
	m.pageChangedLocked()
}

func (m *model) pageChangedLocked() {
	if m.pageChanged != nil {
		close(m.pageChanged)
		m.pageChanged = nil
	}
}

// pageChanges returns a channel closed at the next put or remove of a page.
func (m *model) pageChanges() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pageChanged == nil {
		m.pageChanged = make(chan struct{})
	}
	return m.pageChanged
}

// linkLocked and unlinkLocked keep the opener and attribution indexes in step
// with pages.
func (m *model) linkLocked(p browser.Page) {
	indexPage(m.spawns, p.OpenerID, p.ID)
	indexPage(m.attributed, p.Attributed, p.ID)
}

func (m *model) unlinkLocked(p browser.Page) {
	unindexPage(m.spawns, p.OpenerID, p.ID)
	unindexPage(m.attributed, p.Attributed, p.ID)
}

func indexPage(idx map[string]map[string]bool, by, id string) {
	if by == "" {
		return
	}
	set := idx[by]
	if set == nil {
		set = map[string]bool{}
		idx[by] = set
	}
	set[id] = true
}

func unindexPage(idx map[string]map[string]bool, by, id string) {
	if set := idx[by]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(idx, by)
		}
	}
}

// spawnsOf returns the pages whose opener is page opener.
func (m *model) spawnsOf(opener string) []browser.Page {
	return m.indexed(m.spawns, opener)
}

// attributedTo returns the pages the driver attributed to the action key.
func (m *model) attributedTo(key string) []browser.Page {
	return m.indexed(m.attributed, key)
}

func (m *model) indexed(idx map[string]map[string]bool, by string) []browser.Page {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := idx[by]
	if len(set) == 0 {
		return nil
	}
	out := make([]browser.Page, 0, len(set))
	for id := range set {
		out = append(out, m.pages[id])
	}
	return out
}

// putRecord mirrors a record the driver just accepted.
func (m *model) putRecord(r browser.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.logLocked(recordOp{rec: r})
}

func (m *model) logLocked(op recordOp) {
	m.recSeq++
	op.seq = m.recSeq
	if m.snapping > 0 {
		m.recLog = append(m.recLog, op)
	}
	m.applyLocked(op)
}

func (m *model) applyLocked(op recordOp) {
	r := op.rec
	if !op.drop {
		m.records[r.Page], m.keys[r.Key] = r, r.Page
		return
	}
	if old, ok := m.records[r.Page]; ok && old.Key == r.Key {
		delete(m.records, r.Page)
	}
	if m.keys[r.Key] == r.Page {
		delete(m.keys, r.Key)
	}
}

// dropRecord mirrors a record the driver just dropped (closed or released).
func (m *model) dropRecord(key, page string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.logLocked(recordOp{rec: browser.Record{Key: key, Page: page}, drop: true})
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

// forgetOwnerUnrecorded drops the name of a key whose window left the cache,
// unless a record still names the key (an orphan, collected by name).
func (m *model) forgetOwnerUnrecorded(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[key]; !ok {
		delete(m.owners, key)
	}
}

// knowsRecords reports whether the mirror holds the driver's records: until the
// first snapshot, a missing record proves nothing.
func (m *model) knowsRecords() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.recordsKnown
}

// recordList returns the mirrored records.
func (m *model) recordList() []browser.Record {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]browser.Record, 0, len(m.records))
	for _, r := range m.records {
		out = append(out, r)
	}
	return out
}
