package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

const (
	contactsURL = "https://contacts.example/people"
	formURL     = "https://tax.example/form"
)

// contactsSite is the incident's contacts page: each address opens a compose
// popup; the last link opens a viewer without an opener.
func contactsSite(b *fake.Browser) {
	b.SetSite(contactsURL,
		fake.Element{Role: "link", Name: "ada@example.com", Spawn: "https://mail.example/compose?to=ada"},
		fake.Element{Role: "link", Name: "grace@example.com", Spawn: "https://mail.example/compose?to=grace"},
		fake.Element{Role: "link", Name: "Send"},
		fake.Element{Role: "button", Name: "Send"},
		fake.Element{Role: "link", Name: "Open the form", Navigate: formURL},
		fake.Element{Role: "link", Name: "Print view", Spawn: "https://contacts.example/print", NoOpener: true},
		fake.Element{Role: "textbox", Name: "Search"},
		fake.Element{Role: "combobox", Name: "Country", Options: []string{"Canada", "France"}},
		fake.Element{Role: "button", Name: "Attachment", File: true},
	)
	b.SetSite(formURL, fake.Element{Role: "textbox", Name: "Name"}, fake.Element{Role: "button", Name: "Submit"})
}

// actionWorld is one session with an Open window on the contacts page, driven
// by a thread through a scripted agent with the user's identity.
type actionWorld struct {
	ns, profile string
	// uploads is the profile's upload directory: it holds resume.txt.
	uploads  string
	b        *fake.Browser
	s        *twv1.BrowserSession
	contacts *twv1.BrowserWindow
	agent    *testenv.ScriptedAgent
	// user is the person (or AI agent) driving the session: the shipped
	// tabwarden-edit role in the namespace, nothing more.
	user client.Client
}

func newActionWorld(t *testing.T, g *WithT, profile string, opts agent.Options) *actionWorld {
	t.Helper()
	w := &actionWorld{ns: newNamespace(t), profile: profile, b: fake.New()}
	w.user = testenv.UserClient(t, cfg, w.ns, "ada")
	contactsSite(w.b)
	// The admin lets the profile's sessions upload the files of one directory.
	w.uploads = t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(w.uploads, "resume.txt"), []byte("Ada Lovelace\n"), 0o600)).To(Succeed())
	if err := testenv.EnsureProfile(context.Background(), k8s, profile, twv1.DriverFake); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	g.Expect(k8s.Patch(context.Background(), &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}},
		client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"uploadDirectory":%q}}`, w.uploads))))).To(Succeed())
	opts.Profile, opts.Driver, opts.Browser, opts.LeaseNamespace = profile, twv1.DriverFake, w.b, access.SystemNamespace
	testenv.StartAgent(t, cfg, opts)
	w.s = session(w.ns, "taxes", profile)
	g.Expect(w.user.Create(context.Background(), w.s)).To(Succeed())
	w.contacts = openWindow(w.ns, "contacts", "taxes", contactsURL)
	g.Expect(w.user.Create(context.Background(), w.contacts)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(t, w.contacts).Status.Phase).To(Equal(twv1.WindowOpen))
	}).Should(Succeed())
	w.agent = &testenv.ScriptedAgent{T: t, C: w.user, NS: w.ns, Session: "taxes", Thread: w.s.Spec.Thread}
	return w
}

func observe() twv1.ActionStep { return twv1.ActionStep{Type: twv1.StepObserve} }
func clickText(s string) twv1.ActionStep {
	return twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: s}}
}
func clickRef(r string) twv1.ActionStep {
	return twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Ref: r}}
}

func refOf(g Gomega, o *twv1.Observation, name string) string {
	g.ExpectWithOffset(1, o).NotTo(BeNil())
	for _, e := range o.Elements {
		if e.Name == name {
			return e.Ref
		}
	}
	g.ExpectWithOffset(1, o.Elements).To(ContainElement(HaveField("Name", name)))
	return ""
}

// TestActionIncident: an agent that follows only the hints it is given runs the
// incident end to end through BrowserActions: it observes the contacts page,
// clicks an address (a compose popup is spawned and adopted), is refused its
// next click until it acknowledges, follows the hint, continues, and finishes;
// the user's windows are untouched and nothing is left open.
func TestActionIncident(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	startController(t)
	w := newActionWorld(t, g, "act-incident", agent.Options{})
	base := w.b.PageCount() // the browser's own pages and the contacts page
	userWin, userTabs := w.b.UserOpenWindow("https://mail.example/inbox", "https://bank.example/")
	sa := w.agent

	obs := sa.Do("contacts", observe()).Status.Observation
	g.Expect(obs.URL).To(Equal(contactsURL))
	g.Expect(obs.ID).To(MatchRegexp(`^o[0-9]+$`))
	ada := refOf(g, obs, "ada@example.com")
	g.Expect(ada).To(HavePrefix(obs.ID + "."))

	first := sa.Do("contacts", clickRef(ada))
	g.Expect(first.Status.Spawned).To(HaveLen(1), "the compose popup the click spawned is listed on the action")
	compose := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: first.Status.Spawned[0].Name}}
	g.Expect(get(t, compose).Spec.Source).To(Equal(twv1.SourceSpawned))
	g.Expect(compose.Spec.Spawn.SpawnedBy).To(Equal("contacts"))

	// The next click is refused until the spawn has a disposition; the
	// scripted agent follows the hint (acknowledge Close) and goes on.
	second := sa.Act("contacts", clickText("grace@example.com"))
	g.Expect(second.Status.Phase).To(Equal(twv1.ActionRefused))
	g.Expect(second.Status.Reason).To(Equal(twv1.ReasonUnacknowledgedSpawns))
	g.Expect(second.Status.Message).To(ContainSubstring(compose.Name))
	g.Expect(second.Status.Hint).To(Equal(hint.Ack(w.ns, compose.Name, twv1.DispositionClose)))
	g.Expect(second.Status.Steps).To(HaveLen(1))
	g.Expect(second.Status.Steps[0].Phase).To(Equal(twv1.ActionRefused))
	pages := w.b.PageCount()
	g.Expect(sa.Follow(second.Status.Hint)).To(Succeed())
	g.Eventually(func() bool { return w.b.HasPage(compose.Spec.Spawn.TabID) }).Should(BeFalse(), "the acknowledged compose window closes")
	third := sa.Do("contacts", clickText("grace@example.com"))
	g.Expect(third.Status.Spawned).To(HaveLen(1))
	g.Expect(w.b.PageCount()).To(Equal(pages), "one popup closed, one opened")

	// A composed action stops at the first refused step: the spawn of its
	// first click refuses its second.
	sa.Refusals = nil
	composed := sa.Do("contacts", observe(), clickText("ada@example.com"), observe())
	g.Expect(sa.Refusals).To(Equal([]string{twv1.ReasonUnacknowledgedSpawns}), "grace's compose window was acknowledged by following the hint")
	g.Expect(composed.Status.Steps).To(HaveLen(3))

	// Done: the agent finishes its session; every page it owned closes.
	g.Expect(w.user.Patch(context.Background(), w.s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, bw := range windowsOf(w.ns, "taxes") {
			g.Expect(bw.Status.Phase).To(BeElementOf(twv1.WindowClosed, twv1.WindowGone), "window %s", bw.Name)
		}
	}).Should(Succeed())
	g.Expect(w.b.WindowTabs(userWin)).To(Equal(userTabs), "the user's window is untouched")
	g.Expect(w.b.PageCount()).To(Equal(base-1+len(userTabs)), "only the browser's own pages and the user's tabs are left")

	after := sa.Act("contacts", observe())
	g.Expect(after.Status.Reason).To(Equal(twv1.ReasonSessionFinished))
}

// TestGuardCoverage classifies every step type against every guard and runs
// each pair: in the guard's situation, a step the guard applies to is refused
// with the guard's reason (or warned, for no_keepalive), any other step is not.
// Adding a step type to the CRD or a guard to the contract's table (docs/contract.md) without
// classifying it fails here.
func TestGuardCoverage(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)

	// The CRD's enum is the list of step types.
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "crds", "tabwarden.dev_browseractions.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Items struct {
									Properties map[string]struct {
										Enum []string `json:"enum"`
									} `json:"properties"`
								} `json:"items"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	g.Expect(yaml.Unmarshal(raw, &crd)).To(Succeed())
	enum := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["steps"].Items.Properties["type"].Enum
	g.Expect(enum).NotTo(BeEmpty())
	var types []string
	for _, st := range twv1.StepTypes {
		types = append(types, string(st))
	}
	g.Expect(types).To(ConsistOf(enum), "twv1.StepTypes lists the CRD's step types")
	g.Expect(agent.GuardCoverage).To(HaveLen(len(twv1.Guards)), "every guard, and nothing else, is classified")
	for _, guard := range twv1.Guards {
		g.Expect(agent.GuardCoverage).To(HaveKey(guard), "guard %s is not classified", guard)
		for _, st := range twv1.StepTypes {
			c, ok := agent.GuardCoverage[guard][st]
			g.Expect(ok).To(BeTrue(), "step %s is not classified against guard %s", st, guard)
			g.Expect(c.Why).NotTo(BeEmpty(), "%s/%s says why", guard, st)
		}
	}

	startController(t)
	// steps are one step of each type, valid on the contacts page.
	var selectTarget, uploadTarget func(*twv1.ActionTarget) *twv1.ActionTarget
	steps := func(target *twv1.ActionTarget) map[twv1.StepType]twv1.ActionStep {
		return map[twv1.StepType]twv1.ActionStep{
			twv1.StepObserve:  observe(),
			twv1.StepNavigate: {Type: twv1.StepNavigate, URL: contactsURL},
			twv1.StepClick:    {Type: twv1.StepClick, Target: target},
			twv1.StepTypeText: {Type: twv1.StepTypeText, Target: target, Text: "hello"},
			twv1.StepPress:    {Type: twv1.StepPress, Key: "Enter"},
			twv1.StepScroll:   {Type: twv1.StepScroll, DeltaY: ptr.To[int32](40)},
			twv1.StepWait:     {Type: twv1.StepWait, Text: "Send"},
			// After the Navigate above (run first, in StepTypes' order) the page
			// has an entry to go back to, and then one to go forward to.
			twv1.StepBack:    {Type: twv1.StepBack},
			twv1.StepForward: {Type: twv1.StepForward},
			twv1.StepReload:  {Type: twv1.StepReload},
			twv1.StepHover:   {Type: twv1.StepHover, Target: target},
			// A drop-down: Search is a text field, so its Select aims at the
			// Country drop-down (the other guards' targets are used as given).
			twv1.StepSelect: {Type: twv1.StepSelect, Target: selectTarget(target), Text: "Canada"},
			// Search is a text field: the guards' targets are filled as given.
			twv1.StepFill: {Type: twv1.StepFill, Fields: []twv1.FillField{{Target: target, Text: "hello"}}},
			// The page shows a dialog when it runs (opened below): last in
			// StepTypes' order, it blocks no other step.
			twv1.StepDialog: {Type: twv1.StepDialog, Answer: twv1.DialogDismiss},

			twv1.StepScreenshot: {Type: twv1.StepScreenshot, Target: target},
			// A file input: Search is a text field, so its Upload aims at the
			// Attachment input (the other guards' targets are used as given).
			twv1.StepUpload: {Type: twv1.StepUpload, Target: uploadTarget(target), Files: []string{"resume.txt"}},
		}
	}
	sendButton := &twv1.ActionTarget{Text: "Search"}
	selectTarget = func(t *twv1.ActionTarget) *twv1.ActionTarget {
		if t == sendButton {
			return &twv1.ActionTarget{Text: "Country"}
		}
		return t
	}
	uploadTarget = func(t *twv1.ActionTarget) *twv1.ActionTarget {
		if t == sendButton {
			return &twv1.ActionTarget{Text: "Attachment"}
		}
		return t
	}

	for _, tc := range []struct {
		guard string
		opts  agent.Options
		// setup puts the world in the guard's situation and returns the step of
		// each type to try (and a per-step reset, run before each).
		setup func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction))
	}{
		{guard: twv1.ReasonSessionUnregistered, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			return steps(sendButton), func(a *twv1.BrowserAction) { a.Spec.SessionRef.Name = "no-such-session" }
		}},
		{guard: twv1.ReasonUnacknowledgedSpawns, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			g.Expect(w.agent.Do("contacts", clickText("ada@example.com")).Status.Spawned).To(HaveLen(1))
			return steps(sendButton), nil
		}},
		{guard: twv1.ReasonDirtySession, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			// An ended session is never reprimanded through an action: its
			// actions are refused as session_finished.
			g.Expect(w.user.Patch(context.Background(), w.s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`)))).To(Succeed())
			return steps(sendButton), nil
		}},
		{guard: twv1.ReasonStaleCoordinates, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			o := w.agent.Do("contacts", observe()).Status.Observation
			e := o.Elements[4] // "Open the form"
			g.Expect(e.Name).To(Equal("Open the form"))
			w.agent.Do("contacts", twv1.ActionStep{Type: twv1.StepScroll, DeltaY: ptr.To[int32](40)})
			return steps(&twv1.ActionTarget{X: ptr.To(e.X + 5), Y: ptr.To(e.Y + 5), Observation: o.ID}), nil
		}},
		{guard: twv1.ReasonAmbiguousTarget, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			return steps(&twv1.ActionTarget{Text: "Send"}), nil
		}},
		{guard: twv1.ReasonProfileMismatch, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			return steps(sendButton), func(a *twv1.BrowserAction) { a.Spec.ProfileName = "another-profile" }
		}},
		{guard: twv1.ReasonNoKeepalive, opts: agent.Options{KeepaliveWarnAfter: time.Millisecond}, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			g.Expect(k8s.Patch(context.Background(), &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: w.profile}},
				client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"hostIdleTimeout":"30s"}}`)))).To(Succeed())
			g.Eventually(func(g Gomega) {
				p := get(t, &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: w.profile}})
				g.Expect(p.Spec.HostIdleTimeout).NotTo(BeNil())
			}).Should(Succeed())
			return steps(sendButton), nil
		}},
		{guard: twv1.ReasonWaitingForUser, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			g.Expect(w.user.Patch(context.Background(), w.s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"WaitingForUser"}}`)))).To(Succeed())
			return steps(sendButton), nil
		}},
		{guard: twv1.ReasonSessionOwnedByAnotherThread, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			return steps(sendButton), func(a *twv1.BrowserAction) { a.Spec.Thread = "thread-of-someone-else" }
		}},
		{guard: twv1.ReasonFocusViolation, setup: func(t *testing.T, g *WithT, w *actionWorld) (map[twv1.StepType]twv1.ActionStep, func(*twv1.BrowserAction)) {
			st := steps(sendButton)
			st[twv1.StepPress] = twv1.ActionStep{Type: twv1.StepPress, Key: "Control+T"}
			return st, nil
		}},
	} {
		t.Run(tc.guard, func(t *testing.T) {
			g := NewWithT(t)
			g.SetDefaultEventuallyTimeout(20 * time.Second)
			w := newActionWorld(t, g, "guard-"+strings.ReplaceAll(tc.guard, "_", "-"), tc.opts)
			byType, reset := tc.setup(t, g, w)
			for _, st := range twv1.StepTypes {
				c := agent.GuardCoverage[tc.guard][st]
				step := byType[st]
				g.Expect(step.Type).To(Equal(st))
				act := &twv1.BrowserAction{}
				act.Namespace, act.GenerateName = w.ns, "cov-"
				act.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "taxes"}, Thread: w.s.Spec.Thread,
					WindowRef: twv1.ActionWindowReference{Name: "contacts"}, Steps: []twv1.ActionStep{step}}
				if reset != nil {
					reset(act)
				}
				if st == twv1.StepDialog {
					// A Dialog step answers the dialog the page shows (an ended
					// session's window may be gone).
					bw := &twv1.BrowserWindow{}
					if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(w.contacts), bw); err == nil {
						w.b.OpenDialog(bw.Status.TabID, "confirm")
					}
				}
				g.Expect(w.user.Create(context.Background(), act)).To(Succeed())
				act = w.agent.Wait(act)
				warned := slices.ContainsFunc(act.Status.Warnings, func(s string) bool { return strings.HasPrefix(s, tc.guard+":") })
				got := act.Status.Reason
				switch {
				case tc.guard == twv1.ReasonNoKeepalive:
					g.Expect(warned).To(Equal(c.Applies), "%s: warned", st)
					g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "%s: a warning refuses nothing (%s)", st, act.Status.Message)
				case c.Applies:
					g.Expect(act.Status.Phase).To(Equal(twv1.ActionRefused), "%s: %s applies (%s)", st, tc.guard, c.Why)
					g.Expect(got).To(Equal(tc.guard), "%s: %s", st, act.Status.Message)
					g.Expect(act.Status.Hint).NotTo(BeEmpty(), "%s: a refusal teaches the corrected call", st)
				default:
					g.Expect(got).NotTo(Equal(tc.guard), "%s: %s does not apply (%s)", st, tc.guard, c.Why)
					if tc.guard != twv1.ReasonDirtySession {
						g.Expect(act.Status.Phase).To(Equal(twv1.ActionSucceeded), "%s: %s", st, act.Status.Message)
					}
				}
			}
		})
	}
}

// TestActionRefs: refs are bound to the session, the page and the document; a
// stale ref is refused, never retargeted; an ambiguous text lists its
// candidates as refs the agent can use; waiting for the user invalidates refs.
func TestActionRefs(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	startController(t)
	w := newActionWorld(t, g, "act-refs", agent.Options{})
	base := w.b.PageCount()
	sa := w.agent

	// Ambiguous: two visible "Send" elements; the refusal names both, and its
	// hint (a ref of the first) works.
	amb := sa.Act("contacts", clickText("Send"))
	g.Expect(amb.Status.Reason).To(Equal(twv1.ReasonAmbiguousTarget))
	g.Expect(amb.Status.Steps[0].Candidates).To(HaveLen(2))
	g.Expect(amb.Status.Message).To(ContainSubstring(amb.Status.Steps[0].Candidates[0].Ref))
	g.Expect(amb.Status.Message).To(ContainSubstring(amb.Status.Steps[0].Candidates[1].Ref))
	g.Expect(sa.Follow(amb.Status.Hint)).To(Succeed())

	// A ref from before a navigation is stale.
	o := sa.Do("contacts", observe()).Status.Observation
	form := refOf(g, o, "Open the form")
	grace := refOf(g, o, "grace@example.com")
	sa.Do("contacts", clickRef(form))
	g.Eventually(func() string { return get(t, w.contacts).Status.URL }).Should(Equal(formURL))
	stale := sa.Act("contacts", clickRef(grace))
	g.Expect(stale.Status.Reason).To(Equal("stale_ref"))
	g.Expect(stale.Status.Hint).To(ContainSubstring(`"type":"Observe"`))
	g.Expect(w.b.PageCount()).To(Equal(base), "nothing was clicked: no compose window")

	// A ref of another session is refused, even on the same page kind.
	o2 := sa.Do("contacts", observe()).Status.Observation
	other := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "other"}, Spec: w.s.Spec}
	g.Expect(w.user.Create(context.Background(), other)).To(Succeed())
	ow := openWindow(w.ns, "other-form", "other", formURL)
	g.Expect(w.user.Create(context.Background(), ow)).To(Succeed())
	g.Eventually(func() twv1.WindowPhase { return get(t, ow).Status.Phase }).Should(Equal(twv1.WindowOpen))
	osa := &testenv.ScriptedAgent{T: t, C: w.user, NS: w.ns, Session: "other", Thread: w.s.Spec.Thread}
	cross := osa.Act("other-form", clickRef(refOf(g, o2, "Submit")))
	g.Expect(cross.Status.Reason).To(Equal("stale_ref"))
	g.Expect(cross.Status.Message).To(ContainSubstring("another session"))

	// Waiting for the user: writes refused, reads allowed; after resuming, refs
	// observed before need a fresh observation.
	o3 := sa.Do("contacts", observe()).Status.Observation
	g.Expect(w.user.Patch(context.Background(), w.s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"WaitingForUser"}}`)))).To(Succeed())
	g.Eventually(func() twv1.SessionState { return get(t, w.s).Spec.State }).Should(Equal(twv1.SessionWaitingForUser))
	waiting := sa.Act("contacts", twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Ref: refOf(g, o3, "Name")}, Text: "Ada"})
	g.Expect(waiting.Status.Reason).To(Equal(twv1.ReasonWaitingForUser))
	g.Expect(waiting.Status.Hint).To(Equal(hint.Resume(w.ns, "taxes")))
	g.Expect(sa.Act("contacts", observe()).Status.Phase).To(Equal(twv1.ActionSucceeded), "observing does not disturb the user")
	g.Expect(sa.Follow(waiting.Status.Hint)).To(Succeed(), "the user resumes")
	resumed := sa.Act("contacts", twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Ref: refOf(g, o3, "Name")}, Text: "Ada"})
	g.Expect(resumed.Status.Reason).To(Equal("stale_ref"), "a ref from before the wait is stale")
	typed, _ := w.b.Typed(get(t, w.contacts).Status.TabID)
	g.Expect(typed).To(BeEmpty())
	fresh := sa.Do("contacts", observe()).Status.Observation
	sa.Do("contacts", twv1.ActionStep{Type: twv1.StepTypeText, Target: &twv1.ActionTarget{Ref: refOf(g, fresh, "Name")}, Text: "Ada"})
	typed, _ = w.b.Typed(get(t, w.contacts).Status.TabID)
	g.Expect(typed).To(Equal("Ada"))
}

// TestActionLifecycle: an action on a user's tab or another session's window is
// refused; a finished action is removed after its TTL; an action's status is
// written only by the agent that claimed it.
func TestActionLifecycle(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	startController(t)
	w := newActionWorld(t, g, "act-life", agent.Options{})

	// Another session's window is not this session's to drive.
	other := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "other"}, Spec: w.s.Spec}
	g.Expect(w.user.Create(context.Background(), other)).To(Succeed())
	osa := &testenv.ScriptedAgent{T: t, C: w.user, NS: w.ns, Session: "other", Thread: w.s.Spec.Thread}
	g.Expect(osa.Act("contacts", observe()).Status.Reason).To(Equal(twv1.ReasonWindowNotInSession))

	// TTL.
	act := &twv1.BrowserAction{}
	act.Namespace, act.Name = w.ns, "short-lived"
	act.Spec = twv1.BrowserActionSpec{SessionRef: twv1.SessionReference{Name: "taxes"}, Thread: w.s.Spec.Thread,
		WindowRef: twv1.ActionWindowReference{Name: "contacts"}, Steps: []twv1.ActionStep{observe()}, TTLSecondsAfterFinished: ptr.To[int32](1)}
	g.Expect(w.user.Create(context.Background(), act)).To(Succeed())
	g.Expect(w.agent.Wait(act).Status.Phase).To(Equal(twv1.ActionSucceeded))
	g.Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(act), &twv1.BrowserAction{})
		return err != nil && strings.Contains(err.Error(), "not found")
	}).Should(BeTrue(), "removed a second after it finished")

	// Nobody but the claiming agent (and the controller) writes the result:
	// not the user, not another profile's agent.
	done := w.agent.Act("contacts", observe())
	forged := done.DeepCopy()
	forged.Status.Phase, forged.Status.Reason = twv1.ActionSucceeded, ""
	forged.Status.Message = "forged"
	err := w.user.Status().Update(context.Background(), forged)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the user's role has no status verbs: %v", err)
	err = k8s.Status().Update(context.Background(), forged)
	g.Expect(access.Denied(err, "tabwarden-action-status")).To(BeTrue(), "not even an administrator: %v", err)
	otherAgent := testenv.AgentClient(t, cfg, "someone-else")
	forged = done.DeepCopy()
	forged.Status.ProfileName, forged.Status.Message = "someone-else", "forged"
	err = otherAgent.Status().Update(context.Background(), forged)
	g.Expect(access.Denied(err, "tabwarden-action-status")).To(BeTrue(), "%v", err)
	g.Expect(get(t, done).Status.Message).NotTo(Equal("forged"))
}
