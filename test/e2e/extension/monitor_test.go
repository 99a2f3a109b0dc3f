package extension_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// monitorSession is what the popup's Session Monitor shows of one session, read
// from its DOM.
type monitorSession struct {
	Title, Phase, Thread, Purpose string
	Warning                       string
	Hints                         []string
	Windows                       []struct {
		Name, Tab, Source, Phase, Disposition string
		Unacknowledged                        bool
		// Split: a cell that must read as one (tab id, source, phase,
		// disposition) wraps onto a second line at the popup's 420 px
		// ("Ope/n", "unacknowledg/ed", "1866/2654/85").
		Split bool
	}
}

// readMonitor reads the Session Monitor of the popup page open in target.
func readMonitor(g Gomega, sess string) map[string]monitorSession {
	var raw string
	g.Expect(devtools.eval(context.Background(), sess, `JSON.stringify([...document.querySelectorAll("#sessions .session")].map((s) => ({
		Title: s.querySelector(".session-name").textContent,
		Phase: s.querySelector(".session-head .badge").textContent,
		Thread: s.querySelector(".thread").textContent,
		Purpose: s.querySelector(".purpose").textContent,
		Warning: s.querySelector("p.warning")?.textContent ?? "",
		Hints: [...s.querySelectorAll("code.hint")].map((c) => c.textContent),
		Windows: [...s.querySelectorAll("tbody tr")].map((tr) => {
			const td = [...tr.querySelectorAll("td")].map((c) => c.textContent);
			const split = [...tr.querySelectorAll("td")].slice(1).some((c) => { const r = document.createRange(); r.selectNodeContents(c); return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1; });
			return { Name: td[0], Tab: td[1], Source: td[2], Phase: td[3], Disposition: td[4], Unacknowledged: tr.classList.contains("unacknowledged"), Split: split };
		}),
	})))`, &raw)).To(Succeed())
	var list []monitorSession
	g.Expect(json.Unmarshal([]byte(raw), &list)).To(Succeed())
	out := map[string]monitorSession{}
	for _, s := range list {
		out[s.Title] = s
	}
	return out
}

// groupTitles are the titles of the Chrome tab groups the tabs are in ("" when
// not grouped), as the extension's own page reads them.
func groupTitles(g Gomega, sess string, tabIDs ...string) []string {
	ids, _ := json.Marshal(tabIDs)
	var titles []string
	g.Expect(devtools.eval(context.Background(), sess, fmt.Sprintf(`Promise.all(%s.map(async (id) => {
		const t = await chrome.tabs.get(Number(id));
		return t.groupId === -1 ? "" : (await chrome.tabGroups.get(t.groupId)).title;
	}))`, ids), &titles)).To(Succeed())
	return titles
}

// TestSessionMonitorThroughExtension: the agent publishes its sessions to the real
// extension; the popup (opened as a page of the extension's origin) shows each
// session's thread, purpose and windows live, with the unacknowledged spawns marked
// and the command that acknowledges them; the session's pages are in a Chrome tab
// group titled by its purpose (the compose popup's window cannot hold one); ending
// the session empties the monitor.
func TestSessionMonitorThroughExtension(t *testing.T) {
	g, ctx := begin(t, 200*time.Millisecond)
	ns := newNamespace(t)
	startRoles(t)

	s := session(ns, "research")
	s.Spec.Purpose = "compare the contact forms"
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	contactsURL := fx.Path("/contacts?monitor=" + ns)
	linksURL := fx.Path("/blank-link?monitor=" + ns)
	contacts := openWindow(ns, "contacts", "research", contactsURL)
	links := openWindow(ns, "links", "research", linksURL)
	g.Expect(k8s.Create(ctx, contacts)).To(Succeed())
	g.Expect(k8s.Create(ctx, links)).To(Succeed())
	waitOpen(t, g, contacts, links)

	// The user opens the popup (its page in a tab of the extension's origin).
	psess := attachPopup(t, g, openPopupTab)
	title := ns + "/research"
	g.Eventually(func(g Gomega) {
		m := readMonitor(g, psess)
		g.Expect(m).To(HaveKey(title))
		got := m[title]
		g.Expect(got.Thread).To(Equal("thread: thread-42"))
		g.Expect(got.Purpose).To(Equal("purpose: compare the contact forms"))
		g.Expect(got.Phase).To(Equal("Active"))
		g.Expect(got.Windows).To(HaveLen(2))
		g.Expect(got.Windows[0].Name).To(Equal("contacts"))
		g.Expect(got.Windows[0].Tab).To(Equal(contacts.Status.TabID))
		g.Expect(got.Windows[0].Source).To(Equal("Open"))
		g.Expect(got.Windows[0].Phase).To(Equal("Open"))
		g.Expect(got.Windows[0].Unacknowledged).To(BeFalse())
		g.Expect(got.Warning).To(BeEmpty())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(groupTitles(g, psess, contacts.Status.TabID, links.Status.TabID)).To(Equal([]string{"compare the contact forms", "compare the contact forms"}))
	}).Should(Succeed())

	// Two spawns: a compose popup (a window of its own) and a target=_blank tab
	// (in the links page's window).
	clickIn(t, pageTarget(g, contactsURL), "#contact-0")
	clickIn(t, pageTarget(g, linksURL), "#open-landing")
	var compose, landing twv1.BrowserWindow
	g.Eventually(func(g Gomega) {
		c, l := spawnedOf(ns, "research", contacts.Status.TabID), spawnedOf(ns, "research", links.Status.TabID)
		g.Expect(c).To(HaveLen(1))
		g.Expect(l).To(HaveLen(1))
		compose, landing = c[0], l[0]
		g.Expect(get(t, &compose).Status.Phase).To(Equal(twv1.WindowOpen))
		g.Expect(get(t, &landing).Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())

	// The popup shows them, live, marked unacknowledged with the command that
	// acknowledges each.
	g.Eventually(func(g Gomega) {
		got := readMonitor(g, psess)[title]
		g.Expect(got.Windows).To(HaveLen(4))
		marked := map[string]bool{}
		for _, w := range got.Windows {
			marked[w.Name] = w.Unacknowledged
			g.Expect(w.Split).To(BeFalse(), "window %s: a word of its row is split across lines at the popup's width", w.Name)
			if w.Unacknowledged {
				g.Expect(w.Source).To(Equal("Spawned"))
				g.Expect(w.Disposition).To(ContainSubstring("unacknowledged"))
			}
		}
		g.Expect(marked).To(Equal(map[string]bool{"contacts": false, "links": false, compose.Name: true, landing.Name: true}))
		g.Expect(got.Warning).To(HavePrefix("2 spawned window(s) unacknowledged"))
		g.Expect(got.Hints).To(ContainElement(fmt.Sprintf(`kubectl patch browserwindow %s -n %s --type=merge -p '{"spec":{"disposition":"Close"}}'`, compose.Name, ns)))
	}).Should(Succeed())
	// The spawned tab joins its session's group; the compose popup's window cannot
	// hold groups and stays as it is.
	g.Eventually(func(g Gomega) {
		g.Expect(groupTitles(g, psess, landing.Status.TabID, compose.Status.TabID)).To(Equal([]string{"compare the contact forms", ""}))
	}).Should(Succeed())

	// Acknowledged: the marks go.
	ack(t, &compose, twv1.DispositionClose)
	ack(t, &landing, twv1.DispositionTemporary)
	g.Eventually(func(g Gomega) {
		got := readMonitor(g, psess)[title]
		g.Expect(got.Warning).To(BeEmpty())
		phases := map[string]string{}
		for _, w := range got.Windows {
			g.Expect(w.Unacknowledged).To(BeFalse(), "window %s", w.Name)
			phases[w.Name] = w.Phase + "/" + w.Disposition
		}
		g.Expect(phases).To(Equal(map[string]string{
			"contacts": "Open/—", "links": "Open/—", compose.Name: "Closed/Close", landing.Name: "Open/Temporary",
		}), "the compose window closed; the landing tab stays until the session ends")
	}).Should(Succeed())

	// The session ends: its pages close and the monitor no longer lists it.
	tabs := []string{contacts.Status.TabID, links.Status.TabID, landing.Status.TabID}
	deleteSession(g, s)
	g.Eventually(func(g Gomega) { g.Expect(readMonitor(g, psess)).NotTo(HaveKey(title)) }).Should(Succeed())
	for _, id := range tabs {
		n, _ := strconv.Atoi(id)
		var gone bool
		g.Expect(devtools.eval(ctx, psess, fmt.Sprintf(`chrome.tabs.get(%d).then(() => false, () => true)`, n), &gone)).To(Succeed())
		g.Expect(gone).To(BeTrue(), "tab %s closed with its session", id)
	}
}
