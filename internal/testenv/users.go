package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
)

// AllowUser lets user use sessions in namespace ns (the shipped tabwarden-edit
// role, bound there) and read the profiles (the shipped tabwarden-profile-viewer,
// bound cluster-wide), on the control plane of admin, and
// waits until RBAC says so. It returns the user's config (a client
// certificate; no group beyond system:authenticated).
func AllowUser(t testing.TB, admin *rest.Config, ns, user string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	c := newClient(t, admin)
	if err := access.AllowUser(ctx, c, ns, user); err != nil {
		t.Fatalf("letting %s use sessions in %s: %v", user, ns, err)
	}
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	if err := access.Apply(ctx, c,
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "profile-viewer-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: access.ProfileViewerRole},
			Subjects:   subject,
		},
	); err != nil {
		t.Fatalf("letting %s read profiles: %v", user, err)
	}
	cfg := MustConfig(t)(UserConfig(admin, user))
	uc := newClient(t, cfg)
	// RBAC takes effect a moment after the bindings are made.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := uc.List(ctx, &twv1.BrowserSessionList{}, client.InNamespace(ns))
		if err == nil {
			err = uc.List(ctx, &twv1.BrowserProfileList{})
		}
		if err == nil {
			return cfg
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %s may not use namespace %s: %v", user, ns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kubeconfig writes cfg as a kubeconfig file whose context's namespace is ns,
// as `kubectl config` would, and returns its path.
func Kubeconfig(t testing.TB, cfg *rest.Config, ns string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "user", Namespace: ns}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
