package extension_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// TestSessionPagesCloseConcurrently: the agent closes an ended session's pages
// all at once (closeSessionPages sends one close per page, concurrently); the
// real extension decides them as a batch and removes them concurrently. In a
// user window with one user tab, the session's N pages close, the user's tab
// stays and the window stays. In a user window holding only the session's
// pages (the user closed their tab), the window stays with one about:blank tab.
func TestSessionPagesCloseConcurrently(t *testing.T) {
	paired(t)
	g := NewWithT(t)
	ctx := context.Background()
	d := host.Driver()
	run := time.Now().UnixNano()
	const n = 8

	userURL := fx.Path(fmt.Sprintf("/form?closebatch=%d", run))
	userTargets, win := openUserWindow(t, userURL)
	userWin, err := windowOfTarget(ctx, userTargets[0])
	g.Expect(err).NotTo(HaveOccurred())
	bareURL := fx.Path(fmt.Sprintf("/form?closebatch-bare=%d", run))
	bareTargets, bareWin := openUserWindow(t, bareURL)
	bareChromeWin, err := windowOfTarget(ctx, bareTargets[0])
	g.Expect(err).NotTo(HaveOccurred())

	type page struct{ key, id, url string }
	open := func(window, tag string) []page {
		var ps []page
		for i := range n {
			key := fmt.Sprintf("closebatch-%d-%s-%d", run, tag, i)
			u := fx.Path(fmt.Sprintf("/landing?closebatch=%d-%s-%d", run, tag, i))
			p, err := d.Open(ctx, browser.OpenRequest{Key: key, URL: u, WindowID: window})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.WindowID).To(Equal(window), "the session's page opens in the user's window")
			ps = append(ps, page{key: key, id: p.ID, url: u})
		}
		for _, p := range ps {
			pageTarget(g, p.url) // loaded and reported
		}
		return ps
	}
	closeAll := func(ps []page) time.Duration {
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(ps))
		for i, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = d.Close(ctx, browser.CloseRequest{Key: p.key, ID: p.id})
			}()
		}
		wg.Wait()
		took := time.Since(t0)
		for i, err := range errs {
			g.Expect(err).NotTo(HaveOccurred(), "closing %s", ps[i].id)
		}
		return took
	}
	gone := func(ps []page) {
		g.Eventually(func(g Gomega) {
			open := chromePages(g)
			for _, p := range ps {
				for _, u := range open {
					g.Expect(u).NotTo(HavePrefix(p.url), "the session's page %s is closed", p.id)
				}
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}

	// A user window with its user tab: the N pages close, the tab and window stay.
	mine := open(win, "user")
	took := closeAll(mine)
	record(t, fmt.Sprintf("extension: close %d pages concurrently", n), took)
	gone(mine)
	pages := chromePages(g)
	g.Expect(pages).To(HaveKeyWithValue(userTargets[0], userURL), "the user's tab stays")
	w, err := windowOfTarget(ctx, userTargets[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w).To(Equal(userWin), "in the same window")
	for id, u := range pages {
		if u == "about:blank" {
			w, err := windowOfTarget(ctx, id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(w).NotTo(Equal(userWin), "no placeholder in a window that keeps a user tab")
		}
	}

	// The floor, for the timings: the same number of pages removed by one
	// chrome.tabs.remove of their ids, evaluated in the extension's service
	// worker (no ownership check, no last-tab rule, no dialog handling).
	floor := open(win, "floor")
	sw, err := waitWorker(ctx, 30*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	swSess, err := devtools.attach(ctx, sw.TargetID)
	g.Expect(err).NotTo(HaveOccurred())
	ids := make([]string, len(floor))
	for i, p := range floor {
		ids[i] = p.id
	}
	t0 := time.Now()
	g.Expect(devtools.eval(ctx, swSess, "chrome.tabs.remove(["+strings.Join(ids, ",")+"]).then(() => true)", nil)).To(Succeed())
	record(t, fmt.Sprintf("raw chrome.tabs.remove of %d tabs", n), time.Since(t0))
	devtools.detach(ctx, swSess)
	gone(floor)
	closeAll(floor) // the tabs are gone: each close answers closed:false and drops its record

	// A user window with only the session's pages: one blank tab keeps it.
	bare := open(bareWin, "bare")
	g.Expect(devtools.closeTarget(ctx, bareTargets[0])).To(Succeed()) // the user closes their tab
	g.Eventually(func() bool { return hasPageURL(bareURL) }).WithTimeout(30 * time.Second).Should(BeFalse())
	closeAll(bare)
	gone(bare)
	g.Eventually(func(g Gomega) {
		var blanks []string
		for id, u := range chromePages(g) {
			if u == "about:blank" {
				w, err := windowOfTarget(ctx, id)
				g.Expect(err).NotTo(HaveOccurred())
				if w == bareChromeWin {
					blanks = append(blanks, id)
				}
			}
		}
		g.Expect(blanks).To(HaveLen(1), "the user's window survives with one about:blank tab")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// No record of the session is left.
	for owner := range recordsByOwner(g) {
		g.Expect(strings.HasPrefix(owner, fmt.Sprintf("closebatch-%d-", run))).To(BeFalse(), "record of %s left", owner)
	}
	// Both windows are the user's: close them like a user, leaving the browser as it was.
	_ = devtools.closeTarget(ctx, userTargets[0])
	for id, u := range chromePages(g) {
		if w, err := windowOfTarget(ctx, id); err == nil && w == bareChromeWin && u == "about:blank" {
			_ = devtools.closeTarget(ctx, id)
		}
	}
}
