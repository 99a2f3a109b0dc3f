package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/k8s/conditions"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
)

// windowWrite is one window reconcile's write: the patch helper's snapshot,
// taken when the reconcile starts, and at its end one patch of what changed
// (finish), which the status holds (settle.go) may hold back.
type windowWrite struct {
	a      *Agent
	helper *patch.Helper
	// before is the window as the reconcile started, for the holds.
	before *twv1.BrowserWindow
	// skip leaves every write out (skipAll); release, when set, runs once
	// the write is over (releaseAfter).
	skip    bool
	release func()
}

// startWrite snapshots w, then puts back into it a first Open status held back
// last time (see settle.go): the cache cannot show it, and this reconcile
// starts from it.
func (a *Agent) startWrite(w *twv1.BrowserWindow) *windowWrite {
	ww := &windowWrite{a: a, helper: patch.NewHelper(w, a.client), before: w.DeepCopy()}
	a.holds.restore(w)
	return ww
}

// skipStatus leaves the status out of this reconcile's writes: nothing to say.
func (ww *windowWrite) skipStatus() { ww.helper.SkipStatus() }

// skipAll leaves this reconcile with no write at all: another writer has the
// window (letGoClosed, letting it go).
func (ww *windowWrite) skipAll() { ww.skip = true }

// releaseAfter runs release once this reconcile's write is over (a claim
// held for it: claimLetGo).
func (ww *windowWrite) releaseAfter(release func()) { ww.release = release }

// patchNow writes w's changes at once, ahead of the reconcile's end (the page
// finalizer, stored before a page exists that it would close).
func (ww *windowWrite) patchNow(ctx context.Context, w *twv1.BrowserWindow) error {
	return ww.helper.Patch(ctx, w)
}

// finish ends the reconcile whose outcome is result and err, with its one
// write: it sets Ready and the kstatus conditions (summarizeWindow) and, on
// success, status.observedGeneration, then patches what changed. Its status is
// left out when the patch lets the window go (patch.Released: its finalizer
// was the last; the window is then remembered in the agent's letGo), and held
// back while the status holds say it waits (the reconcile is then requeued
// when the hold ends). It returns the result and error of the reconcile.
func (ww *windowWrite) finish(ctx context.Context, w *twv1.BrowserWindow, result ctrl.Result, err error) (ctrl.Result, error) {
	if ww.release != nil {
		defer ww.release()
	}
	if ww.skip {
		return result, err
	}
	a, helper := ww.a, ww.helper
	summarizeWindow(w, err)
	if err == nil {
		w.Status.ObservedGeneration = w.Generation
	}
	if patch.Released(w, twv1.PageFinalizer) {
		helper.SkipStatus()
		a.holds.forget(w.UID)
	}
	now := time.Now()
	_, statusChanged := helper.Changes(w)
	if statusChanged && err == nil {
		if wait := a.hold(ww.before, w, now); wait > 0 {
			helper.SkipStatus()
			statusChanged = false
			if result.RequeueAfter == 0 || wait < result.RequeueAfter {
				result.RequeueAfter = wait
			}
		}
	}
	perr := helper.Patch(ctx, w)
	if perr == nil && statusChanged && !helper.Skipped() {
		a.wrote(w, now)
	}
	if perr = a.letGo.Patched(w, twv1.PageFinalizer, perr); perr != nil {
		err = kerrors.NewAggregate([]error{err, perr})
	}
	return result, err
}

func setWindowCondition(w *twv1.BrowserWindow, typ string, status metav1.ConditionStatus, reason, msg string) {
	conditions.Set(w, typ, status, reason, msg)
}

func truncate(s string, n int) string { return conditions.Truncate(s, n) }

// summarizeWindow sets Ready: True while the page is open (or bound), and once
// tabwarden closed it (disposition Close, or its session's cleanup: done);
// False with the reason of whatever holds or ended it otherwise. It sets the
// kstatus conditions too: Reconciling=True while the page is being opened or
// closed, Stalled=True once the page was closed outside tabwarden (nothing
// reopens it) or a bound tab is gone.
func summarizeWindow(w *twv1.BrowserWindow, err error) {
	w.Status.Disposition = w.EffectiveDisposition()
	reconciling, stalled, msg := "", "", ""
	defer func() { conditions.Kstatus(w, reconciling, stalled, msg) }()
	if err != nil {
		setWindowCondition(w, twv1.ReadyCondition, metav1.ConditionFalse, "ReconcileError", err.Error())
		return
	}
	typ := twv1.OpenedCondition
	if w.Spec.Source == twv1.SourceBind {
		typ = twv1.BoundCondition
	}
	c := apimeta.FindStatusCondition(w.Status.Conditions, typ)
	switch {
	case c == nil:
		msg = "Waiting for the agent to realize the window"
		setWindowCondition(w, twv1.ReadyCondition, metav1.ConditionFalse, twv1.ReasonOpening, msg)
		reconciling = twv1.ReasonOpening
		return
	case w.Status.Phase == twv1.WindowClosed:
		setWindowCondition(w, twv1.ReadyCondition, metav1.ConditionTrue, twv1.ReasonClosed, c.Message)
		return
	}
	setWindowCondition(w, twv1.ReadyCondition, c.Status, c.Reason, c.Message)
	switch {
	case w.Status.Phase == twv1.WindowGone || c.Reason == twv1.ReasonBoundTabGone || c.Reason == twv1.ReasonBoundTabNotFound:
		stalled, msg = c.Reason, c.Message
	case w.Status.Phase == twv1.WindowPending || w.Status.Phase == twv1.WindowClosing:
		reconciling, msg = c.Reason, c.Message
	}
}

// unacknowledgedOf returns the names of spawned siblings that may still be open
// and have no disposition.
func unacknowledgedOf(windows []twv1.BrowserWindow) []string {
	var out []string
	for i := range windows {
		w := &windows[i]
		if w.Unacknowledged() {
			out = append(out, w.Name)
		}
	}
	sort.Strings(out)
	return out
}

// heldMessage says why an Open window is held and how to release it.
func heldMessage(s *twv1.BrowserSession, unacked []string) string {
	return fmt.Sprintf("Held: session %q has %d spawned window(s) with no disposition (%s). Say keep or close for each, e.g.: %s (or \"Keep\")",
		s.Name, len(unacked), strings.Join(unacked, ", "), hint.AckAll(s.Namespace, unacked, twv1.DispositionClose))
}

// pinnedWindow is the browser window Tab placement opens into, never the one
// that has focus now: spec.pinnedWindowId, else the window the session's first
// Tab page pinned (status.pinnedWindowId, recorded once when each Tab page
// opened: the window it was asked for, or for the first page the one it landed
// in; it outlives the page). Empty before the first Tab page.
func pinnedWindow(s *twv1.BrowserSession, siblings []twv1.BrowserWindow) string {
	if s.Spec.PinnedWindowID != "" {
		return s.Spec.PinnedWindowID
	}
	var first *twv1.BrowserWindow
	pin := ""
	for i := range siblings {
		w := &siblings[i]
		if w.Spec.Source != twv1.SourceOpen || w.Status.OwnsWindow {
			continue
		}
		p := w.Status.PinnedWindowID
		if p == "" {
			p = w.Status.WindowID
		}
		if p == "" {
			continue
		}
		if first == nil || earlier(w, first) {
			first, pin = w, p
		}
	}
	return pin
}

// earlier orders windows by creation, then name.
func earlier(a, b *twv1.BrowserWindow) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Name < b.Name
}

// setPlaced records where a Tab placement page was asked to open and whether it
// did: Placed=True, or False (placement_not_pinned) naming both windows and why.
func setPlaced(w *twv1.BrowserWindow, requested string, page browser.Page) {
	if requested == "" {
		// The first Tab page pins the window it opened in.
		w.Status.PinnedWindowID = page.WindowID
		setWindowCondition(w, twv1.PlacedCondition, metav1.ConditionTrue, twv1.ReasonPinned,
			fmt.Sprintf("First tab of the session: pins window %s; the session's later tabs open there", page.WindowID))
		return
	}
	w.Status.PinnedWindowID = requested
	if page.WindowID == requested {
		setWindowCondition(w, twv1.PlacedCondition, metav1.ConditionTrue, twv1.ReasonPinned,
			fmt.Sprintf("Opened in the session's pinned window %s", requested))
		return
	}
	why := page.Misplaced
	if why == "" {
		why = "the driver placed it there"
	}
	setWindowCondition(w, twv1.PlacedCondition, metav1.ConditionFalse, twv1.ReasonPlacementNotPinned,
		fmt.Sprintf("Asked for the session's pinned window %s, opened in window %s instead: %s", requested, page.WindowID, why))
}
