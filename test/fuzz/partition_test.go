package fuzz

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/controllers"
)

var flagPartitionFull = flag.Bool("partition-full", false,
	"TestPartitions at full length (make partition): partitions of 30 s and of the shipped agent grace + 30 s, under the shipped grace; without it, 1 s and a 3 s grace + 2 s")

// TestPartitions cuts and heals the links a deployment loses (agent ↔ API
// server, agent ↔ browser) while the browser keeps spawning pages from the
// session's pages, and checks after each heal, with the fuzz's reference model
// and invariants (quiesce), that every page spawned meanwhile is adopted into
// its session exactly once, nothing opened twice, no user tab was touched, and
// the controller's view of the agent (AgentLost while the heartbeat could not
// reach the API server past the grace) and the agent's own converge back to
// Connected. The lossy case runs a seeded sequence of operations over a link
// that loses 5 % of its segments.
func TestPartitions(t *testing.T) {
	grace, brief, long := 3*time.Second, time.Second, 5*time.Second
	if *flagPartitionFull {
		grace, brief, long = controllers.DefaultAgentGrace, 30*time.Second, controllers.DefaultAgentGrace+30*time.Second
	}
	withGrace(t, grace)

	cases := []struct {
		name  string
		fault func(w *world)
		hold  time.Duration
		// lost: the controller must hold the agent lost while it lasts.
		lost bool
	}{
		{name: "agent-API partition shorter than the grace", fault: func(w *world) { w.api.Cut() }, hold: brief},
		{name: "agent-API partition longer than the grace", fault: func(w *world) { w.api.Cut() }, hold: long, lost: true},
		{name: "API server unreachable from the agent longer than the grace", fault: func(w *world) { w.api.Drop(); w.apiDropped = true }, hold: long, lost: true},
		{name: "agent-browser link down", fault: func(w *world) { w.b.Disconnect(); w.down = true }, hold: brief},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := partitionWorld(t, fmt.Sprintf("partition-%d", i))
			openers := w.livePages(twv1.SourceOpen)
			c.fault(w)
			start := time.Now()
			during := w.spawnFrom(t, openers)
			// The fault is in the agent's path: nothing spawned meanwhile is
			// adopted while it lasts.
			notAdopted(t, w, during, min(c.hold/2, 2*time.Second))
			if c.lost {
				waitLost(t, w, grace+15*time.Second)
			}
			if left := c.hold - time.Since(start); left > 0 {
				time.Sleep(left)
			}
			during = append(during, w.spawnFrom(t, openers)...)
			t.Logf("%d pages spawned during %s of %q; healing", len(during), time.Since(start).Round(time.Millisecond), c.name)
			healed := time.Now()
			if err := w.quiesce(); err != nil {
				t.Fatalf("after the heal: %v\ntrace:\n  %s", err, strings.Join(w.trace, "\n  "))
			}
			t.Logf("converged %s after the heal", time.Since(healed).Round(time.Millisecond))
			if err := w.end(); err != nil {
				t.Fatalf("at the end: %v\ntrace:\n  %s", err, strings.Join(w.trace, "\n  "))
			}
		})
	}

	t.Run("lossy agent-API link", func(t *testing.T) {
		w := partitionWorld(t, "partition-lossy")
		w.lossy = true
		w.api.Lossy(0.05, 200*time.Millisecond, 5)
		for _, o := range generate(5, 60) {
			if o.K == kQuiesce || o.K == kLossyAPI || o.K == kCutAPI || o.K == kDropAPI {
				continue // the link stays lossy, and whole otherwise
			}
			if err := w.apply(o); err != nil {
				t.Fatalf("%s: %v\ntrace:\n  %s", o, err, strings.Join(w.trace, "\n  "))
			}
		}
		lost := w.api.Stats().Lost
		if err := w.quiesce(); err != nil {
			t.Fatalf("after the lossy run: %v\ntrace:\n  %s", err, strings.Join(w.trace, "\n  "))
		}
		if lost == 0 {
			t.Fatal("the link lost no segment: the lossy case tested nothing")
		}
		t.Logf("%d segments arrived a retransmission late", lost)
		if err := w.end(); err != nil {
			t.Fatalf("at the end: %v", err)
		}
	})
}

// withGrace restarts the controller with grace for the test, and as shipped
// after it.
func withGrace(t *testing.T, grace time.Duration) {
	t.Helper()
	restart := func(g time.Duration) {
		if err := controllerUp(false); err != nil {
			t.Fatal(err)
		}
		agentGrace = g
		if err := controllerUp(true); err != nil {
			t.Fatal(err)
		}
	}
	restart(grace)
	t.Cleanup(func() { restart(0) })
}

// partitionWorld is a world with two sessions, each with two open windows,
// converged.
func partitionWorld(t *testing.T, name string) *world {
	t.Helper()
	w, err := newWorld(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	for i, o := range []op{{K: kSession}, {K: kSession, B: 1}, {K: kOpen, A: 0}, {K: kOpen, A: 0, B: 1}, {K: kOpen, A: 1}, {K: kOpen, A: 1, B: 2}} {
		if err := w.apply(o); err != nil {
			t.Fatalf("set-up op %d %s: %v", i, o, err)
		}
	}
	if err := w.quiesce(); err != nil {
		t.Fatalf("set-up: %v", err)
	}
	return w
}

// spawnFrom makes each of the sessions' pages spawn a popup and a tab, as a
// click in it would, and returns the spawned pages (the model expects each
// adopted into its opener's session).
func (w *world) spawnFrom(t *testing.T, openers []twv1.BrowserWindow) []string {
	t.Helper()
	if len(openers) == 0 {
		t.Fatal("no live page to spawn from")
	}
	var ids []string
	for _, x := range openers {
		for _, popup := range []bool{true, false} {
			id, err := w.b.Spawn(x.Status.TabID, "https://spawn.example/"+w.name("spawn"), popup)
			if err != nil {
				t.Fatalf("spawn from %s: %v", x.Name, err)
			}
			w.spawns = append(w.spawns, mspawn{page: id, session: x.Spec.SessionRef.Name, from: x.Name})
			w.logf("%s spawned %s (popup=%v)", x.Name, id, popup)
			ids = append(ids, id)
		}
	}
	return ids
}

// notAdopted checks, for d, that no Spawned window names any of pages.
func notAdopted(t *testing.T, w *world, pages []string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, x := range w.apiWindows() {
			for _, p := range pages {
				if x.Spec.Spawn != nil && x.Spec.Spawn.TabID == p {
					t.Fatalf("page %s was adopted (window %s) while the agent's link was down: the fault is not in its path", p, x.Name)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLost waits until the controller holds the profile's agent lost.
func waitLost(t *testing.T, w *world, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var c *metav1.Condition
	for time.Now().Before(deadline) {
		p := &twv1.BrowserProfile{}
		if err := k8s.Get(w.ctx, client.ObjectKey{Name: w.profile}, p); err != nil {
			t.Fatal(err)
		}
		if c = apimeta.FindStatusCondition(p.Status.Conditions, twv1.ConnectedCondition); c != nil && c.Reason == twv1.ReasonAgentLost {
			if c.Status != metav1.ConditionUnknown {
				t.Fatalf("AgentLost with status %s, want Unknown", c.Status)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the controller did not hold the agent lost within %s: Connected %+v", within, c)
}
