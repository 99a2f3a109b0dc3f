package authz_test

import (
	"context"
	"testing"

	coordv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
)

// TestController: the controller places, labels and computes status, and never
// writes profiles or creates windows.
func TestController(t *testing.T) {
	f := newFixture(t)
	ns := f.ns
	check(t, []request{
		{
			name: "controller registers a profile", as: asController, want: byRBAC,
			do:   func(ctx context.Context, c client.Client) error { return c.Create(ctx, profile("controllers-own")) },
			says: []string{`cannot create resource "browserprofiles"`},
		},
		{
			name: "controller writes a profile's spec", as: asController, want: byRBAC,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("a"), merge(`{"spec":{"pool":true}}`))
			},
			says: []string{`cannot patch resource "browserprofiles"`},
		},
		{
			name: "controller writes a profile's counts", as: asController, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, profile("a"), `{"status":{"sessions":7}}`)
			},
			says: []string{"the tabwarden controller writes only the liveness of BrowserProfile a", "Connected=True are its agent's"},
		},
		{
			name: "controller says a profile is connected", as: asController, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, profile("a"), `{"status":{"conditions":[{"type":"Connected","status":"True","reason":"AgentConnected","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
			},
			says: []string{"writes only the liveness of BrowserProfile a"},
		},
		{
			name: "controller creates a Spawned window", as: asController, want: byRBAC,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "by-controller", sessA, "a"))
			},
			says: []string{`cannot create resource "browserwindows"`},
		},
		{
			name: "controller writes a lease outside its namespace", as: asController, want: byRBAC,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, lease(ns, "controller.tabwarden.dev"))
			},
			says: []string{`cannot create resource "leases"`},
		},
		// What the controller does.
		{
			name: "controller places a session", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, session(ns, sessA, ""), `{"status":{"profileName":"a","phase":"Active"}}`)
			},
		},
		{
			name: "controller labels an unplaced window", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openU), labelPatch("a"))
			},
		},
		{
			name: "controller writes a window's status", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openB), `{"status":{"phase":"Pending"}}`)
			},
		},
		{
			name: "controller deletes an ended session's window", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error { return c.Delete(ctx, window(ns, openB)) },
		},
		{
			name: "controller marks a profile's agent lost", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, profile("a"), `{"status":{"conditions":[{"type":"Connected","status":"Unknown","reason":"AgentLost","message":"lease not renewed","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
			},
		},
		{
			name: "controller reads the agents' heartbeat leases", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				var l coordv1.LeaseList
				return c.List(ctx, &l, client.InNamespace(access.SystemNamespace))
			},
		},
		{
			name: "controller reads the sessions' holder leases", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				var l coordv1.LeaseList
				return c.List(ctx, &l, client.InNamespace(ns), client.HasLabels{twv1.SessionLabel})
			},
		},
		{
			name: "controller deletes a session's holder lease", as: asController, want: byRBAC,
			do:   func(ctx context.Context, c client.Client) error { return c.Delete(ctx, lease(ns, sessA)) },
			says: []string{`cannot delete resource "leases"`},
		},
		{
			name: "controller renews its leader election lease", as: asController, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return client.IgnoreAlreadyExists(c.Create(ctx, lease(access.SystemNamespace, "controller.tabwarden.dev")))
			},
		},
	})
}
