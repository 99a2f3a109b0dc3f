package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

var (
	cfg *rest.Config
	k8s client.Client
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Logs: testenv.QuietLogs, Setup: func(e *testenv.Env) error {
		cfg, k8s = e.Admin, e.Client
		return nil
	}})
}

func startController(t *testing.T) *testenv.Role { return testenv.StartController(t, cfg) }

// startRoles starts the controller and the agent of profile on b.
func startRoles(t *testing.T, profile string, b browser.Browser) {
	startController(t)
	startAgent(t, profile, b)
}

func startAgent(t *testing.T, profile string, b browser.Browser) *testenv.Role {
	return testenv.StartAgent(t, cfg, agent.Options{Profile: profile, Driver: twv1.DriverFake, Browser: b, LeaseNamespace: access.SystemNamespace})
}

func newNamespace(t *testing.T) string { return testenv.NewNamespace(t, k8s, "tw-") }

func session(ns, name, profile string) *twv1.BrowserSession {
	return &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: twv1.BrowserSessionSpec{
			Thread: "thread-42", Purpose: "file the 2026 tax return form", ProfileName: profile,
		},
	}
}

func openWindow(ns, name, sess, url string) *twv1.BrowserWindow {
	return testenv.OpenWindow(ns, name, sess, url)
}

// sessionWithWindow creates session sess of profile and its Open window name at url.
func sessionWithWindow(g *WithT, ns, sess, profile, name, url string) *twv1.BrowserWindow {
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, session(ns, sess, profile))).To(Succeed())
	w := openWindow(ns, name, sess, url)
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	return w
}

func get[T client.Object](t *testing.T, obj T) T { t.Helper(); return testenv.Get(t, k8s, obj) }

// windowsOf lists a session's windows by label, as `kubectl get bw -l` would.
func windowsOf(ns, sess string, extra ...string) []twv1.BrowserWindow {
	sel := client.MatchingLabels{twv1.SessionLabel: sess}
	for i := 0; i+1 < len(extra); i += 2 {
		sel[extra[i]] = extra[i+1]
	}
	var list twv1.BrowserWindowList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns), sel); err != nil {
		return nil
	}
	return list.Items
}

// spawnedBy returns the adopted window of a page, if any.
func spawnedWindow(ns, sess, page string) *twv1.BrowserWindow {
	for _, w := range windowsOf(ns, sess, twv1.SourceLabel, "spawned") {
		if w.Spec.Spawn != nil && w.Spec.Spawn.TabID == page {
			return &w
		}
	}
	return nil
}

// deleteAndWait deletes obj and waits until the API server no longer has it (its
// finalizers done), as `kubectl delete --wait` does.
func deleteAndWait(t *testing.T, g *WithT, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	g.Expect(k8s.Delete(ctx, obj)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)) }).Should(BeTrue())
}

// begin opens a test on the package's shared control plane (TestMain): a
// gomega whose Eventually waits up to timeout, and a fresh namespace.
func begin(t *testing.T, timeout time.Duration) (*WithT, context.Context, string) {
	t.Helper()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(timeout)
	return g, context.Background(), newNamespace(t)
}
