package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// laggingBrowser is the fake browser whose events reach the agent late: while
// held, what the browser reports waits, and it is delivered only as a page
// closes (before Close returns, as every driver's events are: a page's spawn is
// reported before its close completes). It puts the agent's adopter exactly
// where the fuzz found it (seed 5, episode 4): a popup spawned by a session's
// page is not handled yet when the session's cleanup closes that page.
type laggingBrowser struct {
	*fake.Browser
	out chan browser.Event

	mu      sync.Mutex
	held    bool
	pending []browser.Event
}

func newLaggingBrowser(t *testing.T, b *fake.Browser) *laggingBrowser {
	l := &laggingBrowser{Browser: b, out: make(chan browser.Event, 4096)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		in := b.Events()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-in:
				l.mu.Lock()
				if l.held {
					l.pending = append(l.pending, ev)
				} else {
					l.out <- ev
				}
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *laggingBrowser) Events() <-chan browser.Event { return l.out }

// hold keeps what the browser reports from the agent until the next Close.
func (l *laggingBrowser) hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = true
}

// Close closes the page, then delivers what was held, before returning.
func (l *laggingBrowser) Close(ctx context.Context, req browser.CloseRequest) error {
	err := l.Browser.Close(ctx, req)
	// Let the forwarder move what the fake emitted so far into pending.
	time.Sleep(10 * time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	for _, ev := range l.pending {
		l.out <- ev
	}
	l.pending = nil
	return err
}

// TestSpawnRacingDeletionIsAdopted: a popup spawned by a session's page just
// before the session ends, and reported to the agent only as that page closes,
// is adopted into the session and closed with it, whether the session is
// deleted or finished. Nothing is left open and owned by nobody; the user's
// tab stays.
func TestSpawnRacingDeletionIsAdopted(t *testing.T) {
	for _, end := range []string{"delete", "finish"} {
		t.Run(end, func(t *testing.T) {
			g, ctx, ns := begin(t, 30*time.Second)
			fb := fake.New()
			userWin, userTabs := fb.UserOpenWindow("https://user.example/reading")
			b := newLaggingBrowser(t, fb)
			startRoles(t, "race-"+end, b)

			s := session(ns, "racing", "race-"+end)
			g.Expect(k8s.Create(ctx, s)).To(Succeed())
			contacts := openWindow(ns, "contacts", "racing", "https://work.example/contacts")
			g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
			opener := openedTabs(t, g, contacts)[0]

			b.hold()
			popup, err := fb.Spawn(opener, "https://spawn.example/compose", true)
			g.Expect(err).NotTo(HaveOccurred())
			switch end {
			case "delete":
				g.Expect(k8s.Delete(ctx, s)).To(Succeed())
			case "finish":
				g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
			}

			g.Eventually(func(g Gomega) {
				g.Expect(fb.HasPage(opener)).To(BeFalse(), "the session's page closed")
				g.Expect(fb.HasPage(popup)).To(BeFalse(), "the popup its page spawned as the session ended closed with the session")
				g.Expect(windowsOf(ns, "racing")).To(BeEmpty())
				g.Expect(fb.Records()).To(BeEmpty(), "no record is left")
			}).Should(Succeed())
			if end == "delete" {
				g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
			} else {
				g.Eventually(func(g Gomega) {
					get(t, s)
					g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhaseFinished))
				}).Should(Succeed())
			}
			// The fake closes only a page recorded under the closing key: the popup
			// was adopted into the session, then closed with it.
			g.Expect(fb.CloseCount(popup)).To(Equal(1), "the popup was closed by tabwarden, once")
			g.Expect(fb.WindowTabs(userWin)).To(Equal(userTabs), "the user's tab stays")
		})
	}
}

// TestEndingFencesTheRunningAction: a session finished while its action waits
// in a Wait step ends that action at once with session_finished: its next step
// (a click that would spawn a popup) never runs, and the session's pages close
// only after the action returned.
func TestEndingFencesTheRunningAction(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	startController(t)
	w := newActionWorld(t, g, "fence", agent.Options{})
	tab := get(t, w.contacts).Status.TabID
	pages := w.b.PageCount()

	act := &twv1.BrowserAction{}
	act.Namespace, act.GenerateName = w.ns, "taxes-"
	act.Spec = twv1.BrowserActionSpec{
		SessionRef: twv1.SessionReference{Name: "taxes"}, Thread: w.s.Spec.Thread,
		WindowRef: twv1.ActionWindowReference{Name: "contacts"},
		Steps: []twv1.ActionStep{
			{Type: twv1.StepWait, Duration: &metav1.Duration{Duration: 25 * time.Second}},
			clickText("ada@example.com"),
		},
	}
	g.Expect(w.user.Create(ctx, act)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(t, act).Status.Phase).To(Equal(twv1.ActionRunning))
	}).Should(Succeed())

	finished := time.Now()
	g.Expect(w.user.Patch(ctx, w.s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	w.agent.Timeout = 20 * time.Second
	done := w.agent.Wait(act)
	g.Expect(time.Since(finished)).To(BeNumerically("<", 15*time.Second), "the Wait step ended with the session, not after its 25 s")
	g.Expect(done.Status.Phase).To(Equal(twv1.ActionRefused))
	g.Expect(done.Status.Reason).To(Equal(twv1.ReasonSessionFinished))
	g.Expect(done.Status.Steps).To(HaveLen(1), "the click after the Wait never ran")
	g.Expect(done.Status.Spawned).To(BeEmpty())
	g.Eventually(func() bool { return w.b.HasPage(tab) }).Should(BeFalse(), "the session's page closes")
	g.Expect(w.b.PageCount()).To(Equal(pages-1), "nothing was spawned, only the session's page closed")
}

// TestActionsOfOneSessionRunOneAtATime: two actions of one session created
// together run one after the other (the second starts once the first has
// finished), while an action of another session on the same profile runs
// meanwhile.
func TestActionsOfOneSessionRunOneAtATime(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	ctx := context.Background()
	startController(t)
	w := newActionWorld(t, g, "serial", agent.Options{})
	other := session(w.ns, "other", "serial")
	g.Expect(w.user.Create(ctx, other)).To(Succeed())
	otherWin := openWindow(w.ns, "other-page", "other", contactsURL)
	g.Expect(w.user.Create(ctx, otherWin)).To(Succeed())
	openedTabs(t, g, otherWin)

	mk := func(sess, thread, window string, steps ...twv1.ActionStep) *twv1.BrowserAction {
		a := &twv1.BrowserAction{}
		a.Namespace, a.GenerateName = w.ns, sess+"-"
		a.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: sess}, Thread: thread,
			WindowRef: twv1.ActionWindowReference{Name: window}, Steps: steps}
		g.Expect(w.user.Create(ctx, a)).To(Succeed())
		return a
	}
	wait := twv1.ActionStep{Type: twv1.StepWait, Duration: &metav1.Duration{Duration: 2 * time.Second}}
	first := mk("taxes", w.s.Spec.Thread, "contacts", wait)
	second := mk("taxes", w.s.Spec.Thread, "contacts", wait)
	third := mk("other", other.Spec.Thread, "other-page", wait)
	for _, a := range []*twv1.BrowserAction{first, second, third} {
		w.agent.Wait(a)
		g.Expect(a.Status.Phase).To(Equal(twv1.ActionSucceeded), "%s: %s", a.Name, a.Status.Message)
	}
	a, b := first, second
	if b.Status.StartTime.Before(a.Status.StartTime) {
		a, b = b, a
	}
	g.Expect(b.Status.StartTime.Time).NotTo(BeTemporally("<", a.Status.CompletionTime.Truncate(time.Second)),
		"the session's second action started after its first finished")
	g.Expect(third.Status.StartTime.Time).To(BeTemporally("<", b.Status.StartTime.Time),
		"another session's action does not wait for this session's")
}

// gatedBrowser is the fake browser whose snapshots wait at a gate: after a
// reconnect the agent knows the browser is back, yet its model cannot say yet
// what the pages did while the link was down.
type gatedBrowser struct {
	*fake.Browser
	mu   sync.Mutex
	gate chan struct{} // nil: open
}

func (b *gatedBrowser) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gate = make(chan struct{})
}

func (b *gatedBrowser) open() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gate != nil {
		close(b.gate)
		b.gate = nil
	}
}

func (b *gatedBrowser) Snapshot(ctx context.Context) (browser.Snapshot, error) {
	b.mu.Lock()
	gate := b.gate
	b.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return browser.Snapshot{}, ctx.Err()
		}
	}
	return b.Browser.Snapshot(ctx)
}

// TestSpawnOfAKeepPageWhileDisconnectedIsAdopted: a Keep page spawns a popup
// while the agent's link to the browser is down, and its session is deleted
// meanwhile. When the link is back, the Keep page is released (it stays open,
// the user's now) only after the popup was adopted into the session, which
// then closes it: the popup was the session's, made while the page was still
// the session's, and is never left open and owned by nobody (the fuzz, seed 1
// episode 523: the release ran between the reconnect and the agent's snapshot).
func TestSpawnOfAKeepPageWhileDisconnectedIsAdopted(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	fb := fake.New()
	userWin, userTabs := fb.UserOpenWindow("https://user.example/reading")
	b := &gatedBrowser{Browser: fb}
	startRoles(t, "keep-spawn", b)
	s := session(ns, "keeper", "keep-spawn")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	report := openWindow(ns, "report", "keeper", "https://work.example/report")
	report.Spec.Disposition = twv1.DispositionKeep
	g.Expect(k8s.Create(ctx, report)).To(Succeed())
	page := openedTabs(t, g, report)[0]

	fb.Disconnect()
	popup, err := fb.Spawn(page, "https://spawn.example/share", true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	b.close()
	fb.Reconnect()
	// The agent reconciles the deleted window against the connected browser
	// (its record is there) while its snapshot waits.
	time.Sleep(2500 * time.Millisecond)
	b.open()

	g.Eventually(func(g Gomega) {
		g.Expect(fb.HasPage(popup)).To(BeFalse(), "the popup the Keep page spawned while the session ran closed with the session")
		g.Expect(windowsOf(ns, "keeper")).To(BeEmpty())
		g.Expect(fb.Records()).To(BeEmpty(), "no record is left")
	}).Should(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)) }).Should(BeTrue())
	g.Expect(fb.CloseCount(popup)).To(Equal(1), "the popup was adopted, then closed by tabwarden, once")
	g.Expect(fb.HasPage(page)).To(BeTrue(), "the Keep page stays open: the user's now")
	g.Expect(fb.CloseCount(page)).To(BeZero())
	g.Expect(fb.WindowTabs(userWin)).To(Equal(userTabs), "the user's tab stays")
}

// heldCloseBrowser is the fake browser whose close of one page waits until
// released: it holds an ended session's batch close on that page.
type heldCloseBrowser struct {
	*fake.Browser
	page    atomic.Value // string
	release chan struct{}
}

func (h *heldCloseBrowser) Close(ctx context.Context, req browser.CloseRequest) error {
	if held, _ := h.page.Load().(string); req.ID == held {
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Browser.Close(ctx, req)
}

// TestWindowGoesWithItsPageWhileTheBatchCloses: of an ended session's
// windows, one whose page the batch closed before its deletion reached the
// agent goes as soon as that deletion does, not once the session's other
// pages are closed too. The controller is stopped after the pages open, so
// the test deletes the window itself, late, as a busy controller would, while
// the batch is held on the other page's close.
func TestWindowGoesWithItsPageWhileTheBatchCloses(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	fb := fake.New()
	b := &heldCloseBrowser{Browser: fb, release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(b.release) })
	t.Cleanup(released)
	ctl := startController(t)
	startAgent(t, "batch-early", b)

	s := session(ns, "batch", "batch-early")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	early := openWindow(ns, "early", "batch", "https://work.example/early")
	slow := openWindow(ns, "slow", "batch", "https://work.example/slow")
	g.Expect(k8s.Create(ctx, early)).To(Succeed())
	g.Expect(k8s.Create(ctx, slow)).To(Succeed())
	earlyPage := openedTabs(t, g, early)[0]
	slowPage := openedTabs(t, g, slow)[0]
	b.page.Store(slowPage)
	ctl.Stop()

	g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func() bool { return fb.HasPage(earlyPage) }).Should(BeFalse(), "the batch closed the early page")
	g.Expect(fb.HasPage(slowPage)).To(BeTrue(), "the batch is held on the slow page")
	g.Expect(get(t, early).Finalizers).To(ContainElement(twv1.PageFinalizer), "a window not deleted keeps its page finalizer")

	g.Expect(k8s.Delete(ctx, early)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(early), &twv1.BrowserWindow{}))
	}).WithTimeout(5*time.Second).Should(BeTrue(), "the window whose page is closed goes with its deletion")
	g.Expect(fb.HasPage(slowPage)).To(BeTrue(), "while the batch is still held on the slow page")

	released()
	g.Expect(k8s.Delete(ctx, slow)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(fb.HasPage(slowPage)).To(BeFalse())
		g.Expect(windowsOf(ns, "batch")).To(BeEmpty())
		g.Expect(fb.Records()).To(BeEmpty(), "no record is left")
	}).Should(Succeed())
}

// slowWindowPatches is the agent's transport that counts, per window, the
// patches of a BrowserWindow object (not its status: the page finalizer's
// removal is one) while counting is on, and holds each of them back before
// it is sent, as a loaded API server would take to answer it.
type slowWindowPatches struct {
	rt       http.RoundTripper
	counting *atomic.Bool
	delay    time.Duration

	mu      *sync.Mutex
	patches map[string]int
}

func (s slowWindowPatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.counting.Load() && req.Method == http.MethodPatch && strings.Contains(req.URL.Path, "/browserwindows/") && !strings.HasSuffix(req.URL.Path, "/status") {
		s.mu.Lock()
		s.patches[path.Base(req.URL.Path)]++
		s.mu.Unlock()
		time.Sleep(s.delay)
	}
	return s.rt.RoundTrip(req)
}

// TestEachWindowIsLetGoOnce: each window of an ended session is let go by one
// patch of the agent. The session's batch closes the pages and lets each
// window go as its deletion shows (in the background), and each window's own
// reconcile, which its deletion brings, gets there too: only one of them
// sends the finalizer's removal. The agent's window patches are slowed, so
// that the reconciles come while the batch's let-gos are in flight (where a
// loaded API server had 2 to 7 of 10 windows patched twice, all at the end of
// a cleanup). The session then goes, and nothing is left.
func TestEachWindowIsLetGoOnce(t *testing.T) {
	g, ctx, ns := begin(t, 30*time.Second)
	fb := fake.New()
	var (
		counting atomic.Bool
		mu       sync.Mutex
		patches  = map[string]int{}
	)
	startController(t)
	testenv.StartAgent(t, cfg, agent.Options{Profile: "let-go-once", Driver: twv1.DriverFake, Browser: fb, LeaseNamespace: access.SystemNamespace},
		func(c *rest.Config) {
			c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				return slowWindowPatches{rt: rt, counting: &counting, delay: 300 * time.Millisecond, mu: &mu, patches: patches}
			}
		})

	s := session(ns, "once", "let-go-once")
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	var ws []*twv1.BrowserWindow
	for i := range 5 {
		w := openWindow(ns, fmt.Sprintf("w%d", i), "once", fmt.Sprintf("https://work.example/%d", i))
		g.Expect(k8s.Create(ctx, w)).To(Succeed())
		ws = append(ws, w)
	}
	pages := openedTabs(t, g, ws...)

	counting.Store(true)
	g.Expect(k8s.Delete(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(windowsOf(ns, "once")).To(BeEmpty())
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s), &twv1.BrowserSession{}))).To(BeTrue(), "the session goes after its windows")
	}).Should(Succeed())
	for _, p := range pages {
		g.Expect(fb.HasPage(p)).To(BeFalse(), "every page of the session is closed")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range ws {
		g.Expect(patches).To(HaveKeyWithValue(w.Name, 1), "window %s: one finalizer patch, from one writer", w.Name)
	}
}
