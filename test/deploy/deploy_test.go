package deploy_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/zapr"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	authnv1 "k8s.io/api/authentication/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// warnings collects the API server's warnings (deprecations, Pod Security).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// TestDeployOnAPIServer: everything config/default renders applies server-side to
// a bare kube-apiserver (nothing installed beforehand) without a warning; the pods
// of its Deployment and StatefulSet (no kubelet runs them; their objects are made
// from the templates, as the workload controllers would) pass the namespace's
// restricted Pod Security; and the controller and an agent, each run under a
// token of its ServiceAccount bound to its pod, with the flags the manifests give
// them, serve a session: its Open window is opened by the agent of the profile
// named after the pod, and cleaned up when the session is deleted. The shipped
// RBAC and admission policies are all the roles need as deployed.
func TestDeployOnAPIServer(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	zl, _ := zap.NewDevelopment(zap.IncreaseLevel(zapcore.ErrorLevel))
	ctrl.SetLogger(zapr.NewLogger(zl))

	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	admin, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	warned := &warnings{}
	admin = rest.CopyConfig(admin)
	admin.WarningHandler = warned
	scheme := run.Scheme()
	if err := apiextv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	adm, err := client.New(admin, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	// Server-side apply, namespaces and CRDs first (as kubectl apply orders them).
	objs := render(t)
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	kinds := map[string]int{}
	for r := range 3 {
		for _, u := range objs {
			if rank(u) != r {
				continue
			}
			if err := adm.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
				t.Fatalf("server-side apply of %s %s: %v", u.GetKind(), u.GetName(), err)
			}
			kinds[u.GetKind()]++
		}
		if r == 1 {
			for _, u := range objs {
				if u.GetKind() != "CustomResourceDefinition" {
					continue
				}
				g.Eventually(func(g Gomega) {
					crd := &apiextv1.CustomResourceDefinition{}
					g.Expect(adm.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd)).To(Succeed())
					established := false
					for _, c := range crd.Status.Conditions {
						established = established || (c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue)
					}
					g.Expect(established).To(BeTrue(), "CRD %s established", u.GetName())
				}).Should(Succeed())
			}
			// The clients learn the new kinds.
			if adm, err = client.New(admin, client.Options{Scheme: scheme}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("applied %d objects: %v", len(objs), kinds)
	for _, k := range []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding",
		"ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Deployment", "StatefulSet", "Service"} {
		g.Expect(kinds).To(HaveKey(k), "config/default renders a %s", k)
	}

	// Pod Security is enforced in the namespace (a bare pod is refused) …
	const sysNS = "tabwarden-system"
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sysNS, Name: "bare"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}
	err = adm.Create(ctx, bare, client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a pod violating the restricted Pod Security standard is refused in %s: %v", sysNS, err)
	// … and the shipped pods pass it.
	dep, sts := workloads(t, objs)
	mkPod := func(name string, tmpl corev1.PodTemplateSpec) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
		p.Namespace, p.Name = sysNS, name
		if err := adm.Create(ctx, p); err != nil {
			t.Fatalf("pod %s from its template: %v", name, err)
		}
		return p
	}
	ctlPod := mkPod("tabwarden-controller-0", dep.Spec.Template)
	agtPod := mkPod(sts.Name+"-0", sts.Spec.Template)
	profile := agtPod.Name
	warned.mu.Lock()
	g.Expect(warned.list).To(BeEmpty(), "the API server warned about config/default")
	warned.mu.Unlock()

	// A token of each role's ServiceAccount, bound to its pod.
	cs := kubernetes.NewForConfigOrDie(admin)
	token := func(p *corev1.Pod) *rest.Config {
		req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		}}
		tr, err := cs.CoreV1().ServiceAccounts(sysNS).CreateToken(ctx, p.Spec.ServiceAccountName, req, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", p.Spec.ServiceAccountName, err)
		}
		return &rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
	}
	ctlCfg, agtCfg := token(ctlPod), token(agtPod)

	// The policies are in force before anything relies on them: an administrator
	// may not create a Spawned window (only agents do).
	g.Eventually(func() string {
		w := &twv1.BrowserWindow{
			ObjectMeta: metav1.ObjectMeta{Namespace: sysNS, Name: "probe"},
			Spec: twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: "probe"}, Source: twv1.SourceSpawned,
				Spawn: &twv1.SpawnInfo{TabID: "probe"}},
		}
		err := adm.Create(ctx, w, client.DryRunAll)
		if err == nil {
			return ""
		}
		return err.Error()
	}).Should(ContainSubstring("ValidatingAdmissionPolicy 'tabwarden-window-create'"))

	// The administrator's part: the profile and who may use it.
	ns := testenv.NewNamespace(t, adm, "deploy-")
	g.Expect(adm.Create(ctx, &twv1.BrowserProfile{
		ObjectMeta: metav1.ObjectMeta{Name: profile, Labels: map[string]string{"tabwarden.dev/pool": "deploy"}},
		Spec:       twv1.BrowserProfileSpec{Driver: twv1.DriverFake, Namespaces: []string{ns}},
	})).To(Succeed())

	// The roles, with the flags the manifests give them.
	ctlArgs := container(t, &dep.Spec.Template.Spec, "controller").Args
	agtArgs := container(t, &sts.Spec.Template.Spec, "agent").Args
	arg := func(args []string, name string) string {
		v, ok := flagValue(args, name)
		if !ok {
			t.Fatalf("no --%s in %v", name, args)
		}
		return strings.ReplaceAll(v, "$(POD_NAME)", agtPod.Name)
	}
	grace, err := time.ParseDuration(arg(ctlArgs, "agent-grace-period"))
	if err != nil {
		t.Fatal(err)
	}
	leaderElect := slices.Contains(ctlArgs, "--leader-elect") || slices.Contains(ctlArgs, "--leader-elect=true")
	g.Expect(leaderElect).To(BeTrue(), "two controller replicas need --leader-elect")
	testenv.RunRole(t, func(ctx context.Context) error {
		return run.Controller(ctx, ctlCfg, run.ControllerOptions{
			Common:                  run.Common{SkipNameValidation: true},
			LeaderElection:          leaderElect,
			LeaderElectionNamespace: arg(ctlArgs, "leader-election-namespace"),
			LeaseNamespace:          arg(ctlArgs, "lease-namespace"),
			AgentGrace:              grace,
		})
	})
	b := fake.New()
	testenv.RunRole(t, func(ctx context.Context) error {
		return run.Agent(ctx, agtCfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
			Profile: arg(agtArgs, "profile"), Identity: arg(agtArgs, "identity"), LeaseNamespace: arg(agtArgs, "lease-namespace"),
			Driver: twv1.DriverFake, Browser: b, Heartbeat: time.Second,
		}})
	})

	// The controller leads; the agent heartbeats and says its profile is connected.
	g.Eventually(func() error {
		return adm.Get(ctx, client.ObjectKey{Namespace: arg(ctlArgs, "leader-election-namespace"), Name: "controller.tabwarden.dev"}, &coordv1.Lease{})
	}).Should(Succeed())
	g.Eventually(func() error {
		return adm.Get(ctx, client.ObjectKey{Namespace: arg(agtArgs, "lease-namespace"), Name: "tabwarden-profile-" + profile}, &coordv1.Lease{})
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		p := &twv1.BrowserProfile{}
		g.Expect(adm.Get(ctx, client.ObjectKey{Name: profile}, p)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition)).To(BeTrue())
	}).Should(Succeed())

	// A session placed on the pod's profile, by selector, gets its window opened …
	s := &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployed"},
		Spec: twv1.BrowserSessionSpec{Thread: "thread-deploy", Purpose: "prove the deployed roles",
			ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tabwarden.dev/pool": "deploy"}}},
	}
	g.Expect(adm.Create(ctx, s)).To(Succeed())
	w := testenv.OpenWindow(ns, "page", s.Name, "https://deploy.example/")
	g.Expect(adm.Create(ctx, w)).To(Succeed())
	var tab string
	g.Eventually(func(g Gomega) {
		g.Expect(adm.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
		g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
		tab = w.Status.TabID
		g.Expect(b.HasPage(tab)).To(BeTrue())
	}).Should(Succeed())
	g.Expect(testenv.Get(t, adm, s).Status.ProfileName).To(Equal(profile))

	// … and closed when the session is deleted.
	g.Expect(adm.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(adm.Get(ctx, client.ObjectKeyFromObject(s), &twv1.BrowserSession{})) &&
			apierrors.IsNotFound(adm.Get(ctx, client.ObjectKeyFromObject(w), &twv1.BrowserWindow{}))
	}).Should(BeTrue())
	g.Expect(b.HasPage(tab)).To(BeFalse(), "the session's page is closed")
}
