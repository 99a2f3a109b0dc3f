package up

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ContextName names the cluster and the context of every kubeconfig `up`
// writes, as kind and minikube name theirs after themselves.
const ContextName = "tabwarden"

// UserName is the non-admin identity `up` writes UserKubeconfigFile for:
// tabwarden-edit in SessionNamespace and tabwarden-profile-viewer cluster-wide,
// what an agent driving sessions (kubectl, MCP) needs and no more.
const UserName = "tabwarden-user"

// localKubeconfig renames envtest's cluster and context of kc to ContextName
// and sets the context's namespace.
func localKubeconfig(kc []byte, namespace string) ([]byte, error) {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return nil, err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("kubeconfig has no current context %q", cfg.CurrentContext)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("kubeconfig has no cluster %q", ctx.Cluster)
	}
	delete(cfg.Clusters, ctx.Cluster)
	delete(cfg.Contexts, cfg.CurrentContext)
	ctx.Cluster, ctx.Namespace = ContextName, namespace
	cfg.Clusters[ContextName] = cluster
	cfg.Contexts[ContextName] = ctx
	cfg.CurrentContext = ContextName
	return clientcmd.Write(*cfg)
}

// grantUser binds UserName to the shipped user roles (config/rbac/user_roles.yaml):
// tabwarden-edit in namespace, tabwarden-profile-viewer cluster-wide.
func grantUser(ctx context.Context, k8s client.Client, namespace string) error {
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: UserName}}
	for _, obj := range []client.Object{
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: UserName, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tabwarden-edit"},
			Subjects:   subjects,
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: UserName + "-profiles"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tabwarden-profile-viewer"},
			Subjects:   subjects,
		},
	} {
		if err := k8s.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("granting %s its roles: %w", UserName, err)
		}
	}
	return nil
}
