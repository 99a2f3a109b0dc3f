package extension_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// TestServiceWorkerRestart stops the extension's service worker in the middle of
// a session (as Chrome does to an idle worker, or on an update) and shows that
// nothing is lost: the worker comes back by itself and reconnects (a new epoch),
// the ownership records in chrome.storage.session survived, a page spawned while
// the worker was down is adopted after it returns, and deleting the session
// closes exactly the pages it owned: its own window, the compose popups and a
// background tab it opened in the user's window, whose other tabs stay.
func TestServiceWorkerRestart(t *testing.T) {
	g, ctx, ns, user := beginWithUser(t, "docs", "calendar")

	// A session with its contacts page in a window of its own, and a notes page as
	// a background tab in the user's window (placement Tab, pinned there).
	s, contacts, contactsURL := contactsSession(g, k8s, ns, "letters", user.windowID)
	notesURL := fx.Path("/quiet?notes=letters&ns=" + ns)
	notes := openWindow(ns, "notes", "letters", notesURL)
	notes.Spec.Placement = twv1.PlacementTab
	g.Expect(k8s.Create(ctx, notes)).To(Succeed())
	for _, w := range []*twv1.BrowserWindow{contacts, notes} {
		g.Eventually(func(g Gomega) {
			get(t, w)
			g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
			g.Expect(w.Status.TabID).NotTo(BeEmpty())
		}).Should(Succeed())
	}
	g.Expect(contacts.Status.OwnsWindow).To(BeTrue())
	g.Expect(notes.Status.OwnsWindow).To(BeFalse())
	g.Expect(notes.Status.WindowID).To(Equal(user.windowID), "a Tab-placement page opens in the pinned window")
	contactsTarget := pageTarget(g, contactsURL)
	notesTarget := pageTarget(g, notesURL)
	notesWin, err := windowOfTarget(ctx, notesTarget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(notesWin).To(Equal(user.win))

	// The contacts page spawns a compose popup; it is adopted and acknowledged as
	// Temporary (it closes with the session).
	clickIn(t, contactsTarget, "#contact-1")
	var compose1 twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		spawned := spawnedOf(ns, "letters", contacts.Status.TabID)
		g.Expect(spawned).To(HaveLen(1))
		compose1 = spawned[0]
		g.Expect(recordsByOwner(g)).To(HaveKey(string(compose1.UID)))
	}).Should(Succeed())
	ack(t, &compose1, twv1.DispositionTemporary)
	compose1URL := fx.Path("/compose?to=" + url.QueryEscape(fixture.Contacts[1]))
	pageTarget(g, compose1URL)

	recsBefore := recordsByOwner(g)
	for _, w := range []*twv1.BrowserWindow{contacts, notes, &compose1} {
		g.Expect(recsBefore).To(HaveKey(string(w.UID)), "record of %s", w.Name)
	}
	epoch := host.Driver().Epoch()
	g.Expect(epoch).To(BeNumerically(">", 0))

	// Stop the service worker: its socket dies with it.
	stopped := time.Now()
	stopWorker(t)
	g.Eventually(func() bool { return !host.Driver().Connected() || host.Driver().Epoch() > epoch }).
		Should(BeTrue(), "the host sees the worker's socket close")
	t.Logf("worker stopped; host disconnected after %v", time.Since(stopped).Round(time.Millisecond))
	g.Eventually(func(g Gomega) {
		if host.Driver().Epoch() > epoch {
			return // its alarm brought the worker back already: nothing to see
		}
		get(t, contacts)
		g.Expect(contacts.Status.Phase).To(Equal(twv1.WindowUnknown), "pages are Unknown, not Gone, while the extension is away")
	}).Should(Succeed())
	g.Expect(get(t, contacts).Status.Phase).NotTo(Equal(twv1.WindowGone))

	// While it is down, the contacts page spawns another compose popup. Chrome wakes
	// the worker for the tabs.onCreated event; the new worker reconnects (a new
	// epoch) and the agent adopts the spawn from the resync snapshot.
	clicked := time.Now()
	t.Logf("clicking while the extension is connected: %v", host.Driver().Connected())
	clickIn(t, contactsTarget, "#contact-2")
	g.Eventually(func() int64 { return host.Driver().Epoch() }).WithTimeout(75*time.Second).Should(BeNumerically(">", epoch),
		"the worker comes back and reconnects by itself (next tab event, or its 30 s alarm)")
	record(t, "service worker stop → reconnected", time.Since(stopped))
	var compose2 twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		spawned := spawnedOf(ns, "letters", contacts.Status.TabID)
		g.Expect(spawned).To(HaveLen(2))
		for _, w := range spawned {
			if w.Name != compose1.Name {
				compose2 = w
			}
		}
		g.Expect(recordsByOwner(g)).To(HaveKey(string(compose2.UID)))
	}).Should(Succeed())
	record(t, "spawn while worker down (click → adopted)", time.Since(clicked))
	compose2URL := fx.Path("/compose?to=" + url.QueryEscape(fixture.Contacts[2]))
	pageTarget(g, compose2URL)
	ack(t, &compose2, twv1.DispositionTemporary)

	// The records written before the restart survived it, unchanged.
	recsAfter := recordsByOwner(g)
	for owner, recs := range recsBefore {
		g.Expect(recsAfter).To(HaveKeyWithValue(owner, Equal(recs)), "record of %s survives the worker restart", owner)
	}
	for _, w := range []*twv1.BrowserWindow{contacts, notes, &compose1} {
		g.Eventually(func(g Gomega) {
			get(t, w)
			g.Expect(w.Status.Phase).To(Equal(twv1.WindowOpen))
			g.Expect(w.Status.Epoch).To(BeNumerically(">", epoch))
		}).Should(Succeed())
	}

	// Delete the session: exactly the owned pages close.
	owned := []string{contactsURL, notesURL, compose1URL, compose2URL}
	for _, u := range owned {
		g.Expect(hasPageURL(u)).To(BeTrue(), "%s is open before cleanup", u)
	}
	deleteSessionBackTo(t, g, s, user.before, "cleanup after worker restart")
	userTabsStay(g, user.targets, user.win)
	recs := recordsByOwner(g)
	for _, w := range []*twv1.BrowserWindow{contacts, notes, &compose1, &compose2} {
		g.Expect(recs).NotTo(HaveKey(string(w.UID)), "the record of %s is gone with its page", w.Name)
	}
	// (Chrome's pages equal those before the session: no placeholder about:blank tab
	// was added either, since the user's window kept tabs of its own.)
}

// TestServiceWorkerComesBackByItself: Chrome stops the worker and nothing happens
// in the browser afterwards (no tab events to wake it). The extension's alarm
// (every 30 s) still brings it back and it reconnects, so the agent is not stuck
// disconnected until the user happens to touch a tab.
func TestServiceWorkerComesBackByItself(t *testing.T) {
	g := NewWithT(t)
	paired(t)
	ctx := context.Background()
	g.Eventually(func() bool { return host.Driver().Connected() }).WithTimeout(30 * time.Second).Should(BeTrue())
	epoch := host.Driver().Epoch()
	pagesBefore := chromePages(g)
	stopped := time.Now()
	stopWorker(t)
	g.Eventually(func() bool { return !host.Driver().Connected() || host.Driver().Epoch() > epoch }).
		WithTimeout(30*time.Second).Should(BeTrue(), "the host sees the worker's socket close")
	g.Eventually(func() int64 { return host.Driver().Epoch() }).WithTimeout(75*time.Second).WithPolling(200*time.Millisecond).
		Should(BeNumerically(">", epoch), "the worker's alarm wakes it and it reconnects")
	record(t, "idle worker stop → reconnected (alarm)", time.Since(stopped))
	_, err := host.Driver().Snapshot(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chromePages(g)).To(Equal(pagesBefore), "nothing was opened or closed to wake it")
}

// stopWorker stops the extension's service worker through DevTools
// (ServiceWorker.stopWorker with its version id): what Chrome does to an idle worker.
func stopWorker(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	err := withServiceWorkerDomain(ctx, func(sess string, versions func() []swVersion) error {
		scope := "chrome-extension://" + extID + "/"
		// The latest state of each version: is the worker running now?
		var running swVersion
		if err := poll(ctx, 10*time.Second, func() (bool, error) {
			latest := map[string]swVersion{}
			for _, v := range versions() {
				latest[v.VersionID] = v
			}
			for _, v := range latest {
				if strings.HasPrefix(v.ScriptURL, scope) && v.RunningStatus == "running" {
					running = v
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return fmt.Errorf("no running version of the extension's worker: %w (saw %+v)", err, versions())
		}
		mark := len(versions())
		if err := devtools.do(ctx, sess, wire.StopWorker{VersionID: running.VersionID}); err != nil {
			return err
		}
		// It stopped (it may already be starting again: any tab event wakes it).
		return poll(ctx, 10*time.Second, func() (bool, error) {
			for _, v := range versions()[mark:] {
				if v.VersionID == running.VersionID && v.RunningStatus == "stopped" {
					return true, nil
				}
			}
			return false, nil
		})
	})
	if err != nil {
		t.Fatalf("stopping the extension's service worker: %v", err)
	}
}
