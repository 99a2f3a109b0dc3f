package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tabwarden/tabwarden/internal/up/access"
)

// UserRole is the ClusterRole AllowUser binds in a namespace: what a person or
// an AI agent using sessions there needs (sessions, windows, actions; reading
// events), no more.
const UserRole = "tabwarden-test-session-user"

// ProfileReaderRole lets its subjects read BrowserProfiles (cluster-scoped).
const ProfileReaderRole = "tabwarden-test-profile-reader"

// AllowUser lets user use sessions in namespace ns (UserRole bound there) and
// read the profiles, on the control plane of admin. It returns the user's
// config (a client certificate; no group beyond system:authenticated).
func AllowUser(t testing.TB, admin *rest.Config, ns, user string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	c := newClient(t, admin)
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	objs := []client.Object{
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: UserRole},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"tabwarden.dev"}, Resources: []string{"browsersessions", "browserwindows", "browseractions"},
					Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: ProfileReaderRole},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"tabwarden.dev"}, Resources: []string{"browserprofiles"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "session-user-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: UserRole},
			Subjects:   subject,
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "profile-reader-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ProfileReaderRole},
			Subjects:   subject,
		},
	}
	if err := access.Apply(ctx, c, objs...); err != nil {
		t.Fatalf("letting %s use sessions in %s: %v", user, ns, err)
	}
	return MustConfig(t)(UserConfig(admin, user))
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
