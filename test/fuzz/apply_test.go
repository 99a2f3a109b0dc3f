package fuzz

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

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
	case kCutAPI:
		// A partition between the agent and the API server: nothing passes,
		// nobody is told; what was sent flows when it heals.
		if w.api.Down() {
			w.api.Heal()
		} else {
			w.api.Cut()
		}
		w.logf("%s: agent↔API server partitioned=%v", o, w.api.Down())
	case kDropAPI:
		// The API server unreachable from the agent: connections drop, new
		// ones are refused until it heals.
		w.apiDropped = !w.apiDropped
		if w.apiDropped {
			w.api.Drop()
		} else {
			w.api.Heal()
		}
		w.logf("%s: agent↔API server dropped=%v", o, w.apiDropped)
	case kLossyAPI:
		// A lossy path: 5 % of the segments arrive a retransmission late.
		w.lossy = !w.lossy
		if w.lossy {
			w.api.Lossy(0.05, 200*time.Millisecond, uint64(o.A))
		} else {
			w.api.Lossy(0, 0, 0)
		}
		w.logf("%s: agent↔API server lossy=%v", o, w.lossy)
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
