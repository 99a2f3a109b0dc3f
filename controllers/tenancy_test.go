package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
)

// Tenancy: a BrowserProfile admits the namespaces in spec.namespaces or matched by
// spec.namespaceSelector, and none when neither is set. The controller places a
// session only on a profile that admits its namespace; the agent lists the
// profile's tabs (urls, titles) only in namespaces with a session placed on it.

// createProfile creates a profile as an admin would, before its agent starts.
func createProfile(t *testing.T, name string, spec twv1.BrowserProfileSpec) *twv1.BrowserProfile {
	t.Helper()
	if spec.Driver == "" {
		spec.Driver = twv1.DriverFake
	}
	p := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	return p
}

// patchProfile applies a merge patch to a profile, as `kubectl patch --type=merge -p` would.
func patchProfile(t *testing.T, name, patch string) {
	t.Helper()
	p := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Patch(context.Background(), p, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("kubectl patch browserprofile %s -p '%s': %v", name, patch, err)
	}
}

// hintPatch is the -p argument of the kubectl patch a message teaches.
var hintPatch = regexp.MustCompile(`kubectl patch browserprofile (\S+) --type=merge -p '([^']+)'`)

func cond(s *twv1.BrowserSession, typ string) metav1.Condition {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func labelledNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tw-", Labels: labels}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func eventReasons(t *testing.T, ns, regarding string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == regarding {
			out = append(out, e.Reason)
		}
	}
	return out
}

func tabList(ns, profile string) (*twv1.BrowserTabList, error) {
	tl := &twv1.BrowserTabList{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: profile}, tl)
	return tl, err
}

// TestTenancyRefusesNamespaceNotAdmitted: a session pinned to a profile that does
// not admit its namespace is refused with profile_not_allowed, a message naming
// the profile and the namespace, and the admin's exact kubectl patch; it stays
// unplaced and no window of it ever opens. A session in a listed namespace is
// placed. Once the admin runs the patch, the refused session is placed and its
// window opens.
func TestTenancyRefusesNamespaceNotAdmitted(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	admitted, other := newNamespace(t), newNamespace(t)
	createProfile(t, "tenant-list", twv1.BrowserProfileSpec{Namespaces: []string{admitted}})
	b := fake.New()
	b.UserOpenWindow("https://user.example/")
	startRoles(t, "tenant-list", b)
	g.Eventually(func() int { return b.PageCount() }).Should(Equal(1))

	// Admitted by the list.
	ok := session(admitted, "ok", "tenant-list")
	g.Expect(k8s.Create(ctx, ok)).To(Succeed())
	okWin := openWindow(admitted, "w", "ok", "https://work.example/ok")
	g.Expect(k8s.Create(ctx, okWin)).To(Succeed())
	openedTabs(t, g, okWin)
	g.Expect(get(t, ok).Status.ProfileName).To(Equal("tenant-list"))
	g.Expect(cond(ok, twv1.AdmittedCondition).Status).To(Equal(metav1.ConditionTrue))
	pages := b.PageCount()

	// Refused in the other namespace.
	s := session(other, "refused", "tenant-list")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(other, "w", "refused", "https://work.example/refused")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	var msg string
	g.Eventually(func(g Gomega) {
		get(t, s)
		c := cond(s, twv1.RegisteredCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(twv1.ReasonProfileNotAllowed))
		g.Expect(cond(s, twv1.AdmittedCondition).Reason).To(Equal(twv1.ReasonProfileNotAllowed))
		g.Expect(cond(s, twv1.ReadyCondition).Reason).To(Equal(twv1.ReasonProfileNotAllowed))
		msg = c.Message
	}).Should(Succeed())
	wantPatch := fmt.Sprintf(`kubectl patch browserprofile tenant-list --type=merge -p '{"spec":{"namespaces":[%q,%q]}}'`, min(admitted, other), max(admitted, other))
	g.Expect(msg).To(ContainSubstring(`BrowserProfile "tenant-list" does not admit namespace %q`, other))
	g.Expect(msg).To(ContainSubstring(wantPatch), "the hint keeps the namespaces already admitted")
	g.Expect(msg).To(ContainSubstring("pinned to another profile"))
	g.Expect(s.Status.ProfileName).To(BeEmpty())
	g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhasePending))
	// `kubectl get browsersession` says why it waits, not Pending alone.
	row := columns(g, other, "browsersessions", "refused")
	g.Expect(row).To(HaveKeyWithValue("Phase", string(twv1.SessionPhasePending)))
	g.Expect(row).To(HaveKeyWithValue("Reason", twv1.ReasonProfileNotAllowed))
	g.Eventually(func() []string { return eventReasons(t, other, "refused") }).Should(ContainElement(twv1.ReasonProfileNotAllowed))
	g.Consistently(func(g Gomega) {
		g.Expect(b.PageCount()).To(Equal(pages), "no page of a refused session opens")
		get(t, w)
		g.Expect(w.Status.TabID).To(BeEmpty())
		g.Expect(w.Labels).NotTo(HaveKey(twv1.ProfileLabel))
		g.Expect(get(t, s).Status.ProfileName).To(BeEmpty())
	}, "2s").Should(Succeed())

	// The admin runs the hint: the session is placed and its window opens.
	m := hintPatch.FindStringSubmatch(msg)
	g.Expect(m).NotTo(BeNil())
	patchProfile(t, m[1], m[2])
	openedTabs(t, g, w)
	get(t, s)
	g.Expect(s.Status.ProfileName).To(Equal("tenant-list"))
	g.Expect(cond(s, twv1.RegisteredCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond(s, twv1.AdmittedCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(get(t, okWin).Status.Phase).To(Equal(twv1.WindowOpen), "admitting another namespace leaves the first alone")
}

// TestTenancyNamespaceSelector: a profile admits namespaces whose labels match its
// selector; a namespace that gains the label later gets its waiting session placed.
func TestTenancyNamespaceSelector(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	teamA := labelledNamespace(t, map[string]string{"team": "a"})
	unlabelled := newNamespace(t)
	createProfile(t, "tenant-selector", twv1.BrowserProfileSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}})
	b := fake.New()
	startRoles(t, "tenant-selector", b)

	in := session(teamA, "in", "tenant-selector")
	g.Expect(k8s.Create(ctx, in)).To(Succeed())
	out := session(unlabelled, "out", "tenant-selector")
	g.Expect(k8s.Create(ctx, out)).To(Succeed())
	outWin := openWindow(unlabelled, "w", "out", "https://work.example/out")
	g.Expect(k8s.Create(ctx, outWin)).To(Succeed())
	g.Eventually(func() string { return get(t, in).Status.ProfileName }).Should(Equal("tenant-selector"))
	g.Eventually(func() string { return cond(get(t, out), twv1.RegisteredCondition).Reason }).Should(Equal(twv1.ReasonProfileNotAllowed))
	g.Expect(cond(out, twv1.RegisteredCondition).Message).To(ContainSubstring(`{"matchLabels":{"team":"a"}}`), "the message shows the selector")
	g.Consistently(func() string { return get(t, out).Status.ProfileName }, "1s").Should(BeEmpty())
	g.Expect(b.PageCount()).To(BeZero())

	// Label the namespace: the namespace watch places the waiting session.
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unlabelled}}
	g.Expect(k8s.Patch(ctx, n, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"a"}}}`)))).To(Succeed())
	openedTabs(t, g, outWin)
	g.Expect(get(t, out).Status.ProfileName).To(Equal("tenant-selector"))
}

// TestTenancySchedulingSkipsProfilesNotAdmitting: a selector session lands on the
// matching profile that admits its namespace, although another matching profile
// has more free capacity; with no admitting profile it is refused and told which
// profile to open up.
func TestTenancySchedulingSkipsProfilesNotAdmitting(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	ns, nobody := newNamespace(t), newNamespace(t)
	pool := map[string]string{"tabwarden.dev/pool": "tenancy-sched"}
	closed := createProfile(t, "sched-closed", twv1.BrowserProfileSpec{Namespaces: []string{"elsewhere"}}) // unlimited capacity
	open := createProfile(t, "sched-open", twv1.BrowserProfileSpec{MaxSessions: 5, Namespaces: []string{ns}})
	for _, p := range []*twv1.BrowserProfile{closed, open} {
		p.Labels = pool
		g.Expect(k8s.Update(ctx, p)).To(Succeed())
	}
	startController(t)
	startAgent(t, "sched-closed", fake.New())
	startAgent(t, "sched-open", fake.New())
	g.Eventually(func(g Gomega) {
		for _, p := range []*twv1.BrowserProfile{closed, open} {
			g.Expect(apimeta.IsStatusConditionTrue(get(t, p).Status.Conditions, twv1.ConnectedCondition)).To(BeTrue())
		}
	}).Should(Succeed())

	bySelector := func(ns, name string) *twv1.BrowserSession {
		s := session(ns, name, "")
		s.Spec.ProfileSelector = &metav1.LabelSelector{MatchLabels: pool}
		g.Expect(k8s.Create(ctx, s)).To(Succeed())
		return s
	}
	for i := range 3 {
		s := bySelector(ns, fmt.Sprintf("s%d", i))
		g.Eventually(func() string { return get(t, s).Status.ProfileName }).Should(Equal("sched-open"))
	}
	s := bySelector(nobody, "nowhere")
	g.Eventually(func() string { return cond(get(t, s), twv1.RegisteredCondition).Reason }).Should(Equal(twv1.ReasonProfileNotAllowed))
	msg := cond(s, twv1.RegisteredCondition).Message
	g.Expect(msg).To(ContainSubstring("sched-closed, sched-open"))
	g.Expect(msg).To(ContainSubstring(`kubectl patch browserprofile sched-closed --type=merge -p '{"spec":{"namespaces":["elsewhere",%q]}}'`, nobody))
	g.Consistently(func() string { return get(t, s).Status.ProfileName }, "1s").Should(BeEmpty())

	// Opening the closed profile to the namespace places the session there.
	patchProfile(t, "sched-closed", `{"spec":{"namespaceSelector":{}}}`)
	g.Eventually(func() string { return get(t, s).Status.ProfileName }).Should(Equal("sched-closed"))
}

// TestTenancyMissingProfile: a session pinned to a profile that does not exist is
// refused (NoProfile) with the commands that create it, not placed blindly; it is
// placed once an admin creates the profile admitting its namespace.
func TestTenancyMissingProfile(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	startController(t)
	s := session(ns, "early", "tenant-later")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	g.Eventually(func() string { return cond(get(t, s), twv1.RegisteredCondition).Reason }).Should(Equal(twv1.ReasonNoProfile))
	msg := cond(s, twv1.RegisteredCondition).Message
	g.Expect(msg).To(ContainSubstring(`BrowserProfile "tenant-later" does not exist`))
	g.Expect(msg).To(ContainSubstring(`"metadata":{"name":"tenant-later"},"spec":{"namespaces":[%q]}`, ns))
	g.Expect(msg).To(ContainSubstring("tabwarden agent --profile tenant-later"))
	g.Consistently(func() string { return get(t, s).Status.ProfileName }, "1s").Should(BeEmpty())

	createProfile(t, "tenant-later", twv1.BrowserProfileSpec{Namespaces: []string{ns}})
	g.Eventually(func() string { return get(t, s).Status.ProfileName }).Should(Equal("tenant-later"))
}

// TestTenancyRevokedAfterPlacement: a placed session is not evicted when its
// profile stops admitting its namespace (its pages stay owned and are cleaned up
// when it ends); Admitted turns False with profile_not_allowed and a Warning
// Event, and new sessions in the namespace are refused.
func TestTenancyRevokedAfterPlacement(t *testing.T) {
	g, ctx, ns := begin(t, 20*time.Second)
	createProfile(t, "tenant-revoke", twv1.BrowserProfileSpec{Namespaces: []string{ns}})
	b := fake.New()
	startRoles(t, "tenant-revoke", b)
	s := session(ns, "running", "tenant-revoke")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	w := openWindow(ns, "w", "running", "https://work.example/running")
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	tab := openedTabs(t, g, w)[0]

	patchProfile(t, "tenant-revoke", `{"spec":{"namespaces":null}}`)
	g.Eventually(func(g Gomega) {
		get(t, s)
		c := cond(s, twv1.AdmittedCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(twv1.ReasonProfileNotAllowed))
		g.Expect(c.Message).To(ContainSubstring("not evicted"))
		g.Expect(c.Message).To(ContainSubstring("kubectl delete browsersession running -n %s", ns))
	}).Should(Succeed())
	g.Expect(s.Status.ProfileName).To(Equal("tenant-revoke"))
	g.Expect(cond(s, twv1.RegisteredCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(b.HasPage(tab)).To(BeTrue())
	g.Eventually(func() []string { return eventReasons(t, ns, "running") }).Should(ContainElement(twv1.ReasonProfileNotAllowed))

	// Revoked: nothing new opens in the session, and its namespace no longer
	// sees the profile's tabs.
	more := openWindow(ns, "more", "running", "https://work.example/more")
	g.Expect(k8s.Create(ctx, more)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(get(t, more), twv1.OpenedCondition)
		g.Expect(c.Reason).To(Equal(twv1.ReasonProfileNotAllowed))
		g.Expect(c.Message).To(ContainSubstring("kubectl delete browsersession running -n " + ns))
	}).Should(Succeed())
	g.Expect(get(t, more).Status.TabID).To(BeEmpty())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-revoke"}, &twv1.BrowserTabList{}))
	}).Should(BeTrue(), "the revoked namespace's tab list is deleted")

	late := session(ns, "late", "tenant-revoke")
	g.Expect(k8s.Create(ctx, late)).To(Succeed())
	g.Eventually(func() string { return cond(get(t, late), twv1.RegisteredCondition).Reason }).Should(Equal(twv1.ReasonProfileNotAllowed))

	// Ending the session still cleans up on the profile it was placed on.
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func() bool { return b.HasPage(tab) }).Should(BeFalse())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
}

// TestTabListPrivacy: the cluster-scoped profile carries no url or title of the
// user's tabs, only their count; the agent lists them in a BrowserTabList named
// after the profile in each namespace with a placed, running session, only there
// (never with another namespace's session pages), and deletes it when the last
// such session ends.
func TestTabListPrivacy(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	withSession, neighbour, without, refused := newNamespace(t), newNamespace(t), newNamespace(t), newNamespace(t)
	createProfile(t, "tabs-private", twv1.BrowserProfileSpec{Namespaces: []string{withSession, neighbour, without}})
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://bank.example/statement", "chrome://settings", "https://mail.example/inbox")
	startRoles(t, "tabs-private", b)

	p := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "tabs-private"}}
	g.Eventually(func() int32 { return get(t, p).Status.TabCount }).Should(Equal(int32(2)), "chrome:// pages are not bindable")
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(twv1.GroupVersion.WithKind("BrowserProfile"))
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "tabs-private"}, raw)).To(Succeed())
	js, _ := json.Marshal(raw.Object)
	g.Expect(string(js)).NotTo(ContainSubstring("bank.example"))
	g.Expect(string(js)).NotTo(ContainSubstring("Title of"))
	g.Expect(raw.Object["status"]).NotTo(HaveKey("tabs"))

	// No session placed anywhere: no tab list anywhere.
	g.Consistently(func() bool {
		_, err := tabList(withSession, "tabs-private")
		return apierrors.IsNotFound(err)
	}, "1500ms").Should(BeTrue())

	s := session(withSession, "reader", "tabs-private")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	g.Expect(k8s.Create(ctx, session(refused, "refused", "tabs-private"))).To(Succeed())
	var tl *twv1.BrowserTabList
	g.Eventually(func(g Gomega) {
		var err error
		tl, err = tabList(withSession, "tabs-private")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tl.TabCount).To(Equal(int32(2)))
	}).Should(Succeed())
	g.Expect(tl.ProfileName).To(Equal("tabs-private"))
	g.Expect(tl.Labels).To(HaveKeyWithValue(twv1.ProfileLabel, "tabs-private"))
	g.Expect(tl.Tabs).To(ConsistOf(
		twv1.BindableTab{ID: userTabs[0], WindowID: tl.Tabs[0].WindowID, URL: "https://bank.example/statement", Title: "Title of https://bank.example/statement"},
		twv1.BindableTab{ID: userTabs[2], WindowID: tl.Tabs[0].WindowID, URL: "https://mail.example/inbox", Title: "Title of https://mail.example/inbox"},
	))

	// A neighbouring namespace's session opens a page: nobody's tab list shows
	// it (a page a session owns is never bindable: tab_in_use), and nothing is
	// rewritten for it.
	rvBefore := tl.ResourceVersion
	g.Expect(k8s.Create(ctx, session(neighbour, "other", "tabs-private"))).To(Succeed())
	secret := openWindow(neighbour, "secret", "other", "https://neighbour.example/secret")
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	secretTab := openedTabs(t, g, secret)[0]
	g.Eventually(func(g Gomega) {
		n, err := tabList(neighbour, "tabs-private")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.TabCount).To(Equal(int32(2)))
		g.Expect(n.Tabs).NotTo(ContainElement(HaveField("ID", secretTab)))
	}).Should(Succeed())
	g.Consistently(func() string { tl, _ = tabList(withSession, "tabs-private"); return tl.ResourceVersion }, "1500ms").Should(Equal(rvBefore))

	// A tab the user opens shows up (one write, coalesced); other namespaces see nothing.
	rv := tl.ResourceVersion
	b.UserOpenWindow("https://news.example/")
	g.Eventually(func() int32 { tl, _ = tabList(withSession, "tabs-private"); return tl.TabCount }).Should(Equal(int32(3)))
	g.Expect(tl.ResourceVersion).NotTo(Equal(rv))
	// The profile's count is informational: it follows on the agent's heartbeat.
	g.Eventually(func() int32 { return get(t, p).Status.TabCount }).Should(Equal(int32(3)))
	g.Expect(tl.Tabs).NotTo(ContainElement(HaveField("ID", secretTab)), "another namespace's page is not listed")
	js, _ = json.Marshal(tl)
	g.Expect(string(js)).NotTo(ContainSubstring("neighbour.example"))
	for _, ns := range []string{without, refused} {
		_, err := tabList(ns, "tabs-private")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no tab list in namespace %s", ns)
	}
	// Nothing changes: nothing is written.
	rv = tl.ResourceVersion
	g.Consistently(func() string { tl, _ = tabList(withSession, "tabs-private"); return tl.ResourceVersion }, "2500ms").Should(Equal(rv))

	// The session ends: its namespace's list goes, the neighbour's stays.
	g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func() bool {
		_, err := tabList(withSession, "tabs-private")
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
	_, err := tabList(neighbour, "tabs-private")
	g.Expect(err).NotTo(HaveOccurred())
}

// TestTabListValidation: a BrowserTabList is named after its profile.
func TestTabListValidation(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	tl := &twv1.BrowserTabList{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}, ProfileName: "another"}
	err := k8s.Create(context.Background(), tl)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("named after its profile"))
}

// TestProfileTenancyValidation: the API server teaches the shape of tenancy fields.
func TestProfileTenancyValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec twv1.BrowserProfileSpec
		want string
	}{
		{"namespace names are DNS labels", twv1.BrowserProfileSpec{Namespaces: []string{"Team_A"}}, `for example namespaces: ["default", "team-a"]`},
		{"In needs values", twv1.BrowserProfileSpec{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}}}, "operator In or NotIn takes a non-empty values list"},
		{"unknown operator", twv1.BrowserProfileSpec{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}}, "namespaceSelector: {} admits every namespace"},
		{"at most 64 namespaces", twv1.BrowserProfileSpec{Namespaces: manyNamespaces(65)}, "Too many"},
		{"valid", twv1.BrowserProfileSpec{Namespaces: manyNamespaces(64), NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{GenerateName: "validation-"}, Spec: tc.spec}
			err := k8s.Create(context.Background(), p)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				_ = k8s.Delete(context.Background(), p)
				return
			}
			if err == nil || !regexp.MustCompile(regexp.QuoteMeta(tc.want)).MatchString(err.Error()) {
				t.Fatalf("create: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func manyNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ns-%d", i)
	}
	return out
}
