// Package authz_test proves tabwarden's access control on a real kube-apiserver
// with the shipped RBAC (config/rbac) and admission policies (config/admission):
// each attack is made under the identity that would try it, and refused by the
// API server with a message that teaches; its allowed counterpart succeeds.
package authz_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

var (
	admin *rest.Config
	// as holds a client per identity, by the name the tests use.
	as = map[string]client.Client{}
)

// The identities of the tests.
const (
	// admin is system:masters: RBAC allows it everything, the policies do not.
	asAdmin = "admin"
	// alice is a user allowed by RBAC to write every tabwarden kind, so that what
	// refuses her is the admission policies.
	asAlice = "alice"
	// impostor calls itself tabwarden:agent:a but is not in group tabwarden:agents.
	asImpostor   = "impostor"
	asController = "controller"
	asAgentA     = "agent a"
	asAgentB     = "agent b"
	// agent c's profile does not exist: it registers it.
	asAgentC = "agent c"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Logs: &testenv.Logs{Quiet: zapcore.ErrorLevel, Debug: zapcore.ErrorLevel}, Setup: setup})
}

func setup(e *testenv.Env) error {
	ctx := context.Background()
	admin = e.Admin
	adm := e.Client
	// Users get every tabwarden kind through RBAC; only the policies stop them.
	if err := access.Apply(ctx, adm,
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "authz-test-tabwarden-user"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"tabwarden.dev"}, Resources: []string{"*"}, Verbs: []string{"*"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"*"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "authz-test-tabwarden-user"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "authz-test-tabwarden-user"},
			// A group, not the users: the impostor's user name is agent a's.
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "tabwarden-users"}},
		},
	); err != nil {
		return err
	}
	cfgs := map[string]func() (*rest.Config, error){
		asAdmin: func() (*rest.Config, error) { return admin, nil },
		asAlice: func() (*rest.Config, error) { return testenv.UserConfig(admin, "alice", "tabwarden-users") },
		asImpostor: func() (*rest.Config, error) {
			return testenv.UserConfig(admin, access.AgentUser("a"), "tabwarden-users")
		},
		asController: func() (*rest.Config, error) { return testenv.ControllerConfig(admin) },
		asAgentA:     func() (*rest.Config, error) { return testenv.AgentConfig(admin, "a") },
		asAgentB:     func() (*rest.Config, error) { return testenv.AgentConfig(admin, "b") },
		asAgentC:     func() (*rest.Config, error) { return testenv.AgentConfig(admin, "c") },
	}
	for name, f := range cfgs {
		cfg, err := f()
		if err != nil {
			return err
		}
		if as[name], err = client.New(cfg, client.Options{Scheme: run.Scheme()}); err != nil {
			return err
		}
	}
	return nil
}

// shipped reads a manifest of config/.
func shipped(t *testing.T, path ...string) []client.Object {
	t.Helper()
	objs, err := access.ReadFile(filepath.Join(append([]string{testenv.Root(), "config"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]client.Object, len(objs))
	for i := range objs {
		out[i] = objs[i]
	}
	return out
}
