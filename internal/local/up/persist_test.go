package up

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/private"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestControlPlaneKeepsState: the cluster's state outlives a run. A second
// control plane on the same directory (new ports, new certificates) starts on
// the first one's etcd data: what was written is there, and everything up
// writes at start (CRDs, namespaces, RBAC and admission policies, profiles,
// the user's bindings) is written again without an AlreadyExists failure,
// leaving an admin's edit of a profile's spec as it was. wipeState (--fresh)
// removes the data and the cdp ledgers, not the pairing.
func TestControlPlaneKeepsState(t *testing.T) {
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	repo := testenv.Root()
	manifests, err := access.Load(repo)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), DefaultDir)
	if _, err := private.Dir(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// start runs what up writes at start on a control plane of dir.
	start := func(n int) (*controlPlane, client.Client) {
		t.Helper()
		began := time.Now()
		cp, err := startControlPlane(ctx, dir, assets, filepath.Join(repo, "crds"), 2*time.Minute, 30*time.Second)
		if err != nil {
			t.Fatalf("run %d: %v", n, err)
		}
		k8s, err := client.New(cp.Config, client.Options{Scheme: run.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		if err := manifests.Install(ctx, k8s); err != nil {
			t.Fatalf("run %d: installing config/rbac and config/admission: %v", n, err)
		}
		if err := access.WaitEnforced(ctx, cp.Config, run.Scheme()); err != nil {
			t.Fatalf("run %d: %v", n, err)
		}
		if err := ensureDesktopProfile(ctx, k8s, DefaultLocalProfile, twv1.DriverCDP); err != nil {
			t.Fatalf("run %d: %v", n, err)
		}
		if err := grantUser(ctx, k8s, SessionNamespace); err != nil {
			t.Fatalf("run %d: %v", n, err)
		}
		t.Logf("run %d: control plane up and configured in %v", n, time.Since(began).Round(time.Millisecond))
		return cp, k8s
	}

	cp, k8s := start(1)
	firstEtcd := cp.etcd.ClientURL.String()
	p := &twv1.BrowserProfile{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: DefaultLocalProfile}, p); err != nil {
		t.Fatal(err)
	}
	// An admin admits a namespace of theirs.
	p.Spec.Namespaces = append(p.Spec.Namespaces, "team-a")
	if err := k8s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	sess := &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: SessionNamespace, Name: "kept"},
		Spec:       twv1.BrowserSessionSpec{Thread: "t", Purpose: "outlive a restart", ProfileName: DefaultLocalProfile},
	}
	if err := k8s.Create(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, EtcdDataDir)); err != nil {
		t.Fatalf("etcd's data is gone after Stop: %v", err)
	}

	cp, k8s = start(2)
	if cp.etcd.ClientURL.String() == firstEtcd {
		t.Logf("etcd happened to get the same client port twice (%s)", firstEtcd)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(sess), &twv1.BrowserSession{}); err != nil {
		t.Fatalf("the session of the first run: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: DefaultLocalProfile}, p); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Spec.Namespaces, "team-a") || !slices.Contains(p.Spec.Namespaces, SessionNamespace) {
		t.Fatalf("the admin's edit of the profile did not survive the restart: namespaces %v", p.Spec.Namespaces)
	}
	fi, err := os.Stat(filepath.Join(dir, EtcdDataDir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("etcd's data directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}

	// --fresh: the data and the ledger go, the pairing stays.
	state := filepath.Join(dir, StateDir)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ledger, pairing := cdp.LedgerFile(state, DefaultLocalProfile), filepath.Join(state, "pairing.json")
	for _, f := range []string{ledger, pairing} {
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := wipeState(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wipeState removed %v", removed)
	for _, f := range []string{filepath.Join(dir, EtcdDataDir), ledger} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s is still there after wipeState (%v)", f, err)
		}
	}
	if _, err := os.Stat(pairing); err != nil {
		t.Errorf("wipeState removed the pairing: %v", err)
	}
	cp, k8s = start(3)
	defer func() { _ = cp.Stop() }()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(sess), &twv1.BrowserSession{}); err == nil {
		t.Fatal("the session of the first run is there after wipeState")
	}
}
