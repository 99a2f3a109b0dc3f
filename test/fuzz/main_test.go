// Package fuzz is a model-based fuzz of the whole system: a real kube-apiserver
// (envtest, with the shipped RBAC and admission policies), the controller and an
// agent each under its own identity, a user under theirs, and the fake browser.
// Seeded random sequences of operations (sessions, opens, spawns with and without
// an opener, the user's own tabs, binds, acknowledgements, finishes, deletes,
// forged objects, controller and agent restarts, browser disconnects, faults
// of the agent's link to the API server) run in
// episodes; after each quiescence the invariants of docs/contract.md are checked
// against a reference model. A failing episode is minimized (delta debugging)
// and printed with the flags that replay it.
//
//	go test ./test/fuzz                          # the short seed run (make test)
//	hack/fuzz.sh 100000 1 4                      # make fuzz: 4 processes (-shards 4 -shard i)
//	go test ./test/fuzz -args -seed 7 -episode 3 # replay one episode
package fuzz

import (
	"context"
	"flag"
	"testing"

	"go.uber.org/zap/zapcore"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

var (
	admin *rest.Config
	k8s   client.Client // the administrator: reads, and what nobody else may do

	flagOps      = flag.Int("ops", 300, "operations in all (make fuzz: 100000)")
	flagEpisode  = flag.Int("episode-ops", 60, "operations per episode (each episode starts a fresh browser, namespace and agent)")
	flagSeed     = flag.Int64("seed", 1, "seed of the first episode; episode i uses seed+i")
	flagOnly     = flag.Int("episode", -1, "run only this episode (replay)")
	flagShards   = flag.Int("shards", 1, "split the run's episodes across this many processes (hack/fuzz.sh starts them): episode i runs in shard i mod shards")
	flagShard    = flag.Int("shard", 0, "which shard this process is, 0 ≤ shard < shards")
	flagMinimize = flag.Duration("minimize", 0, "time budget to minimize a failing episode (0: the test's default)")
	flagReplay   = flag.String("replay", "", "run exactly this sequence, as a failing run prints it: \"[session(1,2) open(3,4) ...]\"")
)

// userGroup is the group the fuzz's user is in: RBAC lets it write every
// tabwarden kind, and only the admission policies stop it.
const userGroup = "tabwarden-fuzz-users"

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Logs: &testenv.Logs{Quiet: zapcore.DPanicLevel, Debug: zapcore.InfoLevel}, Setup: func(e *testenv.Env) error {
		admin, k8s = e.Admin, e.Client
		return access.Apply(context.Background(), k8s,
			&rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "fuzz-tabwarden-user"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"tabwarden.dev"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
			},
			&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "fuzz-tabwarden-user"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fuzz-tabwarden-user"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: userGroup}},
			})
	}})
}
