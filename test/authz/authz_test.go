package authz_test

import (
	"context"
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
