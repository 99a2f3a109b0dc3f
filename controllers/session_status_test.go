package controllers

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
)

func win(name string, src twv1.WindowSource, d twv1.Disposition, phase twv1.WindowPhase) twv1.BrowserWindow {
	w := twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Name: name}}
	w.Spec.Source, w.Spec.Disposition, w.Status.Phase = src, d, phase
	if src == twv1.SourceSpawned {
		w.Spec.Spawn = &twv1.SpawnInfo{TabID: "t-" + name}
	}
	return w
}

func TestCountWindows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		windows []twv1.BrowserWindow
		want    twv1.WindowCounts
	}{
		{"empty", nil, twv1.WindowCounts{}},
		{"one of each", []twv1.BrowserWindow{
			win("o", twv1.SourceOpen, "", twv1.WindowOpen),
			win("s", twv1.SourceSpawned, "", twv1.WindowOpen),
			win("b", twv1.SourceBind, "", twv1.WindowOpen),
		}, twv1.WindowCounts{Opened: 1, Spawned: 1, Bound: 1, Unacknowledged: 1, Live: 3}},
		{"acknowledged and closed spawns do not count as unacknowledged", []twv1.BrowserWindow{
			win("kept", twv1.SourceSpawned, twv1.DispositionKeep, twv1.WindowOpen),
			win("gone", twv1.SourceSpawned, "", twv1.WindowGone),
			win("closed", twv1.SourceSpawned, twv1.DispositionClose, twv1.WindowClosed),
		}, twv1.WindowCounts{Spawned: 3, Live: 1}},
		{"unknown pages are live and may be unacknowledged", []twv1.BrowserWindow{
			win("u", twv1.SourceSpawned, "", twv1.WindowUnknown),
			win("p", twv1.SourceOpen, "", twv1.WindowPending),
		}, twv1.WindowCounts{Opened: 1, Spawned: 1, Unacknowledged: 1, Live: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(countWindows(tc.windows)).To(Equal(tc.want))
		})
	}
}

func TestDirtyWindows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		windows []twv1.BrowserWindow
		want    []string
	}{
		{"open temporary page is dirty", []twv1.BrowserWindow{win("t", twv1.SourceOpen, "", twv1.WindowOpen)}, []string{"t"}},
		{"keep pages and bound tabs are not", []twv1.BrowserWindow{
			win("k", twv1.SourceOpen, twv1.DispositionKeep, twv1.WindowOpen),
			win("b", twv1.SourceBind, "", twv1.WindowOpen),
		}, nil},
		{"closed and gone pages are not", []twv1.BrowserWindow{
			win("c", twv1.SourceOpen, "", twv1.WindowClosed),
			win("g", twv1.SourceSpawned, "", twv1.WindowGone),
		}, nil},
		{"an unreachable page may be open: dirty", []twv1.BrowserWindow{win("u", twv1.SourceSpawned, "", twv1.WindowUnknown)}, []string{"u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, w := range dirtyWindows(tc.windows) {
				got = append(got, w.Name)
			}
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

func TestSummarizeSession(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: reason}
	}
	for _, tc := range []struct {
		name       string
		state      twv1.SessionState
		phase      twv1.SessionPhase
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"registered and acknowledged", twv1.SessionActive, twv1.SessionPhaseActive, []metav1.Condition{
			cond(twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered),
			cond(twv1.SpawnsAcknowledgedCondition, metav1.ConditionTrue, twv1.ReasonAcknowledged),
		}, metav1.ConditionTrue, twv1.ReasonActive},
		{"unacknowledged spawns", twv1.SessionActive, twv1.SessionPhaseActive, []metav1.Condition{
			cond(twv1.RegisteredCondition, metav1.ConditionTrue, twv1.ReasonRegistered),
			cond(twv1.SpawnsAcknowledgedCondition, metav1.ConditionFalse, twv1.ReasonUnacknowledgedSpawns),
		}, metav1.ConditionFalse, twv1.ReasonUnacknowledgedSpawns},
		{"no profile", twv1.SessionActive, twv1.SessionPhasePending, []metav1.Condition{
			cond(twv1.RegisteredCondition, metav1.ConditionFalse, twv1.ReasonNoProfile),
		}, metav1.ConditionFalse, twv1.ReasonNoProfile},
		{"finishing", twv1.SessionFinished, twv1.SessionPhaseFinishing, nil, metav1.ConditionFalse, twv1.ReasonCleaningUp},
		// Done: kstatus (kubectl wait --for=condition=Ready, Flux, Argo CD) reads it as Current.
		{"finished", twv1.SessionFinished, twv1.SessionPhaseFinished, nil, metav1.ConditionTrue, twv1.ReasonFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := &twv1.BrowserSession{}
			s.Spec.State, s.Status.Phase, s.Status.Conditions = tc.state, tc.phase, tc.conds
			summarizeSession(s, nil, nil)
			var ready *metav1.Condition
			for i := range s.Status.Conditions {
				if s.Status.Conditions[i].Type == twv1.ReadyCondition {
					ready = &s.Status.Conditions[i]
				}
			}
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tc.wantStatus))
			g.Expect(ready.Reason).To(Equal(tc.wantReason))
		})
	}
}

func TestUnacknowledgedMessageTeaches(t *testing.T) {
	g := NewWithT(t)
	ws := []twv1.BrowserWindow{win("b-spawn", twv1.SourceSpawned, "", twv1.WindowOpen), win("a-spawn", twv1.SourceSpawned, "", twv1.WindowOpen)}
	ws[0].Status.URL = "https://mail.example/compose"
	msg := UnacknowledgedMessage("ns", unacknowledged(ws))
	g.Expect(msg).To(HavePrefix("2 spawned window(s) have no disposition"))
	g.Expect(strings.Index(msg, "a-spawn")).To(BeNumerically("<", strings.Index(msg, "b-spawn")), "sorted by name")
	g.Expect(msg).To(ContainSubstring(`kubectl patch browserwindow b-spawn -n ns --type=merge -p '{"spec":{"disposition":"Close"}}'`))
	g.Expect(msg).To(ContainSubstring("https://mail.example/compose"))
}

// TestMovable: a session leaves a lost profile only when none of its windows
// may have a page there.
func TestMovable(t *testing.T) {
	// The controller stores the page finalizer with the profile label: a
	// registered window no agent wrote status for has no page.
	registered := win("registered", twv1.SourceOpen, "", "")
	registered.Finalizers = []string{twv1.PageFinalizer}
	// The agent writes status.profileName in the reconcile that opens the page.
	taken := win("taken", twv1.SourceOpen, "", twv1.WindowPending)
	taken.Finalizers = []string{twv1.PageFinalizer}
	taken.Status.ProfileName = "lost"
	tabbed := win("tabbed", twv1.SourceOpen, "", twv1.WindowPending)
	tabbed.Status.TabID = "t-1"
	for _, tc := range []struct {
		name    string
		windows []twv1.BrowserWindow
		want    bool
	}{
		{"no window", nil, true},
		{"open windows no agent took", []twv1.BrowserWindow{win("a", twv1.SourceOpen, "", ""), win("b", twv1.SourceOpen, "", twv1.WindowPending)}, true},
		{"a registered window (page finalizer, no agent status)", []twv1.BrowserWindow{registered}, true},
		{"a window the agent took (its status)", []twv1.BrowserWindow{win("a", twv1.SourceOpen, "", ""), taken}, false},
		{"a window with a tab recorded", []twv1.BrowserWindow{tabbed}, false},
		{"an open page", []twv1.BrowserWindow{win("o", twv1.SourceOpen, "", twv1.WindowOpen)}, false},
		{"an unreachable page", []twv1.BrowserWindow{win("u", twv1.SourceOpen, "", twv1.WindowUnknown)}, false},
		{"a spawned window", []twv1.BrowserWindow{win("s", twv1.SourceSpawned, "", twv1.WindowPending)}, false},
		{"a bound tab", []twv1.BrowserWindow{win("b", twv1.SourceBind, "", twv1.WindowPending)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(movable(tc.windows)).To(Equal(tc.want))
		})
	}
}

// TestDeletingStatusWait: a deleted session's status write waits only when it
// would change nothing but counts and messages and the last one was less than
// deletingStatusEvery ago; a session not deleted, a phase or a condition's
// status or reason that changes, and a first write never wait.
func TestDeletingStatusWait(t *testing.T) {
	deleted := metav1.Now()
	dirty := func(msg string) []metav1.Condition {
		return []metav1.Condition{{Type: twv1.CleanCondition, Status: metav1.ConditionFalse, Reason: twv1.ReasonDirtySession, Message: msg}}
	}
	for _, tc := range []struct {
		name      string
		deleting  bool
		lastWrite time.Duration // ago; 0: none
		change    func(s *twv1.BrowserSession)
		waits     bool
	}{
		{"only the list of pages, written a moment ago", true, 100 * time.Millisecond, func(s *twv1.BrowserSession) {
			s.Status.Conditions = dirty("still owns 1 open page(s): w1")
			s.Status.Windows.Live = 1
		}, true},
		{"only the list of pages, written long ago", true, 2 * deletingStatusEvery, func(s *twv1.BrowserSession) {
			s.Status.Conditions = dirty("still owns 1 open page(s): w1")
		}, false},
		{"only the list of pages, never written", true, 0, func(s *twv1.BrowserSession) {
			s.Status.Conditions = dirty("still owns 1 open page(s): w1")
		}, false},
		{"a condition's status", true, 100 * time.Millisecond, func(s *twv1.BrowserSession) {
			s.Status.Conditions = []metav1.Condition{{Type: twv1.CleanCondition, Status: metav1.ConditionTrue, Reason: twv1.ReasonClean}}
		}, false},
		{"the phase", true, 100 * time.Millisecond, func(s *twv1.BrowserSession) {
			s.Status.Phase = twv1.SessionPhaseFinishing
		}, false},
		{"nothing", true, 100 * time.Millisecond, func(*twv1.BrowserSession) {}, false},
		{"a deliverable", true, 100 * time.Millisecond, func(s *twv1.BrowserSession) {
			s.Status.Conditions = dirty("still owns 1 open page(s): w1")
			s.Status.Deliverables = append(s.Status.Deliverables, twv1.Deliverable{Window: "w2", URL: "https://example.com/report"})
		}, false},
		{"the object itself", true, 100 * time.Millisecond, func(s *twv1.BrowserSession) {
			s.Status.Conditions = dirty("still owns 1 open page(s): w1")
			s.Labels = map[string]string{"team": "taxes"}
		}, false},
		{"a session not deleted", false, 100 * time.Millisecond, func(s *twv1.BrowserSession) {
			s.Status.Windows.Live = 1
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
			s.Status.Phase = twv1.SessionPhaseActive
			s.Status.Conditions = dirty("still owns 2 open page(s): w1, w2")
			s.Status.Windows.Live = 2
			if tc.deleting {
				s.DeletionTimestamp = &deleted
			}
			r := &SessionReconciler{}
			if tc.lastWrite > 0 {
				r.deletingWrites.Store(client.ObjectKeyFromObject(s), time.Now().Add(-tc.lastWrite))
			}
			helper := patch.NewHelper(s, nil)
			tc.change(s)
			wait := r.deletingStatusWait(helper, s)
			if tc.waits {
				g.Expect(wait).To(BeNumerically(">", 0))
				g.Expect(wait).To(BeNumerically("<=", deletingStatusEvery))
			} else {
				g.Expect(wait).To(BeNumerically("<=", 0))
			}
		})
	}
}
