package fuzz

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

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
	w.heal()
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
	// The controller's view of the agent and the agent's own converge: with
	// every link healed, the profile is Connected again (not AgentLost).
	p := &twv1.BrowserProfile{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: w.profile}, p); err != nil {
		return fmt.Errorf("profile %s: %v", w.profile, err)
	}
	if c := apimeta.FindStatusCondition(p.Status.Conditions, twv1.ConnectedCondition); c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("profile %s is not Connected: %+v", w.profile, c)
	}
	windows := w.apiWindows()
	uids := map[string]twv1.BrowserWindow{}
	spawned := map[string]string{} // page → session of its Spawned window
	for _, x := range windows {
		uids[string(x.UID)] = x
		if x.Spec.Spawn != nil && !x.Refused() {
			if other, twice := spawned[x.Spec.Spawn.TabID]; twice {
				return fmt.Errorf("page %s is adopted twice: by window %s and by one of session %s", x.Spec.Spawn.TabID, x.Name, other)
			}
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
