package extension_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// TestHostilePagesCloseWithTheirSession: a session's pages that resist
// closing (an unsent draft with a beforeunload handler armed after the user
// typed, a page stuck in alert(), a crashed tab) close with the session
// through the real extension, within seconds, and leave no dialog and no tab
// behind; the extension keeps serving (a page opened afterwards opens).
func TestHostilePagesCloseWithTheirSession(t *testing.T) {
	g, ctx := begin(t, 100*time.Millisecond)
	ns := newNamespace(t)
	startRoles(t)

	s := session(ns, "hostile")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	kinds := map[string]string{
		"draft": `document.body.textContent = 'unsent draft';
			window.addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'unsent'; return 'unsent'; }); true`,
		"alert": `setTimeout(() => alert('stuck'), 0); true`,
		"crash": ``,
	}
	urls := map[string]string{}
	for kind := range kinds {
		urls[kind] = fx.Path("/quiet?hostile=" + kind + "&ns=" + ns)
		if kind == "crash" {
			// Another site, so another renderer: the crash takes no other page with it.
			urls[kind] = strings.Replace(urls[kind], "127.0.0.1", "localhost", 1)
		}
		w := openWindow(ns, kind, "hostile", urls[kind])
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		g.Eventually(func() twv1.WindowPhase { return get(t, w).Status.Phase }).Should(Equal(twv1.WindowOpen))
	}
	for kind, js := range kinds {
		target := pageTarget(g, urls[kind])
		sess, err := devtools.attach(ctx, target)
		g.Expect(err).NotTo(HaveOccurred())
		if kind == "crash" {
			go func() { _, _ = call(context.Background(), devtools, sess, wire.PageCrash{}) }() // no reply: the renderer is gone
			continue
		}
		// Open means the page is there, not that its document has parsed a
		// body yet: arm it once the body exists (the scripts throw before that
		// without side effects, so a retry is safe).
		g.Eventually(func(g Gomega) {
			r, err := call(ctx, devtools, sess, wire.Evaluate{Expression: js, ReturnByValue: true, UserGesture: true})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.ExceptionDetails).To(BeNil(), "arming the %s page: %+v", kind, r.ExceptionDetails)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		devtools.detach(ctx, sess)
	}
	time.Sleep(500 * time.Millisecond) // the alert is up, the renderer has crashed

	start := time.Now()
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for kind, u := range urls {
			g.Expect(hasPageURL(u)).To(BeFalse(), "the %s page is closed", kind)
		}
	}).Should(Succeed())
	record(t, "delete session -> draft, alert and crashed pages gone", time.Since(start))
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	record(t, "delete session -> session gone (hostile pages)", time.Since(start))

	// The extension's queue is not stalled: the next session's page opens.
	s2 := session(ns, "after")
	g.Expect(k8s.Create(ctx, s2)).To(Succeed())
	w := openWindow(ns, "next", "after", fx.Path("/quiet?after="+ns))
	g.Expect(k8s.Create(ctx, w)).To(Succeed())
	g.Eventually(func() twv1.WindowPhase { return get(t, w).Status.Phase }).WithTimeout(10 * time.Second).Should(Equal(twv1.WindowOpen))
}

// TestDraftsCloseAtTheirFirstClose: pages holding an unsent draft (a
// beforeunload handler armed after the user typed) close at the driver's first
// Close, all at once, each close answered without an error: the extension asks
// for the page's dialogs before its remove raises the prompt, so the prompt is
// accepted as it shows. A close that missed it would hold the prompt for its
// bound and fail (the agent would retry). The user's tab stays.
func TestDraftsCloseAtTheirFirstClose(t *testing.T) {
	paired(t)
	g := NewWithT(t)
	ctx := context.Background()
	d := host.Driver()
	run := time.Now().UnixNano()
	userURL := fx.Path(fmt.Sprintf("/form?drafts=%d", run))
	_, win := openUserWindow(t, userURL)

	const arm = `document.body.textContent = 'unsent draft';
		window.addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'unsent'; return 'unsent'; }); true`
	type page struct{ key, id, url string }
	var ps []page
	for i := range 3 {
		key := fmt.Sprintf("drafts-%d-%d", run, i)
		u := fx.Path(fmt.Sprintf("/quiet?drafts=%d-%d", run, i))
		p, err := d.Open(ctx, browser.OpenRequest{Key: key, URL: u, WindowID: win})
		g.Expect(err).NotTo(HaveOccurred())
		ps = append(ps, page{key: key, id: p.ID, url: u})
	}
	for _, p := range ps {
		sess, err := devtools.attach(ctx, pageTarget(g, p.url))
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			r, err := call(ctx, devtools, sess, wire.Evaluate{Expression: arm, ReturnByValue: true, UserGesture: true})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.ExceptionDetails).To(BeNil(), "arming %s: %+v", p.url, r.ExceptionDetails)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		devtools.detach(ctx, sess)
	}

	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { errs[i] = d.Close(ctx, browser.CloseRequest{Key: p.key, ID: p.id}) })
	}
	wg.Wait()
	for i, err := range errs {
		g.Expect(err).NotTo(HaveOccurred(), "the first close of draft %s", ps[i].url)
	}
	g.Eventually(func(g Gomega) {
		open := chromePages(g)
		for _, p := range ps {
			g.Expect(open).NotTo(ContainElement(p.url), "the draft %s is closed", p.url)
		}
		g.Expect(open).To(ContainElement(userURL), "the user's tab stays")
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
