package agent

import (
	"context"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
)

// lostDriver is a driver whose only seam in use is browser.LostRecords, backed
// by a real ledger.
type lostDriver struct {
	browser.Browser
	l *ledger.Ledger
}

func (d lostDriver) LostRecord(key string) (browser.Record, bool) { return d.l.LostRecord(key) }
func (d lostDriver) ForgetLost(key string) error                  { return d.l.ForgetLost(key) }

// TestReconcileLost: after a browser restart (the ledger's records are of
// another instance), an Open window forgets its page and opens again at its
// last url; Spawned and Bound windows end Gone, reason BrowserRestarted; a
// window whose page the user closed before the restart stays Gone as it was.
// Each lost record goes once the window's status no longer names its page.
func TestReconcileLost(t *testing.T) {
	l, err := ledger.New("")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []error{
		l.Opened("uid-open", "P1"),
		l.Adopt(browser.AdoptRequest{Key: "uid-spawned", ID: "S1", Parent: "uid-open"}, "P1", ""),
		l.Bind(browser.BindRequest{Key: "uid-bound", ID: "B1"}, "", ""),
		l.Opened("uid-closed", "P2"),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if _, err := l.SetInstance("new-browser"); err != nil {
		t.Fatal(err)
	}
	a := &Agent{opts: Options{Profile: "p", Browser: lostDriver{l: l}}, model: newModel(), recorder: &events.FakeRecorder{}}
	r := &WindowReconciler{agent: a}
	window := func(uid string, src twv1.WindowSource, tab string, phase twv1.WindowPhase) *twv1.BrowserWindow {
		w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)}}
		w.Spec.Source, w.Spec.URL = src, "http://127.0.0.1:1/landing"
		w.Status.TabID, w.Status.Phase, w.Status.URL = tab, phase, "http://127.0.0.1:1/form"
		return w
	}
	ctx := context.Background()
	reason := func(w *twv1.BrowserWindow, typ string) string {
		if c := apimeta.FindStatusCondition(w.Status.Conditions, typ); c != nil {
			return c.Reason
		}
		return ""
	}

	open := window("uid-open", twv1.SourceOpen, "P1", twv1.WindowOpen)
	if err := r.reconcileLost(ctx, open); err != nil {
		t.Fatal(err)
	}
	if open.Status.Phase != twv1.WindowPending || open.Status.TabID != "" || reason(open, twv1.OpenedCondition) != twv1.ReasonBrowserRestarted {
		t.Fatalf("Open window after a restart: phase %s tab %q reason %q; want Pending, no tab, %s", open.Status.Phase, open.Status.TabID, reason(open, twv1.OpenedCondition), twv1.ReasonBrowserRestarted)
	}
	if got := reopenURL(open); got != "http://127.0.0.1:1/form" {
		t.Fatalf("the Open window reopens at %q, want its last url", got)
	}
	// Its status written, the next reconcile drops the lost record.
	if err := r.reconcileLost(ctx, open); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.LostRecord("uid-open"); ok {
		t.Fatal("the Open window's lost record outlived its settled status")
	}

	for _, c := range []struct {
		uid, tab, cond string
		src            twv1.WindowSource
	}{
		{"uid-spawned", "S1", twv1.OpenedCondition, twv1.SourceSpawned},
		{"uid-bound", "B1", twv1.BoundCondition, twv1.SourceBind},
	} {
		w := window(c.uid, c.src, c.tab, twv1.WindowOpen)
		if err := r.reconcileLost(ctx, w); err != nil {
			t.Fatal(err)
		}
		if w.Status.Phase != twv1.WindowGone || reason(w, c.cond) != twv1.ReasonBrowserRestarted || reopenURL(w) != "" {
			t.Errorf("%s window after a restart: phase %s, %s reason %q; want Gone, %s", c.src, w.Status.Phase, c.cond, reason(w, c.cond), twv1.ReasonBrowserRestarted)
		}
		if err := r.reconcileLost(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, ok := l.LostRecord(c.uid); ok {
			t.Errorf("%s window: lost record outlived its Gone status", c.src)
		}
	}

	// The user closed this page before the restart: Gone it stays, never reopened.
	closed := window("uid-closed", twv1.SourceOpen, "P2", twv1.WindowGone)
	closed.Status.Conditions = []metav1.Condition{{Type: twv1.OpenedCondition, Status: metav1.ConditionFalse, Reason: twv1.ReasonGone}}
	if err := r.reconcileLost(ctx, closed); err != nil {
		t.Fatal(err)
	}
	if closed.Status.Phase != twv1.WindowGone || reason(closed, twv1.OpenedCondition) != twv1.ReasonGone || reopenURL(closed) != "" {
		t.Fatalf("a page the user closed: phase %s reason %q reopen %q; want Gone as it was", closed.Status.Phase, reason(closed, twv1.OpenedCondition), reopenURL(closed))
	}
	if _, ok := l.LostRecord("uid-closed"); ok {
		t.Fatal("the closed window's lost record was kept")
	}
}
