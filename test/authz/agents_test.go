package authz_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
)

// TestAgents: an agent writes only its own profile's windows, profile and Lease,
// creates only the Spawned windows it adopts, and never deletes, places or
// writes sessions.
func TestAgents(t *testing.T) {
	f := newFixture(t)
	ns := f.ns
	check(t, []request{
		{
			name: "agent a writes profile b's spec", as: asAgentA, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("b"), merge(`{"spec":{"pool":true}}`))
			},
			says: []string{"the agent of profile a writes only BrowserProfile a, not b"},
		},
		{
			name: "agent a writes profile b's status", as: asAgentA, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, profile("b"), `{"status":{"agent":"agent-a","sessions":0}}`)
			},
			says: []string{"writes only BrowserProfile a, not b"},
		},
		{
			name: "agent a registers profile c", as: asAgentA, want: profilePolicy,
			do:   func(ctx context.Context, c client.Client) error { return c.Create(ctx, profile("c")) },
			says: []string{"writes only BrowserProfile a, not c"},
		},
		{
			name: "agent c registers its profile admitting every namespace", as: asAgentC, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				p := profile("c")
				p.Spec.NamespaceSelector = &metav1.LabelSelector{}
				return c.Create(ctx, p)
			},
			says: []string{"registers BrowserProfile c admitting no namespace", `"namespaces":["default"]`},
		},
		{
			name: "agent c registers its profile admitting a namespace", as: asAgentC, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				p := profile("c")
				p.Spec.Namespaces = []string{ns}
				return c.Create(ctx, p)
			},
			says: []string{"admitting no namespace"},
		},
		{
			name: "agent a admits a namespace to its own profile", as: asAgentA, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("a"), merge(`{"spec":{"namespaces":["`+ns+`"]}}`))
			},
			says: []string{"never changes the spec of BrowserProfile a"},
		},
		{
			name: "agent a writes profile b's tab list", as: asAgentA, want: tabListPolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, tabList(ns, "b"), merge(`{"tabs":[{"id":"tab-a","url":"https://phish.example/"}]}`))
			},
			says: []string{"the agent of profile a updates only the tab lists of its own profile (BrowserTabList a), not " + ns + "/b"},
		},
		{
			name: "agent a deletes profile b's tab list", as: asAgentA, want: byRBAC,
			do:   func(ctx context.Context, c client.Client) error { return c.Delete(ctx, tabList(ns, "b")) },
			says: []string{`cannot delete resource "browsertablists"`},
		},
		{
			name: "agent a labels its tab list for profile b", as: asAgentA, want: tabListPolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, tabList(ns, "a"), labelPatch("b"))
			},
			says: []string{"the agent of profile a may not change the label tabwarden.dev/profile of BrowserTabList " + ns + "/a", "(a)"},
		},
		{
			name: "agent a changes its own profile's spec", as: asAgentA, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("a"), merge(`{"spec":{"maxSessions":1000}}`))
			},
			says: []string{"never changes the spec of BrowserProfile a", "administrator"},
		},
		{
			name: "agent a labels its own profile to attract sessions", as: asAgentA, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("a"), merge(`{"metadata":{"labels":{"tabwarden.dev/pool":"shared"}}}`))
			},
			says: []string{"never sets the labels of BrowserProfile a", "spec.profileSelector"},
		},
		{
			name: "agent a adopts a page into profile b", as: asAgentA, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "into-b", sessA, "b"))
			},
			says: []string{"the agent of profile a may not set it", `"b"`, `own profile, "a"`},
		},
		{
			name: "agent a adopts a page without a profile label", as: asAgentA, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "unlabelled", sessA, ""))
			},
			says: []string{"carries the label tabwarden.dev/profile=a"},
		},
		{
			name: "agent a creates an Open window", as: asAgentA, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				w := open(ns, "agent-open", sessA)
				w.Labels = map[string]string{twv1.ProfileLabel: "a"}
				return c.Create(ctx, w)
			},
			says: []string{"creates only Spawned windows", "Open windows are asked for by users"},
		},
		{
			name: "agent a writes the status of a window of profile b", as: asAgentA, want: windowStatus,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openB), `{"status":{"phase":"Gone"}}`)
			},
			says: []string{"the agent of its profile, b,", "the agent of profile a may not"},
		},
		{
			name: "agent a writes the status of an unplaced window", as: asAgentA, want: windowStatus,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openU), `{"status":{"phase":"Open","tabId":"x"}}`)
			},
			says: []string{"the agent of the profile it gets placed on"},
		},
		{
			name: "agent a holds a window of profile b with its finalizer", as: asAgentA, want: windowUpdate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openB), merge(`{"metadata":{"finalizers":["tabwarden.dev/page"]}}`))
			},
			says: []string{"is in profile \"b\"", "updates only windows labelled tabwarden.dev/profile=a"},
		},
		{
			name: "agent a changes the spec of its own window", as: asAgentA, want: windowUpdate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), merge(`{"spec":{"url":"https://attacker.example/"}}`))
			},
			says: []string{"never changes a window's spec"},
		},
		{
			name: "agent a moves its own window to profile b", as: asAgentA, want: windowUpdate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), labelPatch("b"))
			},
			says: []string{"only the tabwarden controller sets or changes", "the agent of profile a may not"},
		},
		{
			name: "agent a relabels its own window", as: asAgentA, want: windowUpdate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), merge(`{"metadata":{"labels":{"tabwarden.dev/session":"session-b"}}}`))
			},
			says: []string{"never changes a window's labels"},
		},
		{
			name: "agent a deletes a window", as: asAgentA, want: byRBAC,
			do:   func(ctx context.Context, c client.Client) error { return c.Delete(ctx, window(ns, openA)) },
			says: []string{`cannot delete resource "browserwindows"`},
		},
		{
			name: "agent a writes a session", as: asAgentA, want: byRBAC,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, session(ns, sessA, ""), merge(`{"spec":{"state":"Finished"}}`))
			},
			says: []string{`cannot patch resource "browsersessions"`},
		},
		{
			name: "agent a writes a session's status", as: asAgentA, want: byRBAC,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, session(ns, sessA, ""), `{"status":{"profileName":"a"}}`)
			},
			says: []string{`cannot patch resource "browsersessions/status"`},
		},
		{
			name: "agent a renews profile b's lease", as: asAgentA, want: leasePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, lease(access.SystemNamespace, "tabwarden-profile-b"), merge(`{"spec":{"holderIdentity":"agent-a"}}`))
			},
			says: []string{"renews only its own heartbeat Lease, tabwarden-profile-a, not tabwarden-profile-b"},
		},
		{
			name: "agent a creates a lease of another name", as: asAgentA, want: leasePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, lease(access.SystemNamespace, "controller.tabwarden.dev"))
			},
			says: []string{"not controller.tabwarden.dev"},
		},
		{
			name: "agent a writes its lease outside the lease namespace", as: asAgentA, want: byRBAC,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, lease(ns, "tabwarden-profile-a"))
			},
			says: []string{`cannot create resource "leases"`, ns},
		},
		// What agents do.
		{
			name: "agent c registers its profile admitting no namespace", as: asAgentC, want: allowed,
			do: func(ctx context.Context, c client.Client) error { return c.Create(ctx, profile("c")) },
		},
		{
			name: "agent a publishes its tab list", as: asAgentA, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, tabList(ns, "a"), merge(`{"tabCount":2,"tabs":[{"id":"tab-a"},{"id":"tab-a2"}]}`))
			},
		},
		{
			name: "agent a adopts a spawned page into its profile", as: asAgentA, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "adopted", sessA, "a"))
			},
		},
		{
			name: "agent a holds its own window with its page finalizer", as: asAgentA, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), merge(`{"metadata":{"finalizers":["tabwarden.dev/page"]}}`))
			},
		},
		{
			name: "agent a reports its own window open", as: asAgentA, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openA), `{"status":{"phase":"Open","tabId":"tab-a-1","profileName":"a"}}`)
			},
		},
		{
			name: "agent b reports its own window open", as: asAgentB, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openB), `{"status":{"phase":"Open","tabId":"tab-b-1","profileName":"b"}}`)
			},
		},
		{
			name: "agent a publishes its own profile's status", as: asAgentA, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, profile("a"), `{"status":{"agent":"agent-a","browserVersion":"Chrome/1"}}`)
			},
		},
		{
			name: "agent a renews its own lease", as: asAgentA, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, lease(access.SystemNamespace, "tabwarden-profile-a"), merge(`{"spec":{"holderIdentity":"agent-a"}}`))
			},
		},
		{
			name: "agent a lets its own window go (removes its finalizer)", as: asAgentA, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openA), merge(`{"metadata":{"finalizers":null}}`))
			},
		},
	})
}
