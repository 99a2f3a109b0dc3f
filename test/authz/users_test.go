package authz_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestUsers: users, administrators included, do not spawn, place or observe
// windows, nor compute sessions; they ask for pages and acknowledge spawns.
func TestUsers(t *testing.T) {
	f := newFixture(t)
	ns := f.ns
	check(t, []request{
		{
			name: "user creates a Spawned window", as: asAlice, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "fake-spawn", sessA, ""))
			},
			says: []string{"only a tabwarden agent creates Spawned windows", "user alice", `"source":"Open"`, "kubectl apply -n " + ns},
		},
		{
			name: "admin creates a Spawned window", as: asAdmin, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "fake-spawn", sessA, ""))
			},
			says: []string{"only a tabwarden agent creates Spawned windows"},
		},
		{
			name: "admin creates a Spawned window labelled with a profile (dry-run)", as: asAdmin, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "fake-spawn", sessA, "a"), client.DryRunAll)
			},
			says: []string{"only a tabwarden agent creates Spawned windows"},
		},
		{
			name: "user sets spec.spawn on an Open window", as: asAlice, want: byCRD,
			do: func(ctx context.Context, c client.Client) error {
				w := open(ns, "open-with-spawn", sessA)
				w.Spec.Spawn = &twv1.SpawnInfo{TabID: "tab-of-the-user"}
				return c.Create(ctx, w)
			},
			says: []string{"spec.spawn is written by the agent for Spawned windows"},
		},
		{
			name: "admin adds spec.spawn to an existing window", as: asAdmin, want: byCRD,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), merge(`{"spec":{"spawn":{"tabId":"tab-of-the-user"}}}`))
			},
			says: []string{"spec.spawn is written by the agent for Spawned windows"},
		},
		{
			name: "admin moves a window to another profile", as: asAdmin, want: windowUpdate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), labelPatch("b"))
			},
			says: []string{"only the tabwarden controller sets or changes the tabwarden.dev/profile label", "Leave it as it was (a)"},
		},
		{
			name: "user labels an unplaced window", as: asAlice, want: windowUpdate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openU), labelPatch("a"))
			},
			says: []string{"only the tabwarden controller sets or changes", "(unset)"},
		},
		{
			name: "user removes the profile label", as: asAlice, want: windowUpdate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), merge(`{"metadata":{"labels":{"`+twv1.ProfileLabel+`":null}}}`))
			},
			says: []string{"only the tabwarden controller sets or changes"},
		},
		{
			name: "user points an Open window's status at another tab", as: asAlice, want: windowStatus,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openA), `{"status":{"phase":"Open","tabId":"the-users-bank-tab"}}`)
			},
			says: []string{"is what its browser shows", "the agent of its profile, a,", "user alice may not", `"disposition":"Close"`},
		},
		{
			name: "admin points an Open window's status at another tab", as: asAdmin, want: windowStatus,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openA), `{"status":{"tabId":"the-users-bank-tab"}}`)
			},
			says: []string{"is what its browser shows"},
		},
		{
			name: "admin points an Open window's status at another tab (dry-run)", as: asAdmin, want: windowStatus,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openA), `{"status":{"tabId":"the-users-bank-tab"}}`, client.DryRunAll)
			},
			says: []string{"is what its browser shows"},
		},
		{
			name: "admin places a session by writing its status", as: asAdmin, want: sessionStatus,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sessA}}, `{"status":{"profileName":"b"}}`)
			},
			says: []string{"computed by the tabwarden controller alone", `"state":"Finished"`},
		},
		{
			name: "a user named like an agent, outside group tabwarden:agents, creates a Spawned window", as: asImpostor, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "impostor", sessA, "a"))
			},
			says: []string{"only a tabwarden agent creates Spawned windows", "user tabwarden:agent:a"},
		},
		{
			name: "admin shows a namespace a tab that is not there", as: asAdmin, want: tabListPolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, tabList(ns, "a"), merge(`{"tabs":[{"id":"the-users-bank-tab","url":"https://bank.example/"}]}`))
			},
			says: []string{"lists the tabs the agent of profile a sees", "only that agent writes it", "kubectl get browsertablist a -n " + ns},
		},
		{
			name: "user creates a tab list", as: asAlice, want: tabListPolicy,
			do:   func(ctx context.Context, c client.Client) error { return c.Create(ctx, tabList(ns, "c")) },
			says: []string{"only the tabwarden controller creates tab lists", "user alice may not", "spec.profileName: c"},
		},
		// What users do.
		{
			name: "user deletes a tab list (the controller creates it again)", as: asAlice, want: allowed,
			do: func(ctx context.Context, c client.Client) error { return c.Delete(ctx, tabList(ns, "b")) },
		},
		{
			name: "user asks for a page", as: asAlice, want: allowed,
			do: func(ctx context.Context, c client.Client) error { return c.Create(ctx, open(ns, "asked", sessA)) },
		},
		{
			// The label routes the window to agent a's cache; only the session's
			// placement makes agent a serve it (controllers' TestForgedProfileLabelAtCreate).
			name: "user creates a window registered for its session's placement", as: asAlice, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				s := &twv1.BrowserSession{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: sessA}, s); err != nil {
					return err
				}
				if s.Status.ProfileName != "a" {
					return fmt.Errorf("fixture: session %s is placed on %q, not a", sessA, s.Status.ProfileName)
				}
				w := open(ns, "registered", sessA)
				w.Register(s, true)
				if w.Labels[twv1.ProfileLabel] != "a" || len(w.Finalizers) != 1 || len(w.OwnerReferences) != 1 {
					return fmt.Errorf("Register left %v %v %v", w.Labels, w.Finalizers, w.OwnerReferences)
				}
				return c.Create(ctx, w)
			},
		},
		{
			name: "user acknowledges a spawned window", as: asAlice, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, spawn), merge(`{"spec":{"disposition":"Keep"}}`))
			},
		},
		{
			name: "user labels a window with other labels", as: asAlice, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), merge(`{"metadata":{"labels":{"team":"tax"}}}`))
			},
		},
		{
			name: "admin sets a profile's spec", as: asAdmin, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("b"), merge(`{"spec":{"maxSessions":5}}`))
			},
		},
		{
			name: "admin labels a profile", as: asAdmin, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("b"), merge(`{"metadata":{"labels":{"tabwarden.dev/pool":"shared"}}}`))
			},
		},
	})
}
