package authz_test

import (
	"context"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
)

// TestServiceAccounts: in a cluster the roles run as the ServiceAccounts of
// config/rbac, bound by the shipped bindings; an agent is known by the pod its
// token is bound to, whose name is its profile's (one profile per pod).
func TestServiceAccounts(t *testing.T) {
	ctx := context.Background()
	adm := as[asAdmin]
	var objs []client.Object
	objs = append(objs, shipped(t, "rbac", "service_account.yaml")...)
	objs = append(objs, shipped(t, "rbac", "role_binding.yaml")...)
	if err := access.Apply(ctx, adm, objs...); err != nil {
		t.Fatal(err)
	}
	const pod = "remote-chrome-0"
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: access.SystemNamespace, Name: pod},
		Spec: corev1.PodSpec{
			ServiceAccountName: "tabwarden-agent",
			Containers:         []corev1.Container{{Name: "agent", Image: "tabwarden:dev"}},
		},
	}
	if err := adm.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(admin)
	token := func(sa string, bound *corev1.Pod) client.Client {
		t.Helper()
		req := &authnv1.TokenRequest{}
		if bound != nil {
			req.Spec.BoundObjectRef = &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: bound.Name, UID: bound.UID}
		}
		tr, err := cs.CoreV1().ServiceAccounts(access.SystemNamespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", sa, err)
		}
		cfg := &rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
		c, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	as["agent pod "+pod] = token("tabwarden-agent", p)
	as["agent without a pod"] = token("tabwarden-agent", nil)
	as["controller service account"] = token("tabwarden-controller", nil)
	t.Cleanup(func() {
		delete(as, "agent pod "+pod)
		delete(as, "agent without a pod")
		delete(as, "controller service account")
	})

	f := newFixture(t)
	ns := f.ns
	check(t, []request{
		{
			name: "the agent of pod " + pod + " registers its profile", as: "agent pod " + pod, want: allowed,
			do: func(ctx context.Context, c client.Client) error { return c.Create(ctx, profile(pod)) },
		},
		{
			name: "the agent of pod " + pod + " adopts a page into its profile", as: "agent pod " + pod, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "sa-adopted", sessA, pod))
			},
		},
		{
			name: "the agent of pod " + pod + " renews its lease", as: "agent pod " + pod, want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, lease(access.SystemNamespace, "tabwarden-profile-"+pod))
			},
		},
		{
			name: "the agent of pod " + pod + " writes profile a", as: "agent pod " + pod, want: profilePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, profile("a"), merge(`{"spec":{"pool":true}}`))
			},
			says: []string{"the agent of profile " + pod + " writes only BrowserProfile " + pod + ", not a"},
		},
		{
			name: "the agent of pod " + pod + " adopts a page into profile a", as: "agent pod " + pod, want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "sa-into-a", sessA, "a"))
			},
			says: []string{"the agent of profile " + pod + ` may not set it to "a"`},
		},
		{
			name: "the agent of pod " + pod + " writes the status of a window of profile a", as: "agent pod " + pod, want: windowStatus,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, window(ns, openA), `{"status":{"tabId":"x"}}`)
			},
			says: []string{"the agent of its profile, a,"},
		},
		{
			name: "the agents' service account with a token bound to no pod adopts a page", as: "agent without a pod", want: windowCreate,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, spawned(ns, "podless", sessA, "a"))
			},
			says: []string{"only a tabwarden agent creates Spawned windows", "user " + access.AgentServiceAccount},
		},
		{
			name: "the agents' service account with a token bound to no pod renews a lease", as: "agent without a pod", want: leasePolicy,
			do: func(ctx context.Context, c client.Client) error {
				return c.Create(ctx, lease(access.SystemNamespace, "tabwarden-profile-"+pod))
			},
			says: []string{"is no tabwarden agent identity", "bound to the pod named after its profile"},
		},
		{
			name: "the controller's service account places a session", as: "controller service account", want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return statusPatch(c, ctx, session(ns, sessA, ""), `{"status":{"profileName":"a"}}`)
			},
		},
		{
			name: "the controller's service account labels a window", as: "controller service account", want: allowed,
			do: func(ctx context.Context, c client.Client) error {
				return c.Patch(ctx, window(ns, openU), labelPatch("a"))
			},
		},
		{
			name: "the controller's service account registers a profile", as: "controller service account", want: byRBAC,
			do:   func(ctx context.Context, c client.Client) error { return c.Create(ctx, profile("by-controller-sa")) },
			says: []string{`cannot create resource "browserprofiles"`},
		},
	})
}
