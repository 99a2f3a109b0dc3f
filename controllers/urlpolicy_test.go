package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
)

// TestURLPolicyRefusesPrivateDestinations: on a profile whose admin wrote no
// url policy, a user with tabwarden-edit cannot open or navigate a page to the
// browser's DevTools endpoint, by any spelling of loopback, nor to a private or
// link-local address (cloud metadata): the window is held with
// url_not_allowed naming spec.urlPolicy, the navigate step is refused with the
// admin's patch as hint, and no such page is ever opened. Once the admin allows
// a host, a window to it opens; the others stay refused.
func TestURLPolicyRefusesPrivateDestinations(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	const profile = "url-policy"
	// The admin's profile: every namespace, no url policy (the default).
	g.Expect(k8s.Create(ctx, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: profile},
		Spec: twv1.BrowserProfileSpec{Driver: twv1.DriverFake, NamespaceSelector: &metav1.LabelSelector{}}})).To(Succeed())
	startController(t)
	w := newActionWorld(t, g, profile, agent.Options{})

	refused := map[string]string{
		"devtools":  "http://127.0.0.1:9222/json/close/ABC",
		"activate":  "http://127.0.0.1:9222/json/activate/ABC",
		"localhost": "http://localhost:9222/json/close/ABC",
		"short":     "http://127.1:9222/json/close/ABC",
		"hex":       "http://0x7f000001:9222/json/close/ABC",
		"decimal":   "http://2130706433:9222/json/close/ABC",
		"other-lo":  "http://127.0.0.2:9222/json/close/ABC",
		"ipv6":      "http://[::1]:9222/json/close/ABC",
		"mapped":    "http://[::ffff:127.0.0.1]:9222/json/close/ABC",
		"private":   "http://10.0.0.5/",
		"metadata":  "http://169.254.169.254/latest/meta-data/",
		"zero":      "http://0.0.0.0:9222/json/close/ABC",
	}
	for name, u := range refused {
		g.Expect(w.user.Create(ctx, openWindow(w.ns, name, "taxes", u))).To(Succeed(), name)
	}
	for name, u := range refused {
		win := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
		g.Eventually(func(g Gomega) {
			c := apimeta.FindStatusCondition(get(t, win).Status.Conditions, twv1.OpenedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(twv1.ReasonURLNotAllowed), "%s (%s): %s", name, u, c.Message)
			g.Expect(c.Message).To(ContainSubstring("spec.urlPolicy"))
			g.Expect(c.Message).To(ContainSubstring("kubectl patch browserprofile " + profile))
		}).Should(Succeed(), name)
		g.Expect(win.Status.TabID).To(BeEmpty())
	}
	// The navigate step: refused before the browser sees it, with the admin's patch.
	for _, u := range []string{"http://127.1:9222/json/close/ABC", "http://localhost:9222/json/activate/ABC", "http://192.168.1.1/"} {
		act := w.agent.Act("contacts", twv1.ActionStep{Type: twv1.StepNavigate, URL: u})
		g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), u)
		g.Expect(act.Status.Reason).To(Equal(twv1.ReasonURLNotAllowed), u)
		g.Expect(act.Status.Hint).To(ContainSubstring("urlPolicy"))
		g.Expect(act.Status.Message).To(ContainSubstring("spec.urlPolicy.allowedHosts"))
	}
	for _, p := range w.b.Pages() {
		for _, u := range refused {
			g.Expect(p.URL).NotTo(Equal(u), "no page ever opened at a refused destination")
		}
		g.Expect(p.URL).NotTo(ContainSubstring("9222"))
		g.Expect(p.URL).NotTo(ContainSubstring("192.168.1.1"))
	}
	// A public destination still navigates.
	g.Expect(w.agent.Act("contacts", twv1.ActionStep{Type: twv1.StepNavigate, URL: formURL}).Status.Phase).To(Equal(twv1.ActionSucceeded))

	// The admin allows one host: its window opens; the control plane stays refused.
	p := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}}
	g.Expect(k8s.Patch(ctx, p, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"urlPolicy":{"allowedHosts":["10.0.0.5"]}}}`)))).To(Succeed())
	private := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "private"}}
	g.Eventually(func() twv1.WindowPhase { return get(t, private).Status.Phase }, 30*time.Second).Should(Equal(twv1.WindowOpen))
	devtools := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "devtools"}}
	g.Consistently(func() string {
		c := apimeta.FindStatusCondition(get(t, devtools).Status.Conditions, twv1.OpenedCondition)
		if c == nil {
			return ""
		}
		return c.Reason
	}, 2*time.Second).Should(Equal(twv1.ReasonURLNotAllowed))
	for _, pg := range w.b.Pages() {
		g.Expect(strings.Contains(pg.URL, "9222")).To(BeFalse())
	}
}
