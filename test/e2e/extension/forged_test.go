package extension_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestForgedObjectsThroughExtension: in a real Chromium driven through the real
// extension, a Spawned window naming the user's tab is refused
// (spawn_not_observed: the extension did not see that spawn), an Open window's
// status patched to another user tab changes nothing, and ending the session
// closes only the page the extension opened: the user's window keeps the same
// Chrome tab ids.
func TestForgedObjectsThroughExtension(t *testing.T) {
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	userURLs := []string{fx.Path("/quiet?user=mail&forged=" + ns), fx.Path("/quiet?user=bank&forged=" + ns)}
	_, userWindowID := openUserWindow(t, userURLs...)
	userTabs := func() []string {
		snap, err := host.Driver().Snapshot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, p := range snap.Pages {
			if p.WindowID == userWindowID {
				ids = append(ids, p.ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	before := userTabs()
	g.Expect(before).To(HaveLen(2))
	startRoles(t)

	s := session(ns, "taxes")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	formURL := fx.Path("/quiet?form=" + ns)
	form := openWindow(ns, "form", "taxes", formURL)
	g.Expect(k8s.Create(ctx, form)).To(Succeed())
	var mine string
	g.Eventually(func(g Gomega) {
		get(t, form)
		g.Expect(form.Status.Phase).To(Equal(twv1.WindowOpen))
		mine = form.Status.TabID
		g.Expect(mine).NotTo(BeEmpty())
	}).Should(Succeed())

	spawn := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-a-spawn", Labels: map[string]string{twv1.ProfileLabel: profile}},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: "taxes"}, Source: twv1.SourceSpawned,
			Spawn: &twv1.SpawnInfo{TabID: before[0], SpawnedBy: "form", Reason: "opener"},
		},
	}
	g.Expect(forger(t).Create(ctx, spawn)).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(t, spawn)
		c := apimeta.FindStatusCondition(spawn.Status.Conditions, twv1.OpenedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(twv1.ReasonSpawnNotObserved))
		g.Expect(spawn.Status.URL).To(BeEmpty(), "the user's url is never read into the forged object")
	}).Should(Succeed())
	g.Expect(recordsByOwner(g)).NotTo(HaveKey(string(spawn.UID)), "the extension recorded nothing for the forged window")
	ack(t, spawn, twv1.DispositionClose)
	g.Eventually(func() twv1.WindowPhase { return get(t, spawn).Status.Phase }).Should(Equal(twv1.WindowClosed))

	forged := fmt.Sprintf(`{"status":{"tabId":%q,"windowId":%q,"ownsWindow":true}}`, before[1], userWindowID)
	g.Expect(forger(t).Status().Patch(ctx, form, client.RawPatch("application/merge-patch+json", []byte(forged)))).To(Succeed())
	g.Eventually(func() string { return get(t, form).Status.TabID }).Should(Equal(mine))
	g.Expect(forger(t).Status().Patch(ctx, form, client.RawPatch("application/merge-patch+json", []byte(forged)))).To(Succeed())

	deleteSession(g, s)
	g.Eventually(func() bool { return hasPageURL(formURL) }).Should(BeFalse(), "the page the extension opened is closed")
	g.Expect(userTabs()).To(Equal(before), "the user's window keeps the same tabs")
	for _, u := range userURLs {
		g.Expect(hasPageURL(u)).To(BeTrue(), "%s is still open", u)
	}
}

// forger is who writes the forged objects: a stolen credential of the profile's
// agent, the only identity the admission policies let create a Spawned window of
// the profile (labelled with it) and write the status of the profile's windows.
func forger(t *testing.T) client.Client { return testenv.AgentClient(t, cfg, profile) }
