package up

import (
	"context"
	"fmt"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tabwarden/tabwarden/internal/k8s/access"
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

// writeIdentities writes the kubeconfig of each identity that is not the
// admin's: the person's own non-admin one (UserKubeconfigFile, to hand to an
// agent or MCP client), the controller's and each agent's, which the roles run
// under.
func (r *runner) writeIdentities(ctx context.Context) error {
	if err := grantUser(ctx, r.k8s, SessionNamespace); err != nil {
		return orStopped(ctx, err)
	}
	if _, err := r.roleConfig(UserKubeconfigFile, UserName, ""); err != nil {
		return err
	}
	r.info.UserKubeconfig = r.info.RoleKubeconfigs[UserName]
	delete(r.info.RoleKubeconfigs, UserName)
	var err error
	if r.controllerCfg, err = r.roleConfig(ControllerKubeconfigFile, access.ControllerUser, access.ControllerGroup); err != nil {
		return err
	}
	if r.localCfg, err = r.roleConfig(AgentKubeconfigFile(r.o.LocalProfile), access.AgentUser(r.o.LocalProfile), access.AgentGroup); err != nil {
		return err
	}
	if r.host != nil {
		if r.extensionCfg, err = r.roleConfig(AgentKubeconfigFile(r.o.ExtensionProfile), access.AgentUser(r.o.ExtensionProfile), access.AgentGroup); err != nil {
			return err
		}
	}
	return nil
}

// roleConfig provisions user (in group, if any) on the control plane, writes
// its kubeconfig to Dir/file, records it in Info.RoleKubeconfigs and returns
// the client configuration it names.
func (r *runner) roleConfig(file, user, group string) (*rest.Config, error) {
	var groups []string
	if group != "" {
		groups = []string{group}
	}
	u, err := r.cp.AddUser(envtest.User{Name: user, Groups: groups})
	if err != nil {
		return nil, fmt.Errorf("creating the identity %s: %w", user, err)
	}
	kc, err := u.KubeConfig()
	if err == nil {
		kc, err = localKubeconfig(kc, SessionNamespace)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
	}
	path := filepath.Join(r.dir, file)
	if err := writeFile(path, kc); err != nil {
		return nil, err
	}
	r.info.RoleKubeconfigs[user] = path
	return clientcmd.RESTConfigFromKubeConfig(kc)
}
