package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv/kubectl"
)

// ScriptedAgent is an AI agent that knows nothing but the API: it drives a
// session only through BrowserActions and, when one is refused, runs the hint
// it was given and tries again. Tests use it to prove that the hints alone lead
// an agent through the incident.
type ScriptedAgent struct {
	T       testing.TB
	C       client.Client
	NS      string
	Session string
	Thread  string
	// Timeout bounds the wait for one action (default 30s).
	Timeout time.Duration
	// Refusals are the reasons of the refusals it followed, in order.
	Refusals []string
}

// Act creates one action of steps on window and waits until it finished.
func (a *ScriptedAgent) Act(window string, steps ...twv1.ActionStep) *twv1.BrowserAction {
	a.T.Helper()
	act := &twv1.BrowserAction{}
	act.Namespace, act.GenerateName = a.NS, a.Session+"-"
	act.Spec = twv1.BrowserActionSpec{
		SessionRef: twv1.SessionReference{Name: a.Session}, Thread: a.Thread,
		WindowRef: twv1.ActionWindowReference{Name: window}, Steps: steps,
	}
	ctx := context.Background()
	if err := a.C.Create(ctx, act); err != nil {
		a.T.Fatalf("creating an action on %s: %v", window, err)
	}
	return a.Wait(act)
}

// Wait waits until act finished and returns it.
func (a *ScriptedAgent) Wait(act *twv1.BrowserAction) *twv1.BrowserAction {
	a.T.Helper()
	timeout := a.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := a.C.Get(context.Background(), client.ObjectKeyFromObject(act), act); err != nil {
			a.T.Fatalf("reading action %s: %v", act.Name, err)
		}
		if act.Status.Phase.Finished() {
			return act
		}
		if time.Now().After(deadline) {
			a.T.Fatalf("action %s did not finish within %s: %+v", act.Name, timeout, act.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Do acts and, while the action is refused, follows the hint and acts again
// (at most tries times). It fails the test on a failure or when hints run out.
func (a *ScriptedAgent) Do(window string, steps ...twv1.ActionStep) *twv1.BrowserAction {
	a.T.Helper()
	for try := 0; try < 5; try++ {
		act := a.Act(window, steps...)
		switch act.Status.Phase {
		case twv1.ActionSucceeded:
			return act
		case twv1.ActionRefused:
			a.Refusals = append(a.Refusals, act.Status.Reason)
			if act.Status.Hint == "" {
				a.T.Fatalf("action %s refused (%s) without a hint: %s", act.Name, act.Status.Reason, act.Status.Message)
			}
			if err := a.Follow(act.Status.Hint); err != nil {
				a.T.Fatalf("following the hint of %s (%s): %v", act.Name, act.Status.Reason, err)
			}
		default:
			a.T.Fatalf("action %s %s (%s): %s", act.Name, act.Status.Phase, act.Status.Reason, act.Status.Message)
		}
	}
	a.T.Fatalf("still refused after following 5 hints: %v", a.Refusals)
	return nil
}

// Follow runs a hint. A hint that creates an action (a fresh observation)
// waits for that action too.
func (a *ScriptedAgent) Follow(cmd string) error {
	if err := kubectl.Run(context.Background(), a.C, cmd); err != nil {
		return fmt.Errorf("running %q: %w", cmd, err)
	}
	return nil
}
