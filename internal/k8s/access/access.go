// Package access installs tabwarden's access control on an API server outside a
// cluster (envtest, `tabwarden up`) from the very files shipped in config/: the
// generated ClusterRoles and lease Roles of config/rbac, bound here to the client
// certificate identities of the roles (in a cluster, config/rbac binds them to
// ServiceAccounts), and the ValidatingAdmissionPolicies of config/admission. It
// also names those identities, which the policies recognize.
package access

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// The identities the admission policies know (config/admission). Outside a
// cluster the roles authenticate with client certificates; in one, with the
// ServiceAccounts of config/rbac (an agent's token bound to the pod named after
// its profile).
const (
	// SystemNamespace holds the ServiceAccounts, the lease Roles and the Leases.
	SystemNamespace = "tabwarden-system"

	ControllerUser  = "tabwarden:controller"
	ControllerGroup = "tabwarden:controllers"
	// AgentUserPrefix + profile is the user of the agent of that profile.
	AgentUserPrefix = "tabwarden:agent:"
	AgentGroup      = "tabwarden:agents"

	ControllerServiceAccount = "system:serviceaccount:" + SystemNamespace + ":tabwarden-controller"
	AgentServiceAccount      = "system:serviceaccount:" + SystemNamespace + ":tabwarden-agent"
	// PodNameExtra is the user extra of a pod-bound ServiceAccount token that
	// names the pod; for an agent, its profile.
	PodNameExtra = "authentication.kubernetes.io/pod-name"

	// The roles, as named in config/rbac (generated from the +kubebuilder:rbac markers).
	ControllerRole     = "tabwarden-controller"
	AgentRole          = "tabwarden-agent"
	LeaderElectionRole = "tabwarden-leader-election"
	AgentLeaseRole     = "tabwarden-agent-lease"

	fieldOwner = "tabwarden-access"
)

// The users' roles (config/rbac/user_roles.yaml).
const (
	UserEditRole      = "tabwarden-edit"
	UserViewRole      = "tabwarden-view"
	ProfileViewerRole = "tabwarden-profile-viewer"
)

// AllowUser binds tabwarden-edit to user in namespace ns, as a namespace admin
// would (or the built-in edit role, which aggregates it).
func AllowUser(ctx context.Context, c client.Client, ns, user string) error {
	rb := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: UserEditRole + "-" + strings.ReplaceAll(user, ":", "-"), Labels: map[string]string{"app.kubernetes.io/name": "tabwarden"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: UserEditRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	return createOrUpdate(ctx, c, rb)
}

// AgentUser is the user name of the agent of profile.
func AgentUser(profile string) string { return AgentUserPrefix + profile }

// Policies are the names of the ValidatingAdmissionPolicies in config/admission.
var Policies = []string{
	"tabwarden-window-create", "tabwarden-window-update", "tabwarden-window-status",
	"tabwarden-session-status", "tabwarden-profile", "tabwarden-agent-lease", "tabwarden-tablist",
	"tabwarden-action-status", "tabwarden-action-label",
	"tabwarden-screenshot",
}

// Manifests are the shipped access control objects.
type Manifests struct {
	// ControllerRBAC and AgentRBAC are config/rbac/controller_role.yaml and
	// agent_role.yaml: a ClusterRole and a namespaced lease Role each.
	ControllerRBAC, AgentRBAC []*unstructured.Unstructured
	// UserRBAC is config/rbac/user_roles.yaml: tabwarden-edit and tabwarden-view
	// (aggregated into the built-in edit, admin and view roles) and
	// tabwarden-profile-admin.
	UserRBAC []*unstructured.Unstructured
	// Admission is config/admission: the policies and their bindings.
	Admission []*unstructured.Unstructured
}

// Load reads the manifests from the repository at repo.
func Load(repo string) (*Manifests, error) {
	m := &Manifests{}
	var err error
	if m.ControllerRBAC, err = readFile(filepath.Join(repo, "config", "rbac", "controller_role.yaml")); err != nil {
		return nil, err
	}
	if m.AgentRBAC, err = readFile(filepath.Join(repo, "config", "rbac", "agent_role.yaml")); err != nil {
		return nil, err
	}
	if m.UserRBAC, err = readFile(filepath.Join(repo, "config", "rbac", "user_roles.yaml")); err != nil {
		return nil, err
	}
	dir := filepath.Join(repo, "config", "admission")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		objs, err := readFile(f)
		if err != nil {
			return nil, err
		}
		m.Admission = append(m.Admission, objs...)
	}
	if len(m.Admission) == 0 {
		return nil, fmt.Errorf("no admission policies in %s", dir)
	}
	for _, want := range []struct {
		objs       []*unstructured.Unstructured
		kind, name string
	}{
		{m.ControllerRBAC, "ClusterRole", ControllerRole}, {m.ControllerRBAC, "Role", LeaderElectionRole},
		{m.AgentRBAC, "ClusterRole", AgentRole}, {m.AgentRBAC, "Role", AgentLeaseRole},
		{m.UserRBAC, "ClusterRole", UserEditRole}, {m.UserRBAC, "ClusterRole", UserViewRole}, {m.UserRBAC, "ClusterRole", ProfileViewerRole},
	} {
		if find(want.objs, want.kind, want.name) == nil {
			return nil, fmt.Errorf("config/rbac has no %s %s: run `make manifests`", want.kind, want.name)
		}
	}
	return m, nil
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ReadFile reads the objects of a YAML file of several documents.
func ReadFile(path string) ([]*unstructured.Unstructured, error) { return readFile(path) }

// Apply creates each object, or updates it when it exists.
func Apply(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := createOrUpdate(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

func readFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// Install creates (or updates) in the cluster, through an administrator's client:
// the namespace tabwarden-system; the roles' ClusterRoles and lease Roles, bound to
// the certificate groups tabwarden:controllers and tabwarden:agents; the admission
// policies and their bindings. Agents may renew their Leases in tabwarden-system;
// AllowAgentLeases adds another namespace.
func (m *Manifests) Install(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", SystemNamespace, err)
	}
	var objs []client.Object
	for _, o := range append(append(append([]*unstructured.Unstructured{}, m.ControllerRBAC...), m.AgentRBAC...), m.UserRBAC...) {
		objs = append(objs, o.DeepCopy())
	}
	objs = append(objs,
		clusterBinding(ControllerRole, ControllerGroup),
		clusterBinding(AgentRole, AgentGroup),
		roleBinding(SystemNamespace, LeaderElectionRole, ControllerGroup),
		roleBinding(SystemNamespace, AgentLeaseRole, AgentGroup),
	)
	for _, o := range m.Admission {
		objs = append(objs, o.DeepCopy())
	}
	for _, o := range objs {
		if err := createOrUpdate(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// AllowAgentLeases lets agents renew their heartbeat Leases in namespace ns too:
// the shipped lease Role, in ns, bound to the agents' group.
func (m *Manifests) AllowAgentLeases(ctx context.Context, c client.Client, ns string) error {
	role := find(m.AgentRBAC, "Role", AgentLeaseRole).DeepCopy()
	role.SetNamespace(ns)
	for _, o := range []client.Object{role, roleBinding(ns, AgentLeaseRole, AgentGroup)} {
		if err := createOrUpdate(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// BindingName names the bindings Install makes for the certificate identities.
func BindingName(role string) string { return role + "-certificates" }

func clusterBinding(role, group string) client.Object {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: BindingName(role), Labels: map[string]string{"app.kubernetes.io/name": "tabwarden"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
}

func roleBinding(ns, role, group string) client.Object {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: BindingName(role), Labels: map[string]string{"app.kubernetes.io/name": "tabwarden"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
}

func createOrUpdate(ctx context.Context, c client.Client, o client.Object) error {
	desc := fmt.Sprintf("%s %s", o.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(o))
	err := c.Create(ctx, o, client.FieldOwner(fieldOwner))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s: %w", desc, err)
		}
		return nil
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return fmt.Errorf("reading %s: %w", desc, err)
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	if err := c.Update(ctx, o, client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("updating %s: %w", desc, err)
	}
	return nil
}

// As returns a copy of an administrator's cfg that impersonates user in groups.
func As(admin *rest.Config, user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	return cfg
}

// Denied reports whether err is a refusal by the named admission policy.
func Denied(err error, policy string) bool {
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'")
}

// WaitEnforced waits until the API server enforces the roles and every policy
// (RBAC and admission policies take effect a moment after they are created): it
// asks, in dry-run or on objects of its own that it removes afterwards, for what
// each policy refuses, as an administrator, the controller and an agent (by
// impersonation), until each is refused by its policy.
func WaitEnforced(ctx context.Context, admin *rest.Config, scheme *runtime.Scheme) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	mk := func(cfg *rest.Config) (client.Client, error) { return client.New(cfg, client.Options{Scheme: scheme}) }
	adm, err := mk(admin)
	if err != nil {
		return err
	}
	ctl, err := mk(As(admin, ControllerUser, ControllerGroup))
	if err != nil {
		return err
	}
	agt, err := mk(As(admin, AgentUser("tabwarden-probe"), AgentGroup))
	if err != nil {
		return err
	}
	dry := client.DryRunAll
	ns := SystemNamespace

	// Objects to probe updates on; gone again when this returns.
	sess := &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tabwarden-access-probe"},
		Spec:       twv1.BrowserSessionSpec{Thread: "tabwarden", Purpose: "check that the admission policies are enforced", ProfileName: "tabwarden-probe"},
	}
	win := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tabwarden-access-probe"},
		Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: sess.Name}, Source: twv1.SourceOpen, URL: "about:blank"},
	}
	act := &twv1.BrowserAction{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tabwarden-access-probe"},
		Spec: twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: sess.Name}, Thread: "tabwarden",
			WindowRef: twv1.ActionWindowReference{Name: win.Name}, Steps: []twv1.ActionStep{{Type: twv1.StepObserve}}},
	}
	for _, o := range []client.Object{sess, win, act} {
		if err := adm.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating a probe object: %w", err)
		}
		defer func(o client.Object) { _ = adm.Delete(context.Background(), o) }(o)
	}

	probes := []struct {
		policy string
		try    func() error
	}{
		{"tabwarden-window-create", func() error {
			w := &twv1.BrowserWindow{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tabwarden-access-probe-spawned"},
				Spec: twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: sess.Name}, Source: twv1.SourceSpawned,
					Spawn: &twv1.SpawnInfo{TabID: "probe"}},
			}
			return adm.Create(ctx, w, dry)
		}},
		{"tabwarden-window-update", func() error {
			p := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+twv1.ProfileLabel+`":"tabwarden-probe"}}}`))
			return adm.Patch(ctx, win.DeepCopy(), p, dry)
		}},
		{"tabwarden-window-status", func() error {
			p := client.RawPatch("application/merge-patch+json", []byte(`{"status":{"tabId":"probe"}}`))
			return adm.Status().Patch(ctx, win.DeepCopy(), p, dry)
		}},
		{"tabwarden-session-status", func() error {
			p := client.RawPatch("application/merge-patch+json", []byte(`{"status":{"profileName":"probe"}}`))
			if err := ctl.Status().Patch(ctx, sess.DeepCopy(), p, dry); err != nil {
				// The controller may: until it may (its RBAC), this is not enforced yet.
				return fmt.Errorf("the controller may not yet write session status: %w", err)
			}
			return adm.Status().Patch(ctx, sess.DeepCopy(), p, dry)
		}},
		{"tabwarden-profile", func() error {
			own := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "tabwarden-probe"}}
			if err := agt.Create(ctx, own, dry); err != nil {
				return fmt.Errorf("an agent may not yet create its own profile: %w", err)
			}
			return agt.Create(ctx, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "tabwarden-probe-other"}}, dry)
		}},
		{"tabwarden-action-status", func() error {
			p := client.RawPatch("application/merge-patch+json", []byte(`{"status":{"phase":"Succeeded"}}`))
			return adm.Status().Patch(ctx, act.DeepCopy(), p, dry)
		}},
		{"tabwarden-action-label", func() error {
			p := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+twv1.ProfileLabel+`":"tabwarden-probe"}}}`))
			return adm.Patch(ctx, act.DeepCopy(), p, dry)
		}},
		{"tabwarden-tablist", func() error {
			tl := &twv1.BrowserTabList{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tabwarden-probe"}, ProfileName: "tabwarden-probe"}
			return adm.Create(ctx, tl, dry)
		}},
		{"tabwarden-screenshot", func() error {
			shot := &twv1.BrowserScreenshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tabwarden-access-probe"},
				ActionRef: twv1.ScreenshotActionReference{Name: act.Name, UID: "probe"}, Step: new(int32),
				ProfileName: "tabwarden-probe", Format: twv1.ImagePNG, Width: 1, Height: 1, Data: []byte("probe")}
			return adm.Create(ctx, shot, dry)
		}},
		{"tabwarden-agent-lease", func() error {
			l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tabwarden-profile-tabwarden-probe-other"}}
			return agt.Create(ctx, l, dry)
		}},
	}
	for _, p := range probes {
		var last error
		for {
			last = p.try()
			if Denied(last, p.policy) {
				if strings.Contains(last.Error(), "resulted in error") {
					// A policy that fails refuses too (failurePolicy Fail), but decides nothing.
					return fmt.Errorf("admission policy %s fails instead of deciding: %w", p.policy, last)
				}
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("admission policy %s is not enforced after a minute (last answer: %v)", p.policy, last)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
