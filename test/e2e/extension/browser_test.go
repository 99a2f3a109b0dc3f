package extension_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
)

// What the test knows of the real browser, through its own DevTools connection.

// openUserWindow opens a window of the user's own, with one tab per url, through
// DevTools (not through tabwarden), and waits until the extension reports it.
// It returns the page targets and the Chrome window id the extension reports.
func openUserWindow(t *testing.T, urls ...string) (targets []string, windowID string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	for i, u := range urls {
		params := wire.CreateTarget{URL: u}
		if i == 0 {
			params.NewWindow = true
		} else {
			// A new background tab goes to the last active window: the one just made.
			params.Background = true
		}
		target, err := devtools.create(ctx, params)
		g.Expect(err).To(Succeed())
		targets = append(targets, target)
	}
	// The extension reports the tabs, with their window.
	g.Eventually(func(g Gomega) {
		snap, err := host.Driver().Snapshot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		wins := map[string]bool{}
		for _, u := range urls {
			found := false
			for _, p := range snap.Pages {
				if p.URL == u {
					found = true
					wins[p.WindowID] = true
					windowID = p.WindowID
				}
			}
			g.Expect(found).To(BeTrue(), "the extension reports the user's tab %s", u)
		}
		g.Expect(wins).To(HaveLen(1), "the user's tabs share one window")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return targets, windowID
}

// chromePages are Chrome's page targets that are web pages (not the extension's
// own popup), by target id: the ground truth of what is open.
func chromePages(g Gomega) map[string]string {
	ps, err := devtools.pages(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, p := range ps {
		if strings.HasPrefix(p.URL, "chrome-extension://") || strings.HasPrefix(p.URL, "devtools://") {
			continue
		}
		out[p.TargetID] = p.URL
	}
	return out
}

// pageTarget finds the page target showing u (exactly one).
func pageTarget(g Gomega, u string) string {
	var id string
	g.Eventually(func() error {
		p, err := devtools.pageByURL(context.Background(), u)
		id = p.TargetID
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return id
}

func hasPageURL(u string) bool {
	ps, err := devtools.pages(context.Background())
	if err != nil {
		return true // unknown: not gone
	}
	for _, p := range ps {
		if p.URL == u || strings.HasPrefix(p.URL, u) {
			return true
		}
	}
	return false
}

// windowOfTarget is the Chrome (DevTools) window id of a target.
func windowOfTarget(ctx context.Context, target string) (int, error) {
	r, err := call(ctx, devtools, "", wire.GetWindowForTarget{TargetID: target})
	return int(r.WindowID), err
}

// clickIn is the agent's (or user's) hand: a real mouse click on selector in the
// page target, after the page has loaded.
func clickIn(t *testing.T, target, selector string) {
	t.Helper()
	ctx := context.Background()
	sess, err := devtools.attach(ctx, target)
	if err != nil {
		t.Fatalf("attach %s: %v", target, err)
	}
	defer devtools.detach(ctx, sess)
	sel := fmt.Sprintf("%q", selector)
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		var ok bool
		err := devtools.eval(ctx, sess, `document.readyState === "complete" && !!document.querySelector(`+sel+`)`, &ok)
		return ok, err
	}); err != nil {
		t.Fatalf("page %s never showed %s: %v", target, selector, err)
	}
	if err := devtools.click(ctx, sess, selector); err != nil {
		t.Fatalf("click %s: %v", selector, err)
	}
}

// recordsByOwner are the extension's ownership records (chrome.storage.session).
func recordsByOwner(g Gomega) map[string][]extension.Record {
	recs, err := host.Driver().Records(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string][]extension.Record{}
	for _, r := range recs {
		out[r.Owner] = append(out[r.Owner], r)
	}
	return out
}
