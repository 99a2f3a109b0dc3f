package extension_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestCrossSiteFrameThroughExtension: BrowserActions in the user's own Chrome
// (the real extension) reach a cross-site, out-of-process frame: its elements
// are observed with refs o<n>.x<k>.e<n>, a Fill by those refs and a Click by
// text sign in (the fixture's server saw the login); once the profile's url
// policy no longer allows the frame's host (localhost), a step on it is
// refused url_not_allowed with the policy's patch as the hint and an
// observation leaves it out; a ref of the frame after it navigated is
// stale_ref.
func TestCrossSiteFrameThroughExtension(t *testing.T) {
	g, _ := begin(t, 100*time.Millisecond)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	p := sessionOnPage(t, g, "crosssite", "login", "/cross-site", fixture.TitleCrossSite)
	agent := p.agent
	observe := twv1.ActionStep{Type: twv1.StepObserve}

	var user, pass, signIn *twv1.ObservedElement
	g.Eventually(func(g Gomega) {
		o := agent.Do("login", observe).Status.Observation
		user, pass, signIn = namedIn(o, "Username"), namedIn(o, "Password"), namedIn(o, "Sign in")
		g.Expect(user).NotTo(BeNil(), "observation %+v", o)
		g.Expect(pass).NotTo(BeNil(), "observation %+v", o)
		g.Expect(signIn).NotTo(BeNil(), "observation %+v", o)
	}).Should(Succeed())
	g.Expect(signIn.Ref).To(MatchRegexp(`^o[0-9]+\.x[0-9]+\.e[0-9]+$`))

	agent.Do("login",
		twv1.ActionStep{Type: twv1.StepFill, Fields: []twv1.FillField{
			{Target: &twv1.ActionTarget{Ref: user.Ref}, Text: "hedy"},
			{Target: &twv1.ActionTarget{Ref: pass.Ref}, Text: fixture.CrossSitePassword}}},
		twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Sign in"}})
	g.Eventually(func() string { return agent.Do("login", observe).Status.Observation.Title }).Should(Equal("Cross hedy"))
	g.Expect(seenLogins(t)).To(ContainSubstring("hedy"), "the fixture's server saw the login")

	// The admin narrows the profile's policy to the page's own host.
	ctx := context.Background()
	prof := &twv1.BrowserProfile{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: profile}, prof)).To(Succeed())
	before := prof.Spec.URLPolicy.DeepCopy()
	t.Cleanup(func() {
		p := &twv1.BrowserProfile{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: profile}, p); err == nil {
			p.Spec.URLPolicy = before
			_ = k8s.Update(context.Background(), p)
		}
	})
	prof.Spec.URLPolicy = &twv1.URLPolicy{AllowedHosts: []string{"127.0.0.1"}}
	g.Expect(k8s.Update(ctx, prof)).To(Succeed())
	refused := agent.Act("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: signIn.Ref}})
	g.Expect(refused.Status.Reason).To(Equal(twv1.ReasonURLNotAllowed), "status %+v", refused.Status)
	g.Expect(refused.Status.Hint).To(And(ContainSubstring("allowedHosts"), ContainSubstring("localhost")))
	g.Expect(namedIn(agent.Do("login", observe).Status.Observation, "Sign in")).To(BeNil(), "a refused frame is not observed")
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: profile}, prof)).To(Succeed())
	prof.Spec.URLPolicy = before
	g.Expect(k8s.Update(ctx, prof)).To(Succeed())

	// The frame navigates: its old ref is stale.
	g.Eventually(func() *twv1.ObservedElement {
		return namedIn(agent.Do("login", observe).Status.Observation, "Next page")
	}).ShouldNot(BeNil())
	agent.Do("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Next page"}})
	g.Eventually(func() *twv1.ObservedElement { return namedIn(agent.Do("login", observe).Status.Observation, "Back") }).ShouldNot(BeNil())
	stale := agent.Act("login", twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: signIn.Ref}})
	g.Expect(stale.Status.Reason).To(Equal(twv1.ReasonStaleRef), "status %+v", stale.Status)
}

func seenLogins(t *testing.T) string {
	t.Helper()
	r, err := http.Get(fx.Path("/cross-site/seen"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Body.Close() }()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func namedIn(o *twv1.Observation, name string) *twv1.ObservedElement {
	if o == nil {
		return nil
	}
	for i := range o.Elements {
		if o.Elements[i].Name == name {
			return &o.Elements[i]
		}
	}
	return nil
}
