package fuzz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// kind is one kind of operation.
type kind int

const (
	kSession kind = iota
	kOpen
	kSpawnPopup
	kSpawnTab
	kActSpawn
	kUserWindow
	kUserCloseUser
	kUserCloseOwned
	kBind
	kAck
	kFinish
	kDeleteSession
	kDeleteWindow
	kForgeUser
	kForgeAgent
	kToggleController
	kToggleAgent
	kToggleBrowser
	kQuiesce
	nKinds
)

var kindNames = [...]string{"session", "open", "spawn-popup", "spawn-tab", "act-spawn", "user-window", "user-close-user-tab", "user-close-owned-page", "bind", "ack", "finish", "delete-session", "delete-window", "forge-as-user", "forge-as-agent", "toggle-controller", "toggle-agent", "toggle-browser", "quiesce"}

// weights of the kinds in a random sequence.
var weights = [nKinds]int{
	kSession: 6, kOpen: 14, kSpawnPopup: 6, kSpawnTab: 6, kActSpawn: 4,
	kUserWindow: 4, kUserCloseUser: 3, kUserCloseOwned: 3, kBind: 4, kAck: 10,
	kFinish: 3, kDeleteSession: 4, kDeleteWindow: 3, kForgeUser: 1, kForgeAgent: 2,
	kToggleController: 2, kToggleAgent: 2, kToggleBrowser: 2, kQuiesce: 8,
}

// op is one operation. A and B pick among the candidates at the time it runs
// (modulo their number), so that any subsequence is still a valid sequence.
type op struct {
	K    kind
	A, B int
}

func (o op) String() string { return fmt.Sprintf("%s(%d,%d)", kindNames[o.K], o.A, o.B) }

// generate returns n random operations from seed.
func generate(seed int64, n int) []op {
	r := rand.New(rand.NewPCG(uint64(seed), 0x7ab3a4de))
	total := 0
	for _, w := range weights {
		total += w
	}
	ops := make([]op, n)
	for i := range ops {
		x := r.IntN(total)
		k := kind(0)
		for ; x >= weights[k]; k++ {
			x -= weights[k]
		}
		ops[i] = op{K: k, A: r.IntN(1 << 16), B: r.IntN(1 << 16)}
	}
	return ops
}

// --- roles ---

// role is a controller or agent running in this process until stopped.
type role struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func startRole(f func(ctx context.Context) error) *role {
	ctx, cancel := context.WithCancel(context.Background())
	r := &role{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = f(ctx)
	}()
	return r
}

// dead returns the error of a role that stopped by itself.
func (r *role) dead() error {
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
		return fmt.Errorf("stopped by itself: %v", r.err)
	default:
		return nil
	}
}

func (r *role) stop() error {
	if r == nil {
		return nil
	}
	r.cancel()
	<-r.done
	return r.err
}

// The controller is cluster-wide: one at a time in this process.
var (
	ctlMu sync.Mutex
	ctl   *role
)

func controllerUp(up bool) error {
	ctlMu.Lock()
	defer ctlMu.Unlock()
	if err := ctl.dead(); err != nil {
		return fmt.Errorf("the controller %w", err)
	}
	switch {
	case up && ctl == nil:
		cfg, err := testenv.ControllerConfig(admin)
		if err != nil {
			return err
		}
		ctl = startRole(func(ctx context.Context) error {
			return run.Controller(ctx, cfg, run.ControllerOptions{Common: run.Common{SkipNameValidation: true}})
		})
	case !up && ctl != nil:
		err := ctl.stop()
		ctl = nil
		if err != nil {
			return fmt.Errorf("the controller stopped with an error: %w", err)
		}
	}
	return nil
}

func controllerIsUp() bool {
	ctlMu.Lock()
	defer ctlMu.Unlock()
	return ctl != nil
}

// --- the world of one episode and its reference model ---

type msession struct {
	name           string
	ended, deleted bool
}

type mwindow struct {
	name, session string
	source        twv1.WindowSource
	uid           types.UID
}

type mspawn struct{ page, session, from string }

type world struct {
	ctx     context.Context
	ns      string
	profile string
	b       *fake.Browser
	user    client.Client // the user, in a group RBAC lets write every tabwarden kind
	forger  client.Client // a stolen credential of the profile's agent
	agt     *role
	down    bool // the browser link is cut
	n       int  // names
	trace   []string

	sessions  []*msession
	windows   []*mwindow // Open and Bind windows the user created
	userTabs  map[string]bool
	userOrder []string
	spawns    []mspawn
	keepPages map[string]bool
	keepMaybe map[string]bool // acknowledged Keep after the session ended: released or closed
	userGone  map[string]bool // pages of tabwarden's the user closed
	seenPages map[string]bool // every page tabwarden had: closed at most once
}

func newWorld(ctx context.Context, attempt string) (*world, error) {
	w := &world{ctx: ctx, profile: "fuzz-" + attempt, b: fake.New(), userTabs: map[string]bool{}, keepPages: map[string]bool{}, keepMaybe: map[string]bool{}, userGone: map[string]bool{}, seenPages: map[string]bool{}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fuzz-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		return nil, err
	}
	w.ns = ns.Name
	ucfg, err := testenv.UserConfig(admin, "fuzz-user", userGroup)
	if err != nil {
		return nil, err
	}
	if w.user, err = client.New(ucfg, client.Options{Scheme: run.Scheme()}); err != nil {
		return nil, err
	}
	acfg, err := testenv.AgentConfig(admin, w.profile)
	if err != nil {
		return nil, err
	}
	if w.forger, err = client.New(acfg, client.Options{Scheme: run.Scheme()}); err != nil {
		return nil, err
	}
	if err := testenv.EnsureProfile(ctx, k8s, w.profile, twv1.DriverFake); err != nil {
		return nil, err
	}
	// The user has a window open before anything starts.
	w.userWindow(2)
	if err := controllerUp(true); err != nil {
		return nil, err
	}
	w.agentUp(true)
	return w, nil
}

func (w *world) agentUp(up bool) {
	switch {
	case up && w.agt == nil:
		cfg, err := testenv.AgentConfig(admin, w.profile)
		if err != nil {
			panic(err)
		}
		w.agt = startRole(func(ctx context.Context) error {
			return run.Agent(ctx, cfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
				Profile: w.profile, Driver: twv1.DriverFake, Browser: w.b, LeaseNamespace: access.SystemNamespace, Heartbeat: time.Second,
			}})
		})
	case !up && w.agt != nil:
		_ = w.agt.stop()
		w.agt = nil
	}
}

func (w *world) close() {
	w.agentUp(false)
}

// stats counts what the operations did, across episodes.
var stats = map[string]int{}

func (w *world) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf(format, args...))
}

func (w *world) name(prefix string) string {
	w.n++
	return fmt.Sprintf("%s-%d", prefix, w.n)
}

func (w *world) userWindow(n int) {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://user.example/%d", w.n*10+i)
	}
	w.n++
	_, ids := w.b.UserOpenWindow(urls...)
	for _, id := range ids {
		w.userTabs[id] = true
		w.userOrder = append(w.userOrder, id)
	}
}

func (w *world) active() []*msession {
	var out []*msession
	for _, s := range w.sessions {
		if !s.ended {
			out = append(out, s)
		}
	}
	return out
}

func (w *world) sessionNamed(name string) *msession {
	for _, s := range w.sessions {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (w *world) openUserTabs() []string {
	var out []string
	for _, id := range w.userOrder {
		if w.userTabs[id] {
			out = append(out, id)
		}
	}
	return out
}

// apiWindows lists the namespace's windows, sorted by name.
func (w *world) apiWindows() []twv1.BrowserWindow {
	var l twv1.BrowserWindowList
	if err := k8s.List(w.ctx, &l, client.InNamespace(w.ns)); err != nil {
		return nil
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// livePages are windows of active sessions whose page is open now: the pages
// that can spawn, be acted on or be closed by the user.
func (w *world) livePages(sources ...twv1.WindowSource) []twv1.BrowserWindow {
	var out []twv1.BrowserWindow
	for _, x := range w.apiWindows() {
		s := w.sessionNamed(x.Spec.SessionRef.Name)
		if s == nil || s.ended || !x.DeletionTimestamp.IsZero() || x.Status.Phase != twv1.WindowOpen || x.Status.TabID == "" {
			continue
		}
		if x.Spec.Disposition == twv1.DispositionClose || !slices.Contains(sources, x.Spec.Source) || !w.b.HasPage(x.Status.TabID) {
			continue
		}
		out = append(out, x)
	}
	return out
}

func pick[T any](xs []T, i int) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	return xs[i%len(xs)], true
}

func mergePatch(s string) client.Patch {
	return client.RawPatch(types.MergePatchType, []byte(s))
}

// apply runs one operation. An error is an invariant the operation itself
// proves false (a forged object the API admitted); refusals the design expects
// are only traced.
func (w *world) apply(o op) error {
	ctx := w.ctx
	switch o.K {
	case kSession:
		placement := twv1.PlacementWindow
		if o.B%3 == 0 {
			placement = twv1.PlacementTab
		}
		s := &twv1.BrowserSession{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name("s")},
			Spec:       twv1.BrowserSessionSpec{Thread: "fuzz", Purpose: "fuzz the whole system", ProfileName: w.profile, Placement: placement},
		}
		if err := w.user.Create(ctx, s); err != nil {
			w.logf("%s: create session: %v", o, err)
			return nil
		}
		w.sessions = append(w.sessions, &msession{name: s.Name})
		w.logf("%s: session %s (%s)", o, s.Name, placement)
	case kOpen:
		s, ok := pick(w.active(), o.A)
		if !ok {
			return nil
		}
		name := w.name("open")
		url := "https://work.example/" + name
		var d twv1.Disposition
		switch o.B % 4 {
		case 0:
			d, url = twv1.DispositionKeep, "https://work.example/keep/"+name
		case 1:
			d = twv1.DispositionTemporary
		}
		x := testenv.OpenWindow(w.ns, name, s.name, url)
		x.Spec.Disposition = d
		if err := w.user.Create(ctx, x); err != nil {
			w.logf("%s: open in %s: %v", o, s.name, err)
			return nil
		}
		w.windows = append(w.windows, &mwindow{name: name, session: s.name, source: twv1.SourceOpen, uid: x.UID})
		w.logf("%s: %s in %s %s", o, name, s.name, d)
	case kSpawnPopup, kSpawnTab:
		x, ok := pick(w.livePages(twv1.SourceOpen, twv1.SourceSpawned, twv1.SourceBind), o.A)
		if !ok {
			return nil
		}
		if x.Spec.Source == twv1.SourceBind {
			// The user's own click in a tab the session binds: the page is
			// the user's (invariant 2), never adopted, never closed.
			id, err := w.b.Spawn(x.Status.TabID, "https://user.example/"+w.name("from-bound"), o.K == kSpawnPopup)
			if err != nil {
				w.logf("%s: the user's spawn from %s: %v", o, x.Name, err)
				return nil
			}
			w.userTabs[id] = true
			w.userOrder = append(w.userOrder, id)
			w.logf("%s: the user opened %s from bound %s", o, id, x.Name)
			return nil
		}
		id, err := w.b.Spawn(x.Status.TabID, "https://spawn.example/"+w.name("spawn"), o.K == kSpawnPopup)
		if err != nil {
			w.logf("%s: spawn from %s: %v", o, x.Name, err)
			return nil
		}
		w.spawns = append(w.spawns, mspawn{page: id, session: x.Spec.SessionRef.Name, from: x.Name})
		w.logf("%s: %s spawned %s", o, x.Name, id)
	case kActSpawn:
		x, ok := pick(w.livePages(twv1.SourceOpen, twv1.SourceSpawned, twv1.SourceBind), o.A)
		if !ok || w.down {
			return nil
		}
		id, err := w.b.ActSpawn(ctx, browser.ActRequest{
			Key: agent.ActionKey(w.ns, x.Spec.SessionRef.Name, x.Name), Owner: string(x.UID), Page: x.Status.TabID,
		}, "https://spawn.example/"+w.name("act"))
		if err != nil {
			w.logf("%s: act in %s: %v", o, x.Name, err)
			return nil
		}
		w.spawns = append(w.spawns, mspawn{page: id, session: x.Spec.SessionRef.Name, from: x.Name})
		w.logf("%s: an action in %s made %s appear without an opener", o, x.Name, id)
	case kUserWindow:
		w.userWindow(1 + o.B%3)
		w.logf("%s: the user opens a window", o)
	case kUserCloseUser:
		id, ok := pick(w.openUserTabs(), o.A)
		if !ok {
			return nil
		}
		w.b.UserCloseTab(id)
		w.userTabs[id] = false
		w.logf("%s: the user closes their tab %s", o, id)
	case kUserCloseOwned:
		x, ok := pick(w.livePages(twv1.SourceOpen, twv1.SourceSpawned), o.A)
		if !ok {
			return nil
		}
		w.b.UserCloseTab(x.Status.TabID)
		w.userGone[x.Status.TabID] = true
		w.logf("%s: the user closes %s's page %s", o, x.Name, x.Status.TabID)
	case kBind:
		s, ok := pick(w.active(), o.A)
		if !ok {
			return nil
		}
		id, ok := pick(w.openUserTabs(), o.B)
		if !ok {
			return nil
		}
		x := &twv1.BrowserWindow{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name("bind")},
			Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: s.name}, Source: twv1.SourceBind, BindTabID: id},
		}
		if err := w.user.Create(ctx, x); err != nil {
			w.logf("%s: bind: %v", o, err)
			return nil
		}
		w.windows = append(w.windows, &mwindow{name: x.Name, session: s.name, source: twv1.SourceBind, uid: x.UID})
		w.logf("%s: %s binds %s in %s", o, x.Name, id, s.name)
	case kAck:
		var unacked []twv1.BrowserWindow
		for _, x := range w.apiWindows() {
			if x.Spec.Source == twv1.SourceSpawned && x.Spec.Disposition == "" && x.DeletionTimestamp.IsZero() {
				unacked = append(unacked, x)
			}
		}
		x, ok := pick(unacked, o.A)
		if !ok {
			return nil
		}
		d := []twv1.Disposition{twv1.DispositionTemporary, twv1.DispositionKeep, twv1.DispositionClose}[o.B%3]
		if err := w.user.Patch(ctx, &x, mergePatch(`{"spec":{"disposition":"`+string(d)+`"}}`)); err != nil {
			w.logf("%s: ack %s: %v", o, x.Name, err)
			return nil
		}
		// Keep promises the page only while the session runs: once it ended, the
		// cleanup may already be closing the page, or release it if the Keep is first.
		// A forged window naming the user's tab owns nothing: its Keep promises
		// nothing (the tab stays the user's, who may close it).
		usersTab := false
		if x.Spec.Spawn != nil {
			_, usersTab = w.userTabs[x.Spec.Spawn.TabID]
		}
		if s := w.sessionNamed(x.Spec.SessionRef.Name); d == twv1.DispositionKeep && x.Spec.Spawn != nil && !usersTab && w.b.HasPage(x.Spec.Spawn.TabID) {
			if s != nil && !s.ended {
				w.keepPages[x.Spec.Spawn.TabID] = true
			} else {
				w.keepMaybe[x.Spec.Spawn.TabID] = true
			}
		}
		w.logf("%s: ack %s %s", o, x.Name, d)
	case kFinish:
		s, ok := pick(w.active(), o.A)
		if !ok {
			return nil
		}
		obj := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: s.name}}
		if err := w.user.Patch(ctx, obj, mergePatch(`{"spec":{"state":"Finished"}}`)); err != nil {
			w.logf("%s: finish %s: %v", o, s.name, err)
			return nil
		}
		s.ended = true
		w.logf("%s: finish %s", o, s.name)
	case kDeleteSession:
		var live []*msession
		for _, s := range w.sessions {
			if !s.deleted {
				live = append(live, s)
			}
		}
		s, ok := pick(live, o.A)
		if !ok {
			return nil
		}
		if err := w.user.Delete(ctx, &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: s.name}}); err != nil {
			w.logf("%s: delete %s: %v", o, s.name, err)
			return nil
		}
		s.ended, s.deleted = true, true
		w.logf("%s: delete %s", o, s.name)
	case kDeleteWindow:
		var xs []twv1.BrowserWindow
		for _, x := range w.apiWindows() {
			if x.DeletionTimestamp.IsZero() {
				xs = append(xs, x)
			}
		}
		x, ok := pick(xs, o.A)
		if !ok {
			return nil
		}
		if s := w.sessionNamed(x.Spec.SessionRef.Name); x.Spec.Disposition == twv1.DispositionKeep && x.Status.TabID != "" && w.b.HasPage(x.Status.TabID) {
			// A Keep page whose window is deleted is released, not closed.
			if s != nil && !s.ended {
				w.keepPages[x.Status.TabID] = true
			} else {
				w.keepMaybe[x.Status.TabID] = true
			}
		}
		if err := w.user.Delete(ctx, &x); err != nil {
			w.logf("%s: delete window %s: %v", o, x.Name, err)
			return nil
		}
		w.logf("%s: delete window %s", o, x.Name)
	case kForgeUser:
		s, ok := pick(w.active(), o.A)
		if !ok {
			return nil
		}
		id, _ := pick(w.openUserTabs(), o.B)
		if id == "" {
			id = "tab-1"
		}
		x := w.forged(s.name, id)
		if err := w.user.Create(ctx, x); err == nil {
			return fmt.Errorf("%s: the API admitted a Spawned window the user created (naming tab %s)", o, id)
		}
		w.logf("%s: the API refused the user's forged Spawned window", o)
	case kForgeAgent:
		s, ok := pick(w.active(), o.A)
		if !ok {
			return nil
		}
		id, ok := pick(w.openUserTabs(), o.B)
		if !ok {
			return nil
		}
		x := w.forged(s.name, id)
		if err := w.forger.Create(ctx, x); err != nil {
			w.logf("%s: forge as the agent: %v", o, err)
			return nil
		}
		if o.B%2 == 0 {
			// And asks for the page to be closed at once.
			if err := w.user.Patch(ctx, x, mergePatch(`{"spec":{"disposition":"Close"}}`)); err != nil {
				w.logf("%s: ack the forged window: %v", o, err)
			}
		}
		w.logf("%s: a stolen agent credential claims the user's tab %s as %s", o, id, x.Name)
	case kToggleController:
		if err := controllerUp(!controllerIsUp()); err != nil {
			return err
		}
		w.logf("%s: controller up=%v", o, controllerIsUp())
	case kToggleAgent:
		w.agentUp(w.agt == nil)
		w.logf("%s: agent up=%v", o, w.agt != nil)
	case kToggleBrowser:
		if w.down {
			w.b.Reconnect()
		} else {
			w.b.Disconnect()
		}
		w.down = !w.down
		w.logf("%s: browser connected=%v", o, !w.down)
	case kQuiesce:
		return w.quiesce()
	}
	return nil
}

func (w *world) forged(session, tab string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name("forged"), Labels: map[string]string{twv1.ProfileLabel: w.profile}},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: session}, Source: twv1.SourceSpawned,
			Spawn: &twv1.SpawnInfo{TabID: tab, OpenerTabID: "tab-0", SpawnedBy: "nobody", Reason: "opener"},
		},
	}
}

// Quiescence is bounded: everything converges well within it on a loaded
// machine, or the system is stuck (a bug).
var quiesceTimeout = 90 * time.Second

// settledReasons are the reasons a window may stay Pending for good.
var settledReasons = []string{
	twv1.ReasonUnacknowledgedSpawns, twv1.ReasonSessionFinished, twv1.ReasonTabInUse,
	twv1.ReasonBoundTabNotFound, twv1.ReasonBoundTabGone, twv1.ReasonSpawnNotObserved, twv1.ReasonSessionUnregistered,
}

// unregistered: a window created for a session that was deleted before the
// controller ever registered it; it never had a page, and stays (refused with
// session_unregistered, or still waiting) until someone deletes it.
func unregistered(x twv1.BrowserWindow) bool {
	if x.Status.Phase != "" && x.Status.Phase != twv1.WindowPending {
		return false
	}
	if len(x.OwnerReferences) == 0 && x.Status.TabID == "" {
		// Never registered (a forged window created just before its session's
		// deletion): nothing ties it to a page, and no garbage collector to the
		// session. It is left behind, harmless.
		return true
	}
	for _, c := range x.Status.Conditions {
		if c.Status == metav1.ConditionFalse && c.Reason == twv1.ReasonSessionUnregistered {
			return true
		}
	}
	return false
}

// quiesce brings every role and the browser back, waits until every object
// has converged and checks the invariants against the model.
func (w *world) quiesce() error {
	if err := controllerUp(true); err != nil {
		return err
	}
	w.agentUp(true)
	if w.down {
		w.b.Reconnect()
		w.down = false
	}
	stats["quiescences"]++
	deadline := time.Now().Add(quiesceTimeout)
	var last error
	for time.Now().Before(deadline) {
		w.collectGarbage()
		if err := w.agt.dead(); err != nil {
			return fmt.Errorf("the agent %w", err)
		}
		if err := controllerUp(true); err != nil {
			return err
		}
		if last = w.converged(); last == nil {
			return w.check()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not converged within %v: %w", quiesceTimeout, last)
}

// collectGarbage does what a cluster's garbage collector would (envtest runs
// none): it deletes windows whose owner session is gone. A window created just
// before its session's deletion can miss the controller's cleanup, which lists
// windows from a cache; in a cluster the owner reference takes it.
func (w *world) collectGarbage() {
	sessions := map[types.UID]bool{}
	var l twv1.BrowserSessionList
	if err := k8s.List(w.ctx, &l, client.InNamespace(w.ns)); err != nil {
		return
	}
	for _, s := range l.Items {
		sessions[s.UID] = true
	}
	for _, x := range w.apiWindows() {
		for _, ref := range x.OwnerReferences {
			if ref.Kind == "BrowserSession" && !sessions[ref.UID] && x.DeletionTimestamp.IsZero() {
				stats["garbage-collected"]++
				_ = k8s.Delete(w.ctx, &x, client.Preconditions{UID: &x.UID})
			}
		}
	}
}

// converged reports what has not converged yet.
func (w *world) converged() error {
	ctx := w.ctx
	for _, s := range w.sessions {
		obj := &twv1.BrowserSession{}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: s.name}, obj)
		switch {
		case s.deleted && !apierrors.IsNotFound(err):
			return fmt.Errorf("session %s is deleted but still there (phase %s): %v", s.name, obj.Status.Phase, err)
		case s.deleted:
		case err != nil:
			return fmt.Errorf("session %s: %v", s.name, err)
		case s.ended && obj.Status.Phase != twv1.SessionPhaseFinished:
			return fmt.Errorf("session %s is finished but in phase %s", s.name, obj.Status.Phase)
		}
	}
	windows := w.apiWindows()
	uids := map[string]twv1.BrowserWindow{}
	spawned := map[string]string{} // page → session of its Spawned window
	for _, x := range windows {
		uids[string(x.UID)] = x
		if x.Spec.Spawn != nil && !x.Refused() {
			spawned[x.Spec.Spawn.TabID] = x.Spec.SessionRef.Name
		}
		if tab := x.Status.TabID; tab != "" && x.Owned() {
			w.seenPages[tab] = true
		}
		if !x.DeletionTimestamp.IsZero() {
			return fmt.Errorf("window %s is still being deleted (phase %s)", x.Name, x.Status.Phase)
		}
		if s := w.sessionNamed(x.Spec.SessionRef.Name); s != nil && s.ended {
			if unregistered(x) {
				continue
			}
			return fmt.Errorf("window %s of ended session %s is still there (phase %s): %v", x.Name, s.name, x.Status.Phase, x.Status.Conditions)
		}
		switch x.Status.Phase {
		case twv1.WindowOpen, twv1.WindowGone, twv1.WindowClosed:
			if x.Spec.Disposition == twv1.DispositionClose && x.Status.Phase == twv1.WindowOpen {
				return fmt.Errorf("window %s has disposition Close but is open", x.Name)
			}
		default:
			settled := false
			for _, c := range x.Status.Conditions {
				if c.Status == metav1.ConditionFalse && slices.Contains(settledReasons, c.Reason) {
					settled = true
				}
			}
			if !settled {
				return fmt.Errorf("window %s is %q: %v", x.Name, x.Status.Phase, x.Status.Conditions)
			}
		}
	}
	// Every spawn of a session still running is adopted into it.
	for _, sp := range w.spawns {
		s := w.sessionNamed(sp.session)
		if s.ended || !w.b.HasPage(sp.page) || w.keepPages[sp.page] {
			continue
		}
		if got, ok := spawned[sp.page]; !ok || got != sp.session {
			return fmt.Errorf("page %s spawned by %s of session %s is not adopted (adopted into %q)", sp.page, sp.from, sp.session, got)
		}
	}
	// Every record is a window that exists: a record of a deleted window is a
	// page nobody will close.
	for _, r := range w.b.Records() {
		if _, ok := uids[r.Key]; !ok {
			return fmt.Errorf("page %s is recorded (%s) under %s, a window that no longer exists", r.Page, r.Kind, r.Key)
		}
	}
	// Every page tabwarden opened or spawned is owned by a live window, or is a
	// Keep page released.
	for _, p := range w.b.Pages() {
		if !strings.HasPrefix(p.URL, "https://work.example/") && !strings.HasPrefix(p.URL, "https://spawn.example/") {
			continue
		}
		w.seenPages[p.ID] = true
		if r, ok := recordOf(w.b.Records(), p.ID); ok && r.Owned() {
			continue
		}
		if strings.HasPrefix(p.URL, "https://work.example/keep/") || w.keepPages[p.ID] || w.keepMaybe[p.ID] {
			continue
		}
		return fmt.Errorf("page %s (%s, opener %q) is open and owned by no window: leaked", p.ID, p.URL, p.OpenerID)
	}
	return nil
}

func recordOf(rs []browser.Record, page string) (browser.Record, bool) {
	for _, r := range rs {
		if r.Page == page {
			return r, true
		}
	}
	return browser.Record{}, false
}

// check verifies the invariants that hold at every quiescence.
func (w *world) check() error {
	var errs []error
	for id, open := range w.userTabs {
		if n := w.b.CloseCount(id); n != 0 {
			errs = append(errs, fmt.Errorf("tabwarden closed the user's tab %s", id))
		}
		if open && !w.b.HasPage(id) {
			errs = append(errs, fmt.Errorf("the user's tab %s is gone", id))
		}
	}
	for id := range w.keepPages {
		if !w.userGone[id] && !w.b.HasPage(id) {
			errs = append(errs, fmt.Errorf("the Keep page %s was closed", id))
		}
	}
	for id := range w.seenPages {
		if n := w.b.CloseCount(id); n > 1 {
			errs = append(errs, fmt.Errorf("page %s closed %d times", id, n))
		}
	}
	for _, x := range w.windows {
		if n := w.b.OpenCount(string(x.uid)); n > 1 {
			errs = append(errs, fmt.Errorf("window %s opened %d pages", x.name, n))
		}
	}
	return errors.Join(errs...)
}

// end deletes every session and checks that nothing of tabwarden's is left:
// no record, no window, no page but the user's and the released Keep pages.
func (w *world) end() error {
	for _, s := range w.sessions {
		if s.deleted {
			continue
		}
		if err := w.user.Delete(w.ctx, &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: s.name}}); client.IgnoreNotFound(err) != nil {
			return err
		}
		s.ended, s.deleted = true, true
	}
	w.logf("end: every session deleted")
	if err := w.quiesce(); err != nil {
		return err
	}
	if rs := w.b.Records(); len(rs) > 0 {
		return fmt.Errorf("records left after every session ended: %+v", rs)
	}
	for _, x := range w.apiWindows() {
		if !unregistered(x) {
			return fmt.Errorf("window %s left after every session ended: %s %v", x.Name, x.Status.Phase, x.Status.Conditions)
		}
	}
	return nil
}
