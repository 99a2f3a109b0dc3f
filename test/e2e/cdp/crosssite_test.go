package cdp_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestCrossSiteFrameThroughTheAPIOnChromium: BrowserActions created by a user
// reach a cross-site frame (localhost in a page of 127.0.0.1: another site,
// out of process under Chromium's site isolation). The observation names the
// frame in the refs (o<n>.x<k>.e<n>, which the CRD's pattern admits); a Fill
// by those refs and a Click by text sign in, and the fixture's server saw the
// login; a button of a frame the page covers is refused; once the profile's
// url policy no longer allows the frame's host, a step on it is refused
// url_not_allowed with the policy's patch as the hint, and an observation
// leaves the frame out; a ref of the frame after it navigated is stale_ref.
func TestCrossSiteFrameThroughTheAPIOnChromium(t *testing.T) {
	g, ctx, h := begin(t, 30*time.Second)
	// The profile allows the page's host and the frame's, by name.
	profile := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "crosssite"}, Spec: twv1.BrowserProfileSpec{
		Driver: twv1.DriverCDP, NamespaceSelector: &metav1.LabelSelector{},
		URLPolicy: &twv1.URLPolicy{AllowedHosts: []string{"127.0.0.1", "localhost"}}}}
	g.Expect(k8s.Create(ctx, profile)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), profile) })
	p := sessionOnPage(t, g, h, "crosssite", "login", "/cross-site", fixture.TitleCrossSite)
	tab, agent := p.tab, p.agent
	title := func() string { return pages(t, h)[tab].Title }
	frameRef := regexp.MustCompile(`^o[0-9]+\.x[0-9]+\.e[0-9]+$`)

	var user, pass, signIn, glass *twv1.ObservedElement
	g.Eventually(func(g Gomega) {
		o := agent.Do("login", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
		user, pass, signIn, glass = elementNamed(o, "Username"), elementNamed(o, "Password"), elementNamed(o, "Sign in"), elementNamed(o, "Under glass")
		for _, el := range []*twv1.ObservedElement{user, pass, signIn, glass} {
			g.Expect(el).NotTo(BeNil(), "observation %+v", o)
		}
	}).Should(Succeed())
	for _, el := range []*twv1.ObservedElement{user, pass, signIn} {
		g.Expect(el.Ref).To(MatchRegexp(frameRef.String()), "%s's ref names its frame", el.Name)
	}

	agent.Do("login",
		twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
			{Target: &twv1.ActionTarget{Ref: user.Ref}, Text: "grace"},
			{Target: &twv1.ActionTarget{Ref: pass.Ref}, Text: fixture.CrossSitePassword}}},
		twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Sign in"}})
	g.Eventually(title).Should(Equal("Cross grace"))
	g.Expect(seen(t)).To(ContainSubstring("grace"), "the fixture's server saw the login")

	covered := agent.Act("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: glass.Ref}})
	g.Expect(covered.Status.Reason).To(Equal(twv1.ReasonTargetNotFound), "status %+v", covered.Status)

	// The admin narrows the policy: the frame's host is no longer allowed.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(profile), profile)).To(Succeed())
	profile.Spec.URLPolicy.AllowedHosts = []string{"127.0.0.1"}
	g.Expect(k8s.Update(ctx, profile)).To(Succeed())
	refusedByPolicy := agent.Act("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: signIn.Ref}})
	g.Expect(refusedByPolicy.Status.Reason).To(Equal(twv1.ReasonURLNotAllowed), "status %+v", refusedByPolicy.Status)
	g.Expect(refusedByPolicy.Status.Hint).To(And(ContainSubstring("allowedHosts"), ContainSubstring("localhost")))
	o := agent.Do("login", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation
	g.Expect(elementNamed(o, "Sign in")).To(BeNil(), "a frame the policy refuses is not observed")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(profile), profile)).To(Succeed())
	profile.Spec.URLPolicy.AllowedHosts = []string{"127.0.0.1", "localhost"}
	g.Expect(k8s.Update(ctx, profile)).To(Succeed())

	// The frame navigates; the old ref names a document it no longer shows.
	g.Eventually(func() *twv1.ObservedElement {
		return elementNamed(agent.Do("login", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation, "Next page")
	}).ShouldNot(BeNil())
	agent.Do("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Next page"}})
	g.Eventually(func() *twv1.ObservedElement {
		return elementNamed(agent.Do("login", twv1.ActionStep{Type: twv1.StepObserve}).Status.Observation, "Back")
	}).ShouldNot(BeNil(), "the frame shows /cross-site/next")
	stale := agent.Act("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: signIn.Ref}})
	g.Expect(stale.Status.Reason).To(Equal(twv1.ReasonStaleRef), "status %+v", stale.Status)
	g.Consistently(title, "500ms").ShouldNot(Equal("Cross Retargeted"))
}

func seen(t *testing.T) string {
	t.Helper()
	r, err := http.Get(site.Path("/cross-site/seen"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Body.Close() }()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}
