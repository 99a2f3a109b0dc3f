// Package agent is tabwarden's agent role, like a kubelet for one browser
// profile: it realizes the windows sessions want through a browser driver,
// observes the real ones, adopts every page a session's page spawns, and closes
// pages through the tabwarden.dev/page finalizer.
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
	"github.com/tabwarden/tabwarden/internal/metrics"
)

// Options configure an agent.
type Options struct {
	// Profile is the BrowserProfile the agent serves.
	Profile string
	// Driver names the driver kind recorded on a profile the agent creates.
	Driver twv1.DriverType
	// Browser is the driver.
	Browser browser.Browser
	// Identity names this agent in the profile's status and its Lease.
	Identity string
	// LeaseNamespace holds the profile's heartbeat Lease; empty disables it.
	LeaseNamespace string
	// Heartbeat is how often the Lease is renewed and the profile looked at (default 10s).
	Heartbeat time.Duration
	// SpawnWait bounds how long an action waits, after a mutating step whose
	// page announced new pages (browser.SpawnReporter, ActResult.Spawns), for
	// those pages to be adopted, before the next mutating step's guards or the
	// action's result (default 2s). A step that announced nothing is not waited
	// for at all.
	SpawnWait time.Duration
	// SpawnSettle is the blind settle kept for what cannot tell: a driver that
	// does not implement browser.SpawnReporter (or a step it could not watch,
	// ActResult.SpawnsUnknown), a step that failed or was cut short by the
	// session's end. The action then waits this long after the step for the
	// browser to report a spawn, then for the adopter to handle every event
	// reported so far (default 150ms).
	SpawnSettle time.Duration
	// OpenSettle is how long the first status write of an Open window may wait
	// for its page's title, so that the open, the url and the title are one
	// write (default 0: at once, since whoever opened the page waits for
	// phase Open; the title follows within ObserveInterval).
	OpenSettle time.Duration
	// SpawnStatusSettle is the same for a Spawned window, whose adoption the
	// create already announced (default 1s; negative: write at once).
	SpawnStatusSettle time.Duration
	// ObserveInterval is the least time between two status writes of a window
	// that only change its page's url, title or browser window (default 1s;
	// negative: write every change).
	ObserveInterval time.Duration
	// WindowWorkers is how many windows are reconciled at once (default 16).
	WindowWorkers int
	// KeepaliveWarnAfter is how long a session may be driven on a host that ends
	// idle connections before actions warn no_keepalive (default 10m).
	KeepaliveWarnAfter time.Duration
}

// Agent wires the agent role into a manager.
type Agent struct {
	opts     Options
	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder
	model    *model
	wake     chan event.GenericEvent
	// profileDirty asks the profile loop to publish the model soon.
	profileDirty chan struct{}
	// pool mirrors the profile's spec.pool: one browser context per session.
	pool atomic.Bool
	// closing runs one cleanup of an ended session at a time (a pool
	// context's disposal, the batch close), see closeEnded; the session's
	// other windows wait for it.
	closing singleflight.Group
	// letGo remembers the deleted windows whose page finalizer this agent
	// removed until its cache sees them go: a reconcile of one in between (a
	// session or browser event) has nothing left to do.
	letGo patch.LetGo
	// deletions tells letGoClosed when the cache shows a window's deletion.
	deletions deletions
	// lettingGo holds the uid of each window whose page finalizer is being
	// removed, by letGoClosed or by the window's reconcile: one writer at a
	// time (claimLetGo).
	lettingGo sync.Map
	// profileRead is set once the profile was read: until then whether pages
	// must be isolated per session (pool) is not known, and nothing opens.
	profileRead atomic.Bool
	// barrier asks the adopter to handle every event received so far.
	barrier chan chan struct{}
	// fence stops a session's running action before its cleanup closes
	// anything (closeEnded).
	fence fence
	// observations binds refs to the session, page and document they came from.
	observations *observations
	// spawnWatch collects the windows adopted for a session while one of its
	// actions runs.
	spawnWatch spawnWatch
	// holds are the window statuses held back to fold a page's stages into one write.
	holds statusHolds
	// ownersSynced reports whether every window of the cache's first list is
	// in the model's owners (trackOwners).
	ownersSynced func() bool
}

// CacheOptions restricts a manager's cache of BrowserWindows and BrowserActions
// to this profile's (label tabwarden.dev/profile, set by the controller), and
// keeps of BrowserActions and BrowserSessions what the agent reads.
func CacheOptions(profile string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&twv1.BrowserWindow{}:  {Label: labels.SelectorFromSet(labels.Set{twv1.ProfileLabel: profile})},
		&twv1.BrowserAction{}:  {Label: labels.SelectorFromSet(labels.Set{twv1.ProfileLabel: profile}), Transform: index.SlimAction},
		&twv1.BrowserSession{}: {Transform: SlimSession},
	}}
}

// SlimSession is the agent's cache transform of BrowserSessions. The agent
// caches every session of the cluster (placement is in status, which no
// selector reaches) and never writes one; of a session's status it reads the
// placement, the phase, the end reason and whether the Admitted condition is
// False. The controller's other conditions are dropped, and the message of
// Admitted: each carries a message, a few hundred bytes while a session cleans
// up, which at 10,000 sessions was the larger part of a cached session.
func SlimSession(o any) (any, error) {
	if s, ok := o.(*twv1.BrowserSession); ok {
		s.ManagedFields = nil
		var kept []metav1.Condition
		for _, c := range s.Status.Conditions {
			if c.Type == twv1.AdmittedCondition {
				c.Message = ""
				kept = []metav1.Condition{c}
				break
			}
		}
		s.Status.Conditions = kept
	}
	return index.Intern(o)
}

// Setup adds the agent's reconciler and runnables to mgr. The manager's cache
// should be built with CacheOptions(opts.Profile).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (*Agent, error) {
	if opts.Profile == "" || opts.Browser == nil {
		return nil, errors.New("agent: a profile name and a browser driver are required")
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 10 * time.Second
	}
	if opts.SpawnSettle == 0 {
		opts.SpawnSettle = 150 * time.Millisecond
	}
	if opts.SpawnWait == 0 {
		opts.SpawnWait = 2 * time.Second
	}
	if opts.SpawnStatusSettle == 0 {
		opts.SpawnStatusSettle = time.Second
	}
	if opts.ObserveInterval == 0 {
		opts.ObserveInterval = time.Second
	}
	if opts.WindowWorkers <= 0 {
		opts.WindowWorkers = 16
	}
	if opts.KeepaliveWarnAfter == 0 {
		opts.KeepaliveWarnAfter = 10 * time.Minute
	}
	if opts.Identity == "" {
		opts.Identity = "agent-" + opts.Profile
	}
	a := &Agent{
		opts:         opts,
		client:       mgr.GetClient(),
		reader:       mgr.GetAPIReader(),
		recorder:     mgr.GetEventRecorder("tabwarden-agent"),
		model:        newModel(),
		wake:         make(chan event.GenericEvent, 1024),
		profileDirty: make(chan struct{}, 1),
		barrier:      make(chan chan struct{}),
		observations: newObservations(),
		spawnWatch:   spawnWatch{m: map[string]*[]twv1.SpawnedWindow{}},
		holds:        statusHolds{keep: max(opts.ObserveInterval, 0)},
	}
	if err := index.Setup(ctx, mgr.GetFieldIndexer(), index.WindowSessionRef, index.ActionSessionRef, index.SessionProfileName); err != nil {
		return nil, err
	}
	if err := a.trackOwners(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}
	if err := (&WindowReconciler{agent: a}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&ActionReconciler{agent: a}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := mgr.Add(&keepalive{agent: a}); err != nil {
		return nil, err
	}
	if err := mgr.Add(&adopter{agent: a}); err != nil {
		return nil, err
	}
	if err := mgr.Add(&profileLoop{agent: a, informers: mgr.GetCache()}); err != nil {
		return nil, err
	}
	if mon, ok := opts.Browser.(browser.SessionMonitor); ok {
		if err := mgr.Add(&monitorLoop{agent: a, monitor: mon, informers: mgr.GetCache(), dirty: make(chan struct{}, 1)}); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// metrics records the agent's metrics under its profile and driver.
func (a *Agent) metrics() metrics.Agent { return metrics.For(a.opts.Profile, string(a.opts.Driver)) }

// pairing is a driver that a browser must pair with before it can connect
// (the extension driver).
type pairing interface{ Paired() bool }

// paired reports whether the driver has a browser to reach: an extension
// paired with its host, or any driver with nothing to pair.
func (a *Agent) paired() bool {
	if p, ok := a.opts.Browser.(pairing); ok {
		return p.Paired()
	}
	return true
}

// ownerOf finds the window a page belongs to from the driver's records: never
// from a tab id that someone wrote into an object. It returns the window and the
// key the page is recorded under.
func (a *Agent) ownerOf(ctx context.Context, pageID string) (owner, string, bool) {
	if pageID == "" {
		return owner{}, "", false
	}
	r, ok := a.model.record(pageID)
	if !ok {
		return owner{}, "", false
	}
	o, ok := a.windowOfKey(ctx, r.Key)
	return o, r.Key, ok
}

// windowOfKey names the window a record's key (its uid) belongs to: known
// from the open, adoption or bind that made the record, or from the cache
// (trackOwners). A key is a uid, never a name, so a record never follows a name
// that was deleted and made again.
func (a *Agent) windowOfKey(_ context.Context, key string) (owner, bool) {
	return a.model.knownOwner(key)
}

// pageOf is the page a window has authority over, from the driver's records:
// the page opened for it, the spawned page adopted under it, or the tab bound
// to it. The tab ids in its spec or status are claims; this is the proof.
func (a *Agent) pageOf(w *twv1.BrowserWindow) (browser.Record, bool) {
	page, ok := a.model.pageOfKey(string(w.UID))
	if !ok {
		return browser.Record{}, false
	}
	r, ok := a.model.record(page)
	if !ok || r.Key != string(w.UID) {
		return browser.Record{}, false
	}
	switch w.Spec.Source {
	case twv1.SourceOpen:
		ok = r.Kind == browser.RecordOpened
	case twv1.SourceSpawned:
		ok = r.Kind == browser.RecordSpawned && w.Spec.Spawn != nil && w.Spec.Spawn.TabID == page
	case twv1.SourceBind:
		ok = r.Kind == browser.RecordBound && w.Spec.BindTabID == page
	}
	return r, ok
}

// SpawnedWindowName is the deterministic name of the window adopting a spawned
// page, so that adopting the same page twice (after a restart, or a snapshot
// racing an event) finds the object already there instead of making another.
func SpawnedWindowName(session, profile, pageID string) string {
	sum := sha256.Sum256([]byte(profile + "/" + pageID))
	prefix := session
	if len(prefix) > 230 {
		prefix = prefix[:230]
	}
	return strings.TrimSuffix(prefix, "-") + "-spawn-" + hex.EncodeToString(sum[:])[:10]
}

// ActionKey is the key an action on a window passes to browser.Act, so that a
// page appearing without an opener while it runs is attributed to its session.
func ActionKey(namespace, session, window string) string {
	return namespace + "/" + session + "/" + window
}

func parseActionKey(k string) (owner, bool) {
	parts := strings.Split(k, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return owner{}, false
	}
	return owner{Namespace: parts[0], Session: parts[1], Window: parts[2]}, true
}

// confirmRecord returns the window's record. When the agent's mirror has none,
// it asks the driver itself, since the mirror may lag a call that failed after
// the driver recorded (a command that timed out, an adoption interrupted by a
// restart); a Spawned window is offered for adoption again first. ok is false
// only when the driver, reachable, has no record for the window; the error
// wraps browser.ErrNotConnected when it cannot be asked now.
func (a *Agent) confirmRecord(ctx context.Context, w *twv1.BrowserWindow) (browser.Record, bool, error) {
	if r, ok := a.pageOf(w); ok {
		return r, true, nil
	}
	if ready, _ := a.model.state(); !ready || !a.model.knowsRecords() {
		return browser.Record{}, false, fmt.Errorf("window %s: the driver's records: %w", w.Name, browser.ErrNotConnected)
	}
	if w.Spec.Source == twv1.SourceSpawned && w.Spec.Spawn != nil {
		parent, err := a.spawnParent(ctx, w)
		if err == nil {
			err = a.recordAdoption(ctx, w, parent)
		}
		if errors.Is(err, browser.ErrNotConnected) {
			return browser.Record{}, false, err
		}
	}
	if l, ok := a.opts.Browser.(browser.RecordLookup); ok {
		// One key, not a snapshot of every page and record: at scale every
		// window deleted after its page closed comes here.
		r, found, err := l.RecordOf(ctx, string(w.UID))
		if err != nil {
			return browser.Record{}, false, err
		}
		if found {
			a.model.putRecord(r)
		}
		r, ok := a.pageOf(w)
		return r, ok, nil
	}
	snap, err := a.opts.Browser.Snapshot(ctx)
	if err != nil {
		return browser.Record{}, false, err
	}
	for _, r := range snap.Records {
		if r.Key == string(w.UID) {
			a.model.putRecord(r)
			break
		}
	}
	r, ok := a.pageOf(w)
	return r, ok, nil
}

// adopt makes page p, spawned by a page of o's session, a Spawned BrowserWindow
// owned by that session, and records it in the driver under the window's uid;
// parent is the key the driver saw the spawn come from. Idempotent: the name is
// derived from the page. seen is when the browser reported the page (for the
// adoption latency metric).
func (a *Agent) adopt(ctx context.Context, p browser.Page, o owner, parent, reason string, seen time.Time) error {
	log := ctrl.LoggerFrom(ctx)
	s := &twv1.BrowserSession{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Session}, s); err != nil {
		return fmt.Errorf("getting session %s/%s of spawned page %s: %w", o.Namespace, o.Session, p.ID, err)
	}
	if s.Status.ProfileName != a.opts.Profile {
		return fmt.Errorf("session %s/%s of spawned page %s is placed on profile %q, not %q", o.Namespace, o.Session, p.ID, s.Status.ProfileName, a.opts.Profile)
	}
	w := &twv1.BrowserWindow{}
	w.Namespace, w.Name = o.Namespace, SpawnedWindowName(o.Session, a.opts.Profile, p.ID)
	w.Labels = map[string]string{
		twv1.SessionLabel: o.Session,
		twv1.ProfileLabel: a.opts.Profile,
		twv1.SourceLabel:  twv1.SourceLabelValue(twv1.SourceSpawned),
	}
	w.Finalizers = []string{twv1.PageFinalizer}
	w.Spec = twv1.BrowserWindowSpec{
		SessionRef: twv1.SessionReference{Name: o.Session},
		Source:     twv1.SourceSpawned,
		Spawn: &twv1.SpawnInfo{
			TabID: p.ID, OpenerTabID: p.OpenerID, SpawnedBy: o.Window, Reason: reason, URL: truncate(p.URL, 4096),
		},
	}
	if err := controllerutil.SetControllerReference(s, w, a.client.Scheme()); err != nil {
		return err
	}
	err := a.client.Create(ctx, w)
	switch {
	case apierrors.IsAlreadyExists(err):
		// Adopted before (a restart, or a snapshot racing an event). Its record in
		// the driver may not have been written then: write it again (idempotent),
		// but only into the object this agent would have made.
		if err := a.client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return client.IgnoreNotFound(err)
		}
		if w.Spec.Source != twv1.SourceSpawned || w.Spec.Spawn == nil || w.Spec.Spawn.TabID != p.ID || w.Spec.SessionRef.Name != o.Session {
			return fmt.Errorf("adopting spawned page %s: %s/%s exists and is not its window", p.ID, w.Namespace, w.Name)
		}
		return a.recordAdoption(ctx, w, parent)
	case err != nil:
		return fmt.Errorf("adopting spawned page %s into session %s/%s: %w", p.ID, o.Namespace, o.Session, err)
	}
	a.metrics().SpawnAdopted(reason, seen)
	if err := a.recordAdoption(ctx, w, parent); err != nil {
		// The window's own reconcile retries and, if the driver still refuses,
		// says so in its conditions; the page is never touched meanwhile.
		log.Error(err, "Recording the adopted page in the driver failed", "page", p.ID, "window", w.Name)
	}
	a.spawnWatch.note(o.Namespace, o.Session, p.ID, twv1.SpawnedWindow{Name: w.Name, URL: truncate(p.URL, 4096)})
	// No Event per spawn: the Spawned BrowserWindow is the durable record of the
	// adoption (spec.spawn: opener, window, reason, url), and the session's
	// SpawnsAcknowledged=False (with the controller's Warning Event when a hold
	// begins) tells the user to acknowledge it. An Event here would double the
	// API writes of every spawn.
	log.Info("Adopted spawned page", "session", o.Session, "window", w.Name, "page", p.ID, "opener", p.OpenerID, "reason", reason)
	a.wakeWindow(w.Namespace, w.Name)
	return nil
}

// recordAdoption asks the driver to record a Spawned window's page under the
// window's uid; the driver checks that it saw the spawn come from parent.
func (a *Agent) recordAdoption(ctx context.Context, w *twv1.BrowserWindow, parent string) error {
	key, page := string(w.UID), w.Spec.Spawn.TabID
	a.model.rememberOwner(key, owner{Namespace: w.Namespace, Session: w.Spec.SessionRef.Name, Window: w.Name})
	if err := a.opts.Browser.Adopt(ctx, browser.AdoptRequest{Key: key, ID: page, Parent: parent}); err != nil {
		return err
	}
	a.model.putRecord(browser.Record{Key: key, Page: page, Kind: browser.RecordSpawned, Parent: parent})
	return nil
}

// spawnParent is the key a Spawned window's page was spawned from, as its spec
// says: the uid of the window named in spec.spawn.spawnedBy (same namespace and
// session), or the action key for a spawn attributed to a running action. The
// driver checks the claim against what it observed.
func (a *Agent) spawnParent(ctx context.Context, w *twv1.BrowserWindow) (string, error) {
	sp := w.Spec.Spawn
	if sp.Reason == ReasonDuringAction {
		return ActionKey(w.Namespace, w.Spec.SessionRef.Name, sp.SpawnedBy), nil
	}
	parent := &twv1.BrowserWindow{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: sp.SpawnedBy}, parent); err != nil {
		return "", fmt.Errorf("spawnedBy window %q: %w", sp.SpawnedBy, err)
	}
	if parent.Spec.SessionRef.Name != w.Spec.SessionRef.Name {
		return "", fmt.Errorf("spawnedBy window %q belongs to session %q, not %q", sp.SpawnedBy, parent.Spec.SessionRef.Name, w.Spec.SessionRef.Name)
	}
	return string(parent.UID), nil
}

// Spawn reasons recorded in spec.spawn.reason.
const (
	ReasonOpener       = "opener"
	ReasonDuringAction = "during_action"
)

func (a *Agent) wakeWindow(namespace, name string) {
	w := &twv1.BrowserWindow{}
	w.Namespace, w.Name = namespace, name
	a.wake <- event.GenericEvent{Object: w}
}

// wakePage wakes the window that owns a page, if any.
func (a *Agent) wakePage(ctx context.Context, id string) {
	if o, _, ok := a.ownerOf(ctx, id); ok {
		a.wakeWindow(o.Namespace, o.Window)
	}
}

// wakeAll wakes every window of the profile.
func (a *Agent) wakeAll(ctx context.Context) {
	var list twv1.BrowserWindowList
	if err := a.client.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		a.wakeWindow(list.Items[i].Namespace, list.Items[i].Name)
	}
}

func (a *Agent) markProfileDirty() {
	select {
	case a.profileDirty <- struct{}{}:
	default:
	}
}
