package authz_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// How a request is expected to end.
const (
	allowed = ""
	// byRBAC: the role has no such permission (RBAC answers before admission).
	byRBAC = "rbac"
	// byCRD: the CRD's validation rules refuse the object.
	byCRD = "crd"
	// Otherwise: the name of the admission policy that refuses it.
	windowCreate  = "tabwarden-window-create"
	windowUpdate  = "tabwarden-window-update"
	windowStatus  = "tabwarden-window-status"
	sessionStatus = "tabwarden-session-status"
	profilePolicy = "tabwarden-profile"
	leasePolicy   = "tabwarden-agent-lease"
	tabListPolicy = "tabwarden-tablist"
)

// request is one write under one identity, and how it must end.
type request struct {
	name string
	as   string
	do   func(ctx context.Context, c client.Client) error
	// want is allowed, byRBAC, byCRD or a policy name.
	want string
	// says are parts of the refusal's message: what it teaches.
	says []string
}

// fixture is what each case finds in place, written by the identities that write
// such things: sessions by a user, windows by users and agents, labels by the
// controller, profiles and leases by their agents.
type fixture struct {
	ns string
}

const (
	sessA = "session-a" // placed on profile a
	openA = "open-a"    // an Open window of session-a, labelled a by the controller
	openB = "open-b"    // an Open window of session-b, labelled b
	openU = "open-unplaced"
	spawn = "spawned-a" // a window agent a adopted
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{ns: testenv.NewNamespace(t, as[asAdmin], "authz-")}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("fixture: %s: %v", what, err)
		}
	}
	for _, p := range []string{"a", "b"} {
		s := session(f.ns, "session-"+p, p)
		must("user creates session "+p, as[asAlice].Create(ctx, s))
		must("controller places session "+p, statusPatch(as[asController], ctx, s, `{"status":{"profileName":"`+p+`"}}`))
		w := open(f.ns, "open-"+p, "session-"+p)
		must("user creates window "+w.Name, as[asAlice].Create(ctx, w))
		must("controller labels window "+w.Name, as[asController].Patch(ctx, w, labelPatch(p)))
		agent := as["agent "+p]
		err := agent.Create(ctx, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: p}})
		must("agent registers profile "+p, client.IgnoreAlreadyExists(err))
		must("controller creates the namespace's tab list", as[asController].Create(ctx, emptyTabList(f.ns, p)))
		must("agent fills in its tab list", agent.Patch(ctx, tabList(f.ns, p), merge(`{"tabCount":1,"tabs":[{"id":"tab-`+p+`","url":"https://`+p+`.example/"}]}`)))
		l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: access.SystemNamespace, Name: "tabwarden-profile-" + p}}
		must("agent creates its lease", client.IgnoreAlreadyExists(agent.Create(ctx, l)))
	}
	must("user creates an unplaced window", as[asAlice].Create(ctx, open(f.ns, openU, sessA)))
	must("agent a adopts a spawned page", as[asAgentA].Create(ctx, spawned(f.ns, spawn, sessA, "a")))
	return f
}

func session(ns, name, profile string) *twv1.BrowserSession {
	return &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       twv1.BrowserSessionSpec{Thread: "thread-42", Purpose: "file the 2026 tax return form", ProfileName: profile},
	}
}

func open(ns, name, sess string) *twv1.BrowserWindow {
	return testenv.OpenWindow(ns, name, sess, "https://example.com/")
}

// spawned is a window as the agent adopts it; profile "" leaves the label out.
func spawned(ns, name, sess, profile string) *twv1.BrowserWindow {
	w := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: sess}, Source: twv1.SourceSpawned,
			Spawn: &twv1.SpawnInfo{TabID: "tab-" + name, OpenerTabID: "tab-opener", SpawnedBy: openA, Reason: "opener"},
		},
	}
	if profile != "" {
		w.Labels = map[string]string{twv1.ProfileLabel: profile, twv1.SessionLabel: sess, twv1.SourceLabel: "spawned"}
	}
	return w
}

func tabList(ns, profile string) *twv1.BrowserTabList {
	return &twv1.BrowserTabList{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: profile, Labels: map[string]string{twv1.ProfileLabel: profile}},
		ProfileName: profile, TabCount: 1, Tabs: []twv1.BindableTab{{ID: "tab-" + profile, URL: "https://" + profile + ".example/"}},
	}
}

// emptyTabList is a tab list as the controller creates it: empty, labelled.
func emptyTabList(ns, profile string) *twv1.BrowserTabList {
	return &twv1.BrowserTabList{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: profile, Labels: map[string]string{twv1.ProfileLabel: profile}},
		ProfileName: profile,
	}
}

func merge(s string) client.Patch { return client.RawPatch("application/merge-patch+json", []byte(s)) }

func labelPatch(profile string) client.Patch {
	return merge(`{"metadata":{"labels":{"` + twv1.ProfileLabel + `":"` + profile + `"}}}`)
}

func window(ns, name string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func profile(name string) *twv1.BrowserProfile {
	return &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func lease(ns, name string) *coordv1.Lease {
	return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func statusPatch(c client.Client, ctx context.Context, obj client.Object, patch string, opts ...client.SubResourcePatchOption) error {
	return c.Status().Patch(ctx, obj, merge(patch), opts...)
}

// check runs each request and compares how it ended with what it wants.
func check(t *testing.T, reqs []request) {
	t.Helper()
	for _, r := range reqs {
		t.Run(r.name, func(t *testing.T) {
			c := as[r.as]
			if c == nil {
				t.Fatalf("no identity %q", r.as)
			}
			err := r.do(context.Background(), c)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			switch r.want {
			case allowed:
				if err != nil {
					t.Fatalf("%s: refused, want allowed: %v", r.as, err)
				}
				return
			case byRBAC:
				if !apierrors.IsForbidden(err) || strings.Contains(msg, "ValidatingAdmissionPolicy") {
					t.Fatalf("%s: got %v, want RBAC's refusal", r.as, err)
				}
			case byCRD:
				if !apierrors.IsInvalid(err) || strings.Contains(msg, "ValidatingAdmissionPolicy") {
					t.Fatalf("%s: got %v, want the CRD's validation refusal", r.as, err)
				}
			default:
				if !apierrors.IsForbidden(err) || !access.Denied(err, r.want) {
					t.Fatalf("%s: got %v, want a refusal by admission policy %s", r.as, err, r.want)
				}
				// A policy that fails (CEL error) also refuses, but teaches nothing.
				for _, bad := range []string{"resulted in error", "compilation", "no such key", "failed"} {
					if strings.Contains(msg, bad) {
						t.Fatalf("%s: policy %s failed instead of deciding: %v", r.as, r.want, err)
					}
				}
			}
			for _, s := range r.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%s: the refusal does not say %q:\n%s", r.as, s, msg)
				}
			}
			t.Logf("%s: %s", r.as, msg)
		})
	}
}

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
