package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestActionRunnerForgetsFinishedActions runs 1,000 actions of 10 sessions
// through the agent's action runner, 8 at a time as its workers do, each
// reconciled again once the cache shows it finished (the event the runner's
// predicate lets through): every action ran once, and the runner remembers
// nothing of them (no finished action, no session lock) afterwards.
func TestActionRunnerForgetsFinishedActions(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const sessions, actions = 10, 1000
	var objs []client.Object
	for i := range sessions {
		s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s%d", i), UID: types.UID(fmt.Sprintf("uid-s%d", i))}}
		s.Spec.Thread, s.Spec.State, s.Status.ProfileName = "t", twv1.SessionFinished, "p"
		objs = append(objs, s)
	}
	for i := range actions {
		// Stamped with the session's profile, as the controller does before an agent may run it.
		act := &twv1.BrowserAction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("a%d", i), UID: types.UID(fmt.Sprintf("uid-a%d", i)), Labels: map[string]string{twv1.ProfileLabel: "p"}}}
		act.Spec.SessionRef.Name, act.Spec.Thread, act.Spec.WindowRef.Name = fmt.Sprintf("s%d", i%sessions), "t", "w"
		act.Spec.Steps = []twv1.ActionStep{{Type: twv1.StepObserve}}
		objs = append(objs, act)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&twv1.BrowserAction{}).Build()
	r := &ActionReconciler{agent: &Agent{opts: Options{Profile: "p"}, client: c, reader: c, recorder: &events.FakeRecorder{}}}
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, actions)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < actions; i += 8 {
				req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("a%d", i)}}
				for range 2 { // the run, then the cache showing its result
					if _, err := r.Reconcile(ctx, req); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var list twv1.BrowserActionList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, a := range list.Items {
		if a.Status.Phase == twv1.ActionRefused && a.Status.Reason == twv1.ReasonSessionFinished {
			ran++
		}
	}
	if ran != actions {
		t.Fatalf("%d of %d actions ran (refused session_finished): the test proves nothing", ran, actions)
	}
	done := 0
	r.done.Range(func(any, any) bool { done++; return true })
	r.locksMu.Lock()
	locks := len(r.sessions)
	r.locksMu.Unlock()
	if done != 0 || locks != 0 {
		t.Errorf("after %d finished actions the runner still remembers %d finished actions and %d session locks; want 0 and 0", actions, done, locks)
	}
}

// TestActionEventsLetTheRunnerForget: the runner's predicate passes an
// action's move to finished and its deletion (so the runner forgets it), and
// nothing else about finished actions.
func TestActionEventsLetTheRunnerForget(t *testing.T) {
	running := &twv1.BrowserAction{Status: twv1.BrowserActionStatus{Phase: twv1.ActionRunning}}
	done := &twv1.BrowserAction{Status: twv1.BrowserActionStatus{Phase: twv1.ActionSucceeded}}
	p := actionEvents()
	for name, got := range map[string]bool{
		"running -> succeeded": p.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: done}),
		"deleted":              p.Delete(event.DeleteEvent{Object: done}),
	} {
		if !got {
			t.Errorf("%s: filtered out; the runner would remember the action for ever", name)
		}
	}
	if p.Update(event.UpdateEvent{ObjectOld: done, ObjectNew: done}) || p.Create(event.CreateEvent{Object: done}) {
		t.Error("a finished action's later events wake the runner for nothing")
	}
}
