// Package ledger is a browser driver's record of page provenance: which pages it
// opened, which it saw spawned from a recorded page and adopted, and which tabs
// are bound for use. Drivers consult it before closing, adopting or acting on a
// page, so that authority over a page comes from what the driver observed, not
// from what a caller claims. A Ledger with a path persists every change to that
// file (written to a temporary file and renamed, mode 0600 in a 0700 directory),
// so a restarted agent keeps its records.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Ledger holds at most one record per page and per key, the open intents not yet
// resolved, and the driver's named browser contexts. Safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	path     string
	pages    map[string]browser.Record // page → record
	keys     map[string]string         // key → page
	intents  map[string]Intent         // key → intent
	contexts map[string]string         // context name → driver's context id
	// released are spawned pages whose record was released while they lived
	// (Keep pages, deliverables that are the user's now): never adopted again,
	// though their opener may still be recorded.
	released map[string]bool
	// closed remembers the key of each owned page closed lately (page → key),
	// the last maxClosed of them: a page that page spawned just before it
	// closed is reported by the browser before the close completes, but may
	// reach the agent's adopter after its opener's record is gone. The closed
	// record is still the driver's own proof of the opener's owner, so such a
	// spawn is adopted into that owner's session (Adopt), never left behind.
	closed      map[string]string
	closedOrder []string
	// instance names the browser the records are of (SetInstance); lost are
	// the records, by key, of pages of an earlier instance, void since.
	instance string
	lost     map[string]browser.Record
}

// maxClosed bounds the closed records kept for late spawns: far more than the
// closes that can be in flight while their spawns' events are handled.
const maxClosed = 4096

// Intent is an open about to be asked of the browser, recorded before the
// create so that a driver stopped between the create and the record can tell,
// after a restart, which page it created: the one at the intent's marker url,
// which carries a nonce only this intent knows. A url alone never claims a page.
type Intent struct {
	Key       string `json:"key"`
	URL       string `json:"url"`
	NewWindow bool   `json:"newWindow,omitempty"`
	Context   string `json:"context,omitempty"`
	// Marker is the url the driver creates the page at (a random nonce in an
	// about:blank fragment) before it navigates it to URL, once recorded.
	Marker string `json:"marker,omitempty"`
}

type fileFormat struct {
	Version  int               `json:"version"`
	Records  []browser.Record  `json:"records"`
	Intents  []Intent          `json:"intents,omitempty"`
	Contexts map[string]string `json:"contexts,omitempty"`
	Released []string          `json:"released,omitempty"`
	// Instance names the browser instance the records are of (SetInstance).
	Instance string `json:"instance,omitempty"`
	// Lost are records of pages of an earlier browser instance.
	Lost []browser.Record `json:"lost,omitempty"`
}

// New returns a ledger; with a non-empty path it loads the records stored there
// (a missing file is an empty ledger) and persists every change to it.
func New(path string) (*Ledger, error) {
	l := &Ledger{path: path, pages: map[string]browser.Record{}, keys: map[string]string{},
		intents: map[string]Intent{}, contexts: map[string]string{}, released: map[string]bool{},
		closed: map[string]string{}, lost: map[string]browser.Record{}}
	if path == "" {
		return l, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	for _, p := range []string{filepath.Dir(path), path} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		// Whoever can write the ledger can make the agent close their choice of page.
		if fi.Mode().Perm()&0o022 != 0 {
			return nil, fmt.Errorf("ledger: %s is writable by other users (mode %v); the ledger decides which pages the agent may close: run `chmod go-w %s`", p, fi.Mode().Perm(), p)
		}
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("ledger: %s is not a tabwarden ledger (move it away to start empty): %w", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("ledger: %s has version %d; this tabwarden reads version 1", path, f.Version)
	}
	for _, r := range f.Records {
		if r.Key == "" || r.Page == "" {
			continue
		}
		l.pages[r.Page] = r
		l.keys[r.Key] = r.Page
	}
	for _, in := range f.Intents {
		if in.Key != "" {
			l.intents[in.Key] = in
		}
	}
	for name, id := range f.Contexts {
		if name != "" && id != "" {
			l.contexts[name] = id
		}
	}
	for _, p := range f.Released {
		l.released[p] = true
	}
	l.instance = f.Instance
	for _, r := range f.Lost {
		if r.Key != "" {
			l.lost[r.Key] = r
		}
	}
	return l, nil
}

// saveLocked writes the ledger to its file, if it has one.
func (l *Ledger) saveLocked() error {
	if l.path == "" {
		return nil
	}
	f := fileFormat{Version: 1, Records: l.recordsLocked()}
	for _, in := range l.intents {
		f.Intents = append(f.Intents, in)
	}
	slices.SortFunc(f.Intents, func(a, b Intent) int { return strings.Compare(a.Key, b.Key) })
	if len(l.contexts) > 0 {
		f.Contexts = l.contexts
	}
	for p := range l.released {
		f.Released = append(f.Released, p)
	}
	slices.Sort(f.Released)
	f.Instance = l.instance
	for _, r := range l.lost {
		f.Lost = append(f.Lost, r)
	}
	slices.SortFunc(f.Lost, func(a, b browser.Record) int { return strings.Compare(a.Key, b.Key) })
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.path), ".ledger-*")
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // best-effort cleanup
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close() // best-effort cleanup
		return fmt.Errorf("ledger: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close() // best-effort cleanup
		return fmt.Errorf("ledger: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := os.Rename(tmp.Name(), l.path); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

func (l *Ledger) putLocked(r browser.Record) error {
	// A record without a key would let an Act without an Owner through (and is
	// dropped on load anyway).
	if r.Key == "" || r.Page == "" {
		return fmt.Errorf("ledger: a record needs a key and a page (key %q, page %q)", r.Key, r.Page)
	}
	if old, ok := l.keys[r.Key]; ok && old != r.Page {
		return fmt.Errorf("key %s already has page %s, not %s: %w", r.Key, old, r.Page, browser.ErrInUse)
	}
	l.pages[r.Page] = r
	l.keys[r.Key] = r.Page
	// A recorded page resolves whatever the key intended, and supersedes the
	// key's page lost to a browser restart.
	delete(l.intents, r.Key)
	delete(l.lost, r.Key)
	return l.saveLocked()
}

func (l *Ledger) dropLocked(page string) error {
	r, ok := l.pages[page]
	if !ok {
		return nil
	}
	delete(l.pages, page)
	if l.keys[r.Key] == page {
		delete(l.keys, r.Key)
	}
	return l.saveLocked()
}

func (l *Ledger) recordsLocked() []browser.Record {
	out := make([]browser.Record, 0, len(l.pages))
	for _, r := range l.pages {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b browser.Record) int { return strings.Compare(a.Page, b.Page) })
	return out
}

// Records returns every record, sorted by page.
func (l *Ledger) Records() []browser.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recordsLocked()
}

// Get returns the record of a page.
func (l *Ledger) Get(page string) (browser.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.pages[page]
	return r, ok
}

// PageOf returns the page recorded under a key.
func (l *Ledger) PageOf(key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.keys[key]
	return p, ok
}

// Opened records a page the driver created for key.
func (l *Ledger) Opened(key, page string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.pages[page]; ok && r.Key != key {
		return fmt.Errorf("page %s: %w", page, browser.ErrInUse)
	}
	return l.putLocked(browser.Record{Key: key, Page: page, Kind: browser.RecordOpened})
}

// Adopt records a spawned page under req.Key after checking what the driver
// observed of it: opener is the page's opener as the browser reported it, and
// attributed the key of the Act whose own input the driver saw cause the page
// (drivers set it only on evidence: the page appeared from, or in the window or
// browser context of, the page that Act was acting on, right after its input).
// A page is req.Parent's when the Act keyed req.Parent caused it (and it has
// no opener, or was opened from a tab that Act's session binds), or when its
// opener is a page req.Parent owns (opened or spawned). A page opened from a
// bound tab without such an Act is the user's (their own click there): its
// opener's record does not make it the session's.
func (l *Ledger) Adopt(req browser.AdoptRequest, opener, attributed string) error {
	if req.Key == "" || req.Parent == "" {
		return errors.New("adopt: a key and a parent are required")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.pages[req.ID]; ok {
		if r.Key == req.Key && r.Kind == browser.RecordSpawned {
			return nil
		}
		return fmt.Errorf("page %s is recorded under %s: %w", req.ID, r.Key, browser.ErrInUse)
	}
	if l.released[req.ID] {
		return fmt.Errorf("page %s was adopted and released before (a Keep page is the user's now): %w", req.ID, browser.ErrNotObserved)
	}
	openerRec, openerRecorded := l.pages[opener]
	if attributed != "" && attributed == req.Parent && (opener == "" || openerRec.Kind == browser.RecordBound) {
		return l.putLocked(browser.Record{Key: req.Key, Page: req.ID, Kind: browser.RecordSpawned, Parent: req.Parent})
	}
	observed := false
	if opener != "" {
		if p, ok := openerRec, openerRecorded; ok {
			if p.Kind == browser.RecordBound && p.Key == req.Parent {
				return fmt.Errorf("page %s was opened from tab %s, which %s only binds, and no action of its session caused it (the user's own click there): it stays the user's: %w", req.ID, opener, req.Parent, browser.ErrNotObserved)
			}
			observed = p.Key == req.Parent && p.Owned()
		} else {
			// The opener was closed under req.Parent after it spawned the page.
			observed = l.closed[opener] == req.Parent
		}
	}
	if !observed {
		return fmt.Errorf("page %s (opener %q): %w from %s", req.ID, opener, browser.ErrNotObserved, req.Parent)
	}
	return l.putLocked(browser.Record{Key: req.Key, Page: req.ID, Kind: browser.RecordSpawned, Parent: req.Parent})
}

// Bind records an existing tab for use under key. opener and attributed are
// what the driver observed of the tab: a tab spawned by an owned page (or
// caused by an Act) belongs to that page's session, which adopts it; nobody
// binds it in the moment between its creation and its adoption. A tab the user
// opened from a bound tab is theirs, and bindable, as is a spawn released
// (a Keep page: the user's now).
func (l *Ledger) Bind(req browser.BindRequest, opener, attributed string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.pages[req.ID]; ok {
		if r.Key == req.Key && r.Kind == browser.RecordBound {
			return nil
		}
		return fmt.Errorf("tab %s is recorded under %s (%s): %w", req.ID, r.Key, r.Kind, browser.ErrInUse)
	}
	if p, ok := l.pages[opener]; ok && opener != "" && p.Owned() {
		return fmt.Errorf("tab %s was spawned by page %s of %s, whose session adopts it: %w", req.ID, opener, p.Key, browser.ErrInUse)
	}
	if attributed != "" && !l.released[req.ID] {
		return fmt.Errorf("tab %s appeared during action %s, whose session adopts it: %w", req.ID, attributed, browser.ErrInUse)
	}
	return l.putLocked(browser.Record{Key: req.Key, Page: req.ID, Kind: browser.RecordBound})
}

// Release drops key's record of page, which stays open; a record under another
// key stays. A spawned page released is never adopted again.
func (l *Ledger) Release(key, page string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.pages[page]
	if !ok || r.Key != key {
		return nil
	}
	if r.Kind == browser.RecordSpawned {
		l.released[page] = true
	}
	return l.dropLocked(page)
}

// MayClose returns nil when key may close page: it is recorded under key as
// opened or spawned. Bound tabs and pages of other keys are ErrNotOwned.
func (l *Ledger) MayClose(key, page string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.pages[page]
	if !ok || r.Key != key || !r.Owned() {
		return fmt.Errorf("close page %s under %q: %w", page, key, browser.ErrNotOwned)
	}
	return nil
}

// MayAct returns nil when owner may drive page: recorded under owner, any kind.
func (l *Ledger) MayAct(owner, page string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.pages[page]; !ok || r.Key != owner {
		return fmt.Errorf("act on page %s under %q: %w", page, owner, browser.ErrNotOwned)
	}
	return nil
}

// Closed drops the record of a page that is gone after key closed it, and
// remembers that key closed it (see Ledger.closed).
func (l *Ledger) Closed(key, page string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.pages[page]
	if !ok || r.Key != key {
		return nil
	}
	if r.Owned() {
		if _, again := l.closed[page]; !again {
			if len(l.closedOrder) >= maxClosed {
				delete(l.closed, l.closedOrder[0])
				l.closedOrder = l.closedOrder[1:]
			}
			l.closedOrder = append(l.closedOrder, page)
		}
		l.closed[page] = key
	}
	return l.dropLocked(page)
}

// Intend records an open intent for in.Key before the driver asks the browser
// for the page; it replaces an earlier intent of the key. ErrInUse when the key
// already has a page.
func (l *Ledger) Intend(in Intent) error {
	if in.Key == "" {
		return errors.New("ledger: an intent needs a key")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.keys[in.Key]; ok {
		return fmt.Errorf("key %s already has page %s: %w", in.Key, p, browser.ErrInUse)
	}
	l.intents[in.Key] = in
	return l.saveLocked()
}

// IntentOf returns the unresolved open intent of a key.
func (l *Ledger) IntentOf(key string) (Intent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.intents[key]
	return in, ok
}

// DropIntent forgets a key's intent (the create failed and created nothing).
func (l *Ledger) DropIntent(key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.intents[key]; !ok {
		return nil
	}
	delete(l.intents, key)
	return l.saveLocked()
}

// Recorded reports whether any key has a record of page.
func (l *Ledger) Recorded(page string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.pages[page]
	return ok
}

// Context returns the driver's id of a named browser context.
func (l *Ledger) Context(name string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.contexts[name]
	return id, ok
}

// Contexts returns every named browser context (name → id).
func (l *Ledger) Contexts() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.contexts))
	for k, v := range l.contexts {
		out[k] = v
	}
	return out
}

// SetContext records the id of a named browser context.
func (l *Ledger) SetContext(name, id string) error {
	if name == "" || id == "" {
		return fmt.Errorf("ledger: a context needs a name and an id (name %q, id %q)", name, id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.contexts[name] == id {
		return nil
	}
	l.contexts[name] = id
	return l.saveLocked()
}

// DropContext forgets a named browser context (disposed, or gone with its browser).
func (l *Ledger) DropContext(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.contexts[name]; !ok {
		return nil
	}
	delete(l.contexts, name)
	return l.saveLocked()
}

// SetInstance says which browser instance the driver speaks to: an id its
// launcher made for this one launch (a nonce), never reused. When the records
// were written for another instance (or for one not named), they are void:
// their pages went with that browser, and their ids mean nothing to this one.
// They become lost records (LostRecord), which tell a page lost to a browser
// restart from one the user closed; the intents, the released pages and the
// browser contexts, ids of the other browser too, are forgotten. An empty id
// (a browser the driver did not launch: it may be the same one as before)
// changes nothing. It returns how many records were voided.
func (l *Ledger) SetInstance(id string) (int, error) {
	if id == "" {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.instance == id {
		return 0, nil
	}
	n := len(l.pages)
	for _, r := range l.pages {
		l.lost[r.Key] = r
	}
	l.pages, l.keys, l.intents = map[string]browser.Record{}, map[string]string{}, map[string]Intent{}
	l.contexts, l.released = map[string]string{}, map[string]bool{}
	l.closed, l.closedOrder = map[string]string{}, nil
	l.instance = id
	return n, l.saveLocked()
}

// Instance is the browser instance the records are of ("" when not named).
func (l *Ledger) Instance() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.instance
}

// LostRecord returns the record key had of a page of an earlier browser
// instance (see SetInstance), until ForgetLost or a new record of the key.
func (l *Ledger) LostRecord(key string) (browser.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.lost[key]
	return r, ok
}

// ForgetLost drops key's lost record, once its window says what became of it.
func (l *Ledger) ForgetLost(key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.lost[key]; !ok {
		return nil
	}
	delete(l.lost, key)
	return l.saveLocked()
}
