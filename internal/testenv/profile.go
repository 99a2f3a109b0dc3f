package testenv

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/run"
)

// EnsureProfile creates BrowserProfile name, as an admin would before starting
// its agent, admitting every namespace (namespaceSelector: {}) and private
// destinations (the fixture site is on loopback), when it is missing. A profile that exists is left as it is, tenancy included, so a test
// that wants a narrower one creates it first. An agent that finds its profile
// missing registers it admitting no namespace (the secure default).
func EnsureProfile(ctx context.Context, c client.Client, name string, driver twv1.DriverType) error {
	p := &twv1.BrowserProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: twv1.BrowserProfileSpec{Driver: driver, NamespaceSelector: &metav1.LabelSelector{},
			// The fixture site is served on loopback.
			URLPolicy: &twv1.URLPolicy{AllowPrivateNetworks: true}},
	}
	return client.IgnoreAlreadyExists(c.Create(ctx, p))
}

// ensureProfile is EnsureProfile with cfg's identity (an admin's), failing the test on error.
func ensureProfile(t testing.TB, cfg *rest.Config, name string, driver twv1.DriverType) {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
	if err == nil {
		err = EnsureProfile(context.Background(), c, name, driver)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("ensuring BrowserProfile %s: %v", name, err)
	}
}
