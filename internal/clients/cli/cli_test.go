package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/clients/cli"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

var (
	admin *rest.Config
	k8s   client.Client // the admin's, to check what a user would with kubectl get
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Logs: testenv.QuietLogs, Scheme: cli.Scheme(), Setup: func(e *testenv.Env) error {
		admin, k8s = e.Admin, e.Client
		return nil
	}})
}

// world is a namespace with the controller, a fake-browser agent of profile and a
// user (alice) allowed to use sessions there, with her kubeconfig.
type world struct {
	t          *testing.T
	g          *WithT
	ns         string
	profile    string
	browser    *fake.Browser
	userTab    string
	kubeconfig string
	now        time.Time
}

func newWorld(t *testing.T, profile string) *world {
	t.Helper()
	testenv.StartController(t, admin)
	b := fake.New()
	_, userTabs := b.UserOpenWindow("https://mail.example/inbox") // the user's own window
	testenv.StartAgent(t, admin, agent.Options{Profile: profile, Driver: twv1.DriverFake, Browser: b, LeaseNamespace: access.SystemNamespace})
	ns := testenv.NewNamespace(t, k8s, "cli-")
	user := testenv.AllowUser(t, admin, ns, "alice")
	w := &world{t: t, g: NewWithT(t), ns: ns, profile: profile, browser: b, userTab: userTabs[0], kubeconfig: testenv.Kubeconfig(t, user, ns)}
	w.g.SetDefaultEventuallyTimeout(60 * time.Second)
	w.g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	return w
}

// run runs `kubectl tabwarden args...` as alice, with her kubeconfig.
func (w *world) run(args ...string) (stdout, stderr string, code int) {
	return w.runIn("", args...)
}

func (w *world) runIn(stdin string, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	env := &cli.Env{
		Streams: genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut},
		Name:    "kubectl tabwarden",
		Now:     func() time.Time { return w.now },
	}
	code := cli.Main(env, append([]string{"--kubeconfig", w.kubeconfig}, args...))
	return out.String(), errOut.String(), code
}

// session starts a session as alice would with kubectl apply, and waits until it is placed.
func (w *world) session(name string) *twv1.BrowserSession {
	w.t.Helper()
	s := &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec:       twv1.BrowserSessionSpec{Thread: "thread-42", Purpose: "file the 2026 tax return form", ProfileName: w.profile},
	}
	w.g.Expect(k8s.Create(context.Background(), s)).To(Succeed())
	w.g.Eventually(func() bool {
		return meta.IsStatusConditionTrue(testenv.Get(w.t, k8s, s).Status.Conditions, twv1.RegisteredCondition)
	}).Should(BeTrue())
	return s
}

// open opens a window and waits until its page is open.
func (w *world) open(session, name, url string) *twv1.BrowserWindow {
	w.t.Helper()
	bw := testenv.OpenWindow(w.ns, name, session, url)
	w.g.Expect(k8s.Create(context.Background(), bw)).To(Succeed())
	w.g.Eventually(func() twv1.WindowPhase { return testenv.Get(w.t, k8s, bw).Status.Phase }).Should(Equal(twv1.WindowOpen))
	return bw
}

// spawn makes the page of window opener spawn url (a popup) and waits until the
// agent adopted it; it returns the spawned window.
func (w *world) spawn(session string, opener *twv1.BrowserWindow, url string) *twv1.BrowserWindow {
	w.t.Helper()
	page, err := w.browser.Spawn(testenv.Get(w.t, k8s, opener).Status.TabID, url, true)
	w.g.Expect(err).NotTo(HaveOccurred())
	var spawned *twv1.BrowserWindow
	w.g.Eventually(func() bool {
		var list twv1.BrowserWindowList
		if err := k8s.List(context.Background(), &list, client.InNamespace(w.ns), client.MatchingLabels{twv1.SessionLabel: session, twv1.SourceLabel: "spawned"}); err != nil {
			return false
		}
		for i := range list.Items {
			if sp := list.Items[i].Spec.Spawn; sp != nil && sp.TabID == page && list.Items[i].Status.Phase == twv1.WindowOpen {
				spawned = &list.Items[i]
				return true
			}
		}
		return false
	}).Should(BeTrue())
	return spawned
}

// settle sets the clock of AGE columns to 30.5 days after the newest object of
// the namespace, so every age prints as 30d in goldens.
func (w *world) settle() {
	var list twv1.BrowserWindowList
	w.g.Expect(k8s.List(context.Background(), &list, client.InNamespace(w.ns))).To(Succeed())
	newest := time.Time{}
	for _, x := range list.Items {
		if x.CreationTimestamp.After(newest) {
			newest = x.CreationTimestamp.Time
		}
	}
	w.now = newest.Add(30*24*time.Hour + 12*time.Hour)
}

// golden compares got with testdata/name.golden (rewritten with -update);
// namespace names, generated per run, read NAMESPACE there.
func (w *world) golden(name, got string) {
	w.t.Helper()
	got = strings.ReplaceAll(got, w.ns, "NAMESPACE")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		w.g.Expect(os.MkdirAll("testdata", 0o755)).To(Succeed())
		w.g.Expect(os.WriteFile(path, []byte(got), 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(path)
	w.g.Expect(err).NotTo(HaveOccurred(), "run go test with -update to write %s", path)
	if got != string(want) {
		w.t.Errorf("%s differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func TestOwnedAndAck(t *testing.T) {
	w := newWorld(t, "cli-owned")
	w.session("tax-form")
	form := w.open("tax-form", "form", "https://forms.example/contacts")
	w.open("tax-form", "docs", "https://docs.example/guide")
	spawned := w.spawn("tax-form", form, "https://mail.example/compose?to=ada")
	bound := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "inbox"},
		Spec:       twv1.BrowserWindowSpec{SessionRef: twv1.SessionReference{Name: "tax-form"}, Source: twv1.SourceBind, BindTabID: w.userTab},
	}
	w.g.Expect(k8s.Create(context.Background(), bound)).To(Succeed())
	w.g.Eventually(func() twv1.WindowPhase { return testenv.Get(t, k8s, bound).Status.Phase }).Should(Equal(twv1.WindowOpen))

	w.settle()
	out, errOut, code := w.run("owned", "tax-form")
	w.g.Expect(code).To(Equal(0), errOut)
	w.golden("owned", out)

	out, errOut, code = w.run("owned", "tax-form", "-o", "wide")
	w.g.Expect(code).To(Equal(0), errOut)
	w.golden("owned-wide", out)

	// The hold a user meets: a new window waits for the acknowledgement.
	held := testenv.OpenWindow(w.ns, "held", "tax-form", "https://forms.example/next")
	w.g.Expect(k8s.Create(context.Background(), held)).To(Succeed())
	w.g.Eventually(func() string {
		c := meta.FindStatusCondition(testenv.Get(t, k8s, held).Status.Conditions, twv1.OpenedCondition)
		if c == nil {
			return ""
		}
		return c.Reason
	}).Should(Equal(twv1.ReasonUnacknowledgedSpawns))

	out, errOut, code = w.run("ack", "--all-unacked", "tax-form", "close")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(Equal("browserwindow/" + spawned.Name + " acknowledged: Close\n"))
	w.g.Expect(testenv.Get(t, k8s, spawned).Spec.Disposition).To(Equal(twv1.DispositionClose))
	// The popup closes, the held window opens.
	w.g.Eventually(func() twv1.WindowPhase { return testenv.Get(t, k8s, held).Status.Phase }).Should(Equal(twv1.WindowOpen))
	w.g.Eventually(func() bool { return w.browser.HasPage(spawned.Spec.Spawn.TabID) }).Should(BeFalse())
	w.g.Expect(w.browser.HasPage(w.userTab)).To(BeTrue(), "the user's tab is untouched")

	out, errOut, code = w.run("ack", "--all-unacked", "tax-form", "keep")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(Equal("session tax-form has no unacknowledged spawned window\n"))

	out, errOut, code = w.run("ack", "docs", "keep")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(Equal("browserwindow/docs acknowledged: Keep\n"))
	w.g.Expect(testenv.Get(t, k8s, testenv.OpenWindow(w.ns, "docs", "", "")).Spec.Disposition).To(Equal(twv1.DispositionKeep))
}

func TestRoundTrip(t *testing.T) {
	w := newWorld(t, "cli-roundtrip")
	w.session("trip")
	form := w.open("trip", "form", "https://forms.example/contacts")
	w.spawn("trip", form, "https://mail.example/compose")

	for _, format := range []string{"yaml", "json"} {
		out, errOut, code := w.run("owned", "trip", "-o", format)
		w.g.Expect(code).To(Equal(0), errOut)
		var list unstructured.UnstructuredList
		data := []byte(out)
		if format == "yaml" {
			var err error
			data, err = yaml.YAMLToJSON(data)
			w.g.Expect(err).NotTo(HaveOccurred())
		}
		w.g.Expect(list.UnmarshalJSON(data)).To(Succeed(), out)
		w.g.Expect(list.GetKind()).To(Equal("BrowserWindowList"))
		w.g.Expect(list.Items).To(HaveLen(2))
		for _, item := range list.Items {
			w.g.Expect(item.GetAPIVersion()).To(Equal("tabwarden.dev/v1alpha1"))
			w.g.Expect(item.GetKind()).To(Equal("BrowserWindow"))
			w.g.Expect(item.GetManagedFields()).To(BeEmpty(), "kubectl prints no managedFields unless asked")
			// Re-apply what was printed, as alice, the way kubectl apply --server-side does.
			before := testenv.Get(t, k8s, &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: item.GetName()}})
			obj := item.DeepCopy()
			unstructured.RemoveNestedField(obj.Object, "status")
			w.g.Expect(w.userClient().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl"), client.ForceOwnership)).
				To(Succeed(), "re-applying %s/%s printed with -o %s", w.ns, item.GetName(), format)
			after := testenv.Get(t, k8s, before.DeepCopy())
			w.g.Expect(after.Spec).To(Equal(before.Spec), "re-applying the printed object changes nothing")
			// And it reads back as the typed object.
			var typed twv1.BrowserWindow
			raw, _ := json.Marshal(item.Object)
			w.g.Expect(json.Unmarshal(raw, &typed)).To(Succeed())
			w.g.Expect(typed.Spec).To(Equal(before.Spec))
			w.g.Expect(typed.Status.TabID).To(Equal(before.Status.TabID))
		}
	}
	out, errOut, code := w.run("owned", "trip", "-o", "name")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(strings.Split(strings.TrimSpace(out), "\n")).To(HaveLen(2))
	w.g.Expect(out).To(HavePrefix("browserwindow.tabwarden.dev/form\n"))

	_, errOut, code = w.run("owned", "trip", "-o", "xml")
	w.g.Expect(code).To(Equal(2))
	w.g.Expect(errOut).To(ContainSubstring("allowed formats are"))
	w.g.Expect(errOut).To(ContainSubstring("or wide"))
}

func (w *world) userClient() client.Client {
	cfg := testenv.MustConfig(w.t)(testenv.UserConfig(admin, "alice"))
	c, err := client.New(cfg, client.Options{Scheme: cli.Scheme()})
	w.g.Expect(err).NotTo(HaveOccurred())
	return c
}

func TestProfiles(t *testing.T) {
	w := newWorld(t, "cli-profiles")
	w.session("one")
	w.open("one", "page", "https://forms.example/contacts")
	p := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: w.profile}}
	// The agent publishes its sessions and bindable tabs with its heartbeat: the
	// user's tab (the session's own page is not bindable, so not counted).
	w.g.Eventually(func() string {
		p := testenv.Get(t, k8s, p)
		return fmt.Sprintf("%d/%d", p.Status.Sessions, p.Status.TabCount)
	}).Should(Equal("1/1"))
	w.now = testenv.Get(t, k8s, p).CreationTimestamp.Add(30*24*time.Hour + 12*time.Hour)
	out, errOut, code := w.run("profiles", w.profile)
	w.g.Expect(code).To(Equal(0), errOut)
	w.golden("profiles", out)

	out, errOut, code = w.run("profiles", w.profile, "-o", "jsonpath={.items[0].spec.driver}")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(Equal("fake"))

	_, errOut, code = w.run("profiles", "nosuch")
	w.g.Expect(code).To(Equal(1))
	w.g.Expect(errOut).To(ContainSubstring(`BrowserProfile "nosuch" not found`))
	w.g.Expect(errOut).To(ContainSubstring("hint: kubectl tabwarden profiles"))
}

func TestErrorsTeach(t *testing.T) {
	w := newWorld(t, "cli-errors")
	w.session("tax-form")
	form := w.open("tax-form", "form", "https://forms.example/contacts")
	keep := w.open("tax-form", "report", "https://forms.example/report")
	testenv.Ack(t, k8s, keep, twv1.DispositionKeep)

	// A window that does not exist: the error names it and how to list the session's.
	_, errOut, code := w.run("ack", "from", "close")
	w.g.Expect(code).To(Equal(1))
	w.g.Expect(errOut).To(Equal(fmt.Sprintf("error: BrowserWindow \"from\" not found in namespace %q\nhint: kubectl tabwarden owned tax-form -n %s\n", w.ns, w.ns)))

	// A disposition that is not one.
	_, errOut, code = w.run("ack", "form", "later")
	w.g.Expect(code).To(Equal(2))
	w.g.Expect(errOut).To(ContainSubstring(`disposition "later": want keep`))

	// --all-unacked with two sessions.
	_, errOut, code = w.run("ack", "--all-unacked", "a", "b", "close")
	w.g.Expect(code).To(Equal(2))
	w.g.Expect(errOut).To(ContainSubstring("--all-unacked takes one SESSION"))

	// A session that does not exist.
	_, errOut, code = w.run("owned", "tax-from")
	w.g.Expect(code).To(Equal(1))
	w.g.Expect(errOut).To(ContainSubstring(`BrowserSession "tax-from" not found in namespace`))
	w.g.Expect(errOut).To(ContainSubstring("(it has: tax-form)"))
	w.g.Expect(errOut).To(ContainSubstring("hint: kubectl get browsersessions -n " + w.ns))

	// cleanup without --yes changes nothing and teaches the flag.
	out, errOut, code := w.run("cleanup", "tax-form")
	w.g.Expect(code).To(Equal(1))
	w.g.Expect(out).To(BeEmpty())
	w.g.Expect(errOut).To(ContainSubstring("cleanup closes every page session tax-form owns (2: form, report), Keep deliverables included"))
	w.g.Expect(errOut).To(ContainSubstring("hint: kubectl tabwarden cleanup tax-form --yes -n " + w.ns))
	w.g.Expect(testenv.Get(t, k8s, form).Spec.Disposition).NotTo(Equal(twv1.DispositionClose))
	w.g.Consistently(func() twv1.WindowPhase { return testenv.Get(t, k8s, form).Status.Phase }, 2*time.Second).Should(Equal(twv1.WindowOpen))

	// act needs its window; its thread defaults to the session's.
	_, errOut, code = w.run("act", "tax-form", "--observe")
	w.g.Expect(code).To(Equal(2))
	w.g.Expect(errOut).To(ContainSubstring("--window is required"))
	_, errOut, code = w.run("act", "tax-from", "--window", "form", "--observe")
	w.g.Expect(code).To(Equal(1))
	w.g.Expect(errOut).To(ContainSubstring(`BrowserSession "tax-from" not found in namespace`))
	_, errOut, code = w.run("act", "tax-form", "--window", "form", "--thread", "thread-42")
	w.g.Expect(code).To(Equal(2))
	w.g.Expect(errOut).To(ContainSubstring("no steps"))
	_, errOut, code = w.run("act", "tax-form", "--window", "form", "--thread", "thread-42", "--click-point", "10,20")
	w.g.Expect(code).To(Equal(2))
	w.g.Expect(errOut).To(ContainSubstring("--click-point needs --observation"))
	_, errOut, code = w.runIn("- {type: Click}\n", "act", "tax-form", "--window", "form", "--thread", "thread-42", "-f", "-")
	w.g.Expect(code).To(Equal(1))
	w.g.Expect(errOut).To(ContainSubstring("a Click step needs a target"), "the API server's validation teaches the step")

	// cleanup --yes closes every owned page, Keep included; the user's tab stays.
	out, errOut, code = w.run("cleanup", "tax-form", "--yes")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(Equal("browserwindow/form closing\nbrowserwindow/report closing\n"))
	for _, bw := range []*twv1.BrowserWindow{form, keep} {
		w.g.Eventually(func() twv1.WindowPhase { return testenv.Get(t, k8s, bw).Status.Phase }).Should(Equal(twv1.WindowClosed))
	}
	w.g.Expect(w.browser.HasPage(w.userTab)).To(BeTrue(), "the user's tab is untouched")

	// finish ends the session.
	out, errOut, code = w.run("finish", "tax-form")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(ContainSubstring("browsersession/tax-form finished"))
	w.g.Eventually(func() twv1.SessionPhase {
		return testenv.Get(t, k8s, &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "tax-form"}}).Status.Phase
	}).Should(Equal(twv1.SessionPhaseFinished))
}

var (
	actionName    = regexp.MustCompile(`BrowserAction [a-z0-9-]+-[a-z0-9]{5}:`)
	observationID = regexp.MustCompile(`\bo[0-9]+(\.e[0-9]+)?\b`)
	columnGap     = regexp.MustCompile(`(\S)   +`)
)

func TestAct(t *testing.T) {
	w := newWorld(t, "cli-act")
	const contacts = "https://contacts.example/people"
	w.browser.SetSite(contacts,
		fake.Element{Role: "link", Name: "ada@example.com", Spawn: "https://mail.example/compose?to=ada"},
		fake.Element{Role: "link", Name: "grace@example.com", Spawn: "https://mail.example/compose?to=grace"},
		fake.Element{Role: "button", Name: "Send"},
		fake.Element{Role: "link", Name: "Send"},
	)
	w.session("taxes")
	w.open("taxes", "contacts", contacts)
	act := func(args ...string) (string, string, int) {
		out, errOut, code := w.run(append([]string{"act", "taxes", "--window", "contacts"}, args...)...)
		return actionName.ReplaceAllString(out, "BrowserAction ACTION:"), errOut, code
	}
	// Observation ids are unique per agent process and change length over time:
	// goldens read oN, with the columns of their tables spaced evenly.
	stable := func(out string) string {
		return columnGap.ReplaceAllString(observationID.ReplaceAllString(out, "oN$1"), "$1   ")
	}

	out, errOut, code := act("--thread", "thread-42", "--observe")
	w.g.Expect(code).To(Equal(0), errOut)
	w.golden("act-observe", stable(out))
	ada := regexp.MustCompile(`(o[0-9]+\.e[0-9]+)\s+link\s+ada@example.com`).FindStringSubmatch(out)
	w.g.Expect(ada).To(HaveLen(2), out)

	// The click spawns a compose popup: listed, with the command that acknowledges it.
	out, errOut, code = act("--thread", "thread-42", "--click-ref", ada[1])
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(ContainSubstring("Spawned 1 window(s); acknowledge before the next mutating step:"))
	w.g.Expect(out).To(MatchRegexp(`kubectl tabwarden ack taxes-spawn-[a-z0-9]+ close -n ` + w.ns))

	// The next click is refused: reason, message, hint; exit code 3.
	out, errOut, code = act("--thread", "thread-42", "--click-text", "grace@example.com")
	w.g.Expect(code).To(Equal(3), errOut)
	w.g.Expect(out).To(ContainSubstring("BrowserAction ACTION: Refused (unacknowledged_spawns)"))
	w.g.Expect(out).To(MatchRegexp(`(?m)^reason:  unacknowledged_spawns$`))
	w.g.Expect(out).To(MatchRegexp(`(?m)^message: .*taxes-spawn-`))
	w.g.Expect(out).To(MatchRegexp(`(?m)^hint:    kubectl patch browserwindow taxes-spawn-[a-z0-9]+ -n ` + w.ns + ` --type=merge -p '\{"spec":\{"disposition":"Close"\}\}'$`))

	// Another thread is refused too, whatever the step.
	out, errOut, code = act("--thread", "thread-7", "--observe")
	w.g.Expect(code).To(Equal(3), errOut)
	w.g.Expect(out).To(ContainSubstring("Refused (session_owned_by_another_thread)"))

	_, errOut, code = w.run("ack", "--all-unacked", "taxes", "close")
	w.g.Expect(code).To(Equal(0), errOut)

	// An ambiguous text lists the candidates' refs.
	out, errOut, code = act("--thread", "thread-42", "--click-text", "Send")
	w.g.Expect(code).To(Equal(3), errOut)
	w.golden("act-ambiguous", stable(out))

	// Steps from a file (standard input here), printed as YAML.
	out, errOut, code = w.runIn("- {type: Scroll, deltaY: 40}\n- {type: Observe}\n", "act", "taxes", "--window", "contacts", "--thread", "thread-42", "-f", "-", "-o", "yaml")
	w.g.Expect(code).To(Equal(0), errOut)
	var a twv1.BrowserAction
	w.g.Expect(yaml.UnmarshalStrict([]byte(out), &a)).To(Succeed(), out)
	w.g.Expect(a.Kind).To(Equal("BrowserAction"))
	w.g.Expect(a.Status.Phase).To(Equal(twv1.ActionSucceeded))
	w.g.Expect(a.Spec.Steps).To(HaveLen(2))
	w.g.Expect(a.Status.Observation).NotTo(BeNil())
	w.g.Expect(a.Status.Observation.ScrollY).To(Equal(int32(40)))

	// A step the browser cannot do fails: exit code 1, with the reason.
	out, errOut, code = w.runIn("- {type: Wait, text: Never shown, duration: 1s}\n", "act", "taxes", "--window", "contacts", "--thread", "thread-42", "-f", "-")
	w.g.Expect(code).To(Equal(1), errOut)
	w.g.Expect(out).To(MatchRegexp(`BrowserAction \S+: Failed \(\w+\)`))
	w.g.Expect(out).To(MatchRegexp(`(?m)^reason:  \w+$`))
	w.g.Expect(w.browser.HasPage(w.userTab)).To(BeTrue(), "the user's tab is untouched")

	// Without --thread the action runs as the session's own thread.
	out, errOut, code = w.run("act", "taxes", "--window", "contacts", "--observe", "-o", "yaml")
	w.g.Expect(code).To(Equal(0), errOut)
	var own twv1.BrowserAction
	w.g.Expect(yaml.UnmarshalStrict([]byte(out), &own)).To(Succeed(), out)
	w.g.Expect(own.Spec.Thread).To(Equal("thread-42"), "the session's spec.thread")
	w.g.Expect(own.Status.Phase).To(Equal(twv1.ActionSucceeded))
}

// complete runs the shell's completion request as bash would for
// `kubectl tabwarden --kubeconfig K words...` and returns the candidates.
func (w *world) complete(words ...string) []string {
	w.t.Helper()
	out, errOut, code := w.runRaw(append([]string{"__complete", "--kubeconfig", w.kubeconfig}, words...)...)
	w.g.Expect(code).To(Equal(0), errOut)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, ":") { // the directive
			continue
		}
		name, _, _ := strings.Cut(l, "\t") // a description follows a tab
		got = append(got, name)
	}
	return got
}

func (w *world) runRaw(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	env := &cli.Env{Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, Name: "kubectl tabwarden"}
	code := cli.Main(env, args)
	return out.String(), errOut.String(), code
}

// TestCompletion completes what a person types: the verbs, the sessions of
// the kubeconfig's namespace for a SESSION, windows and dispositions for
// ack, windows for act --window, and profiles.
func TestCompletion(t *testing.T) {
	w := newWorld(t, "cli-complete")
	w.session("tax-form")
	w.session("price-check")
	w.open("tax-form", "form", "https://forms.example/contacts")
	// Another namespace's session is not offered.
	other := testenv.NewNamespace(t, k8s, "cli-other-")
	w.g.Expect(k8s.Create(context.Background(), &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere"},
		Spec:       twv1.BrowserSessionSpec{Thread: "t", Purpose: "p", ProfileName: w.profile},
	})).To(Succeed())

	w.g.Expect(w.complete("")).To(ContainElements("owned", "ack", "finish", "act", "mcp"))
	w.g.Expect(w.complete("owned", "")).To(ConsistOf("tax-form", "price-check"))
	w.g.Expect(w.complete("finish", "ta")).To(ConsistOf("tax-form"))
	w.g.Expect(w.complete("owned", "tax-form", "")).To(BeEmpty())
	w.g.Expect(w.complete("ack", "")).To(ConsistOf("form"))
	w.g.Expect(w.complete("ack", "form", "")).To(ConsistOf("form", "keep", "close", "temporary"))
	w.g.Expect(w.complete("ack", "--all-unacked", "")).To(ConsistOf("tax-form", "price-check"))
	w.g.Expect(w.complete("act", "tax-form", "--window", "")).To(ConsistOf("form"))
	w.g.Expect(w.complete("profiles", "cli-comp")).To(ContainElement("cli-complete"))
}

// TestFinishReprimandAndHold: finishing a dirty session (a page still open, a
// spawned window never acknowledged) prints the dirty_session reprimand naming
// both; a clean one prints none. `hold` keeps a session with abandonAfter alive
// many times past it, `owned` shows its holder, and hold returns once the
// session finishes.
func TestFinishReprimandAndHold(t *testing.T) {
	w := newWorld(t, "cli-reprimand")
	ctx := context.Background()
	w.session("dirty")
	form := w.open("dirty", "form", "https://forms.example/contacts")
	popup := w.spawn("dirty", form, "https://mail.example/compose?to=ada")
	out, errOut, code := w.run("finish", "dirty")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(ContainSubstring("browsersession/dirty finished"))
	w.g.Expect(errOut).To(ContainSubstring(twv1.ReasonDirtySession + ": session dirty was finished dirty"))
	w.g.Expect(errOut).To(ContainSubstring("Pages still open (1): form."))
	w.g.Expect(errOut).To(ContainSubstring("Spawned windows never acknowledged (1): " + popup.Name + "."))

	w.session("clean")
	w.open("clean", "done", "https://forms.example/done")
	_, errOut, code = w.run("cleanup", "clean", "--yes")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Eventually(func() twv1.WindowPhase {
		return testenv.Get(t, k8s, &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "done"}}).Status.Phase
	}).Should(Equal(twv1.WindowClosed))
	out, errOut, code = w.run("finish", "clean")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(out).To(ContainSubstring("browsersession/clean finished"))
	w.g.Expect(errOut).To(BeEmpty(), "a clean session is not reprimanded")

	const after = 3 * time.Second
	s := w.session("scripted")
	w.g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"abandonAfter":"3s"}}`)))).To(Succeed())
	type res struct {
		out, errOut string
		code        int
	}
	held := make(chan res, 1)
	go func() { o, e, c := w.run("hold", "scripted"); held <- res{o, e, c} }()
	w.g.Consistently(func(g Gomega) {
		g.Expect(testenv.Get(t, k8s, s).Ended()).To(BeFalse())
	}, 3*after, 250*time.Millisecond).Should(Succeed())
	w.g.Expect(s.Status.Holder).To(HavePrefix("kubectl tabwarden hold "))
	out, _, code = w.run("owned", "scripted")
	w.g.Expect(code).To(Equal(0))
	w.g.Expect(out).To(MatchRegexp(`Holder: kubectl tabwarden hold \S+  renewed=\S+ ago  abandonAfter=3s`))
	_, errOut, code = w.run("finish", "scripted")
	w.g.Expect(code).To(Equal(0), errOut)
	w.g.Expect(errOut).To(BeEmpty(), "nothing was left open: no reprimand")
	var r res
	w.g.Eventually(held, 10*time.Second).Should(Receive(&r))
	w.g.Expect(r.code).To(Equal(0), r.errOut)
	w.g.Expect(r.out).To(ContainSubstring("browsersession/scripted held by"))
	w.g.Expect(r.out).To(ContainSubstring("no longer held"))
	w.g.Expect(testenv.Get(t, k8s, s).Status.EndReason).To(BeEmpty(), "finished, not abandoned")
}
