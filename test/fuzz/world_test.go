package fuzz

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/internal/testenv/link"
)

// --- roles ---

// --- the world of one episode and its reference model ---

type msession struct {
	name           string
	ended, deleted bool
}

type mwindow struct {
	name, session string
	source        twv1.WindowSource
	uid           types.UID
}

type mspawn struct{ page, session, from string }

type world struct {
	ctx     context.Context
	ns      string
	profile string
	b       *fake.Browser
	user    client.Client // the user, in a group RBAC lets write every tabwarden kind
	forger  client.Client // a stolen credential of the profile's agent
	agt     *role
	down    bool // the browser link is cut
	// api is the agent's link to the API server (the user's, the
	// controller's and the checks' go straight): partitions, drops and
	// loss happen on it.
	api        *link.Link
	apiDropped bool // api refuses connections
	lossy      bool // api loses segments
	n          int  // names
	trace      []string

	sessions  []*msession
	windows   []*mwindow // Open and Bind windows the user created
	userTabs  map[string]bool
	userOrder []string
	spawns    []mspawn
	keepPages map[string]bool
	keepMaybe map[string]bool // acknowledged Keep after the session ended: released or closed
	userGone  map[string]bool // pages of tabwarden's the user closed
	seenPages map[string]bool // every page tabwarden had: closed at most once
}

func newWorld(ctx context.Context, attempt string) (*world, error) {
	w := &world{ctx: ctx, profile: "fuzz-" + attempt, b: fake.New(), userTabs: map[string]bool{}, keepPages: map[string]bool{}, keepMaybe: map[string]bool{}, userGone: map[string]bool{}, seenPages: map[string]bool{}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fuzz-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		return nil, err
	}
	w.ns = ns.Name
	host, err := url.Parse(admin.Host)
	if err != nil {
		return nil, err
	}
	if w.api, err = link.New(host.Host); err != nil {
		return nil, err
	}
	ucfg, err := testenv.UserConfig(admin, "fuzz-user", userGroup)
	if err != nil {
		return nil, err
	}
	if w.user, err = client.New(ucfg, client.Options{Scheme: run.Scheme()}); err != nil {
		return nil, err
	}
	acfg, err := testenv.AgentConfig(admin, w.profile)
	if err != nil {
		return nil, err
	}
	if w.forger, err = client.New(acfg, client.Options{Scheme: run.Scheme()}); err != nil {
		return nil, err
	}
	if err := testenv.EnsureProfile(ctx, k8s, w.profile, twv1.DriverFake); err != nil {
		return nil, err
	}
	// The user has a window open before anything starts.
	w.userWindow(2)
	if err := controllerUp(true); err != nil {
		return nil, err
	}
	w.agentUp(true)
	return w, nil
}

func (w *world) agentUp(up bool) {
	switch {
	case up && w.agt == nil:
		cfg, err := testenv.AgentConfig(admin, w.profile)
		if err != nil {
			panic(err)
		}
		cfg.Host = "https://" + w.api.Addr()
		w.agt = startRole(func(ctx context.Context) error {
			return run.Agent(ctx, cfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
				Profile: w.profile, Driver: twv1.DriverFake, Browser: w.b, LeaseNamespace: access.SystemNamespace, Heartbeat: time.Second,
			}})
		})
	case !up && w.agt != nil:
		_ = w.agt.stop()
		w.agt = nil
	}
}

func (w *world) close() {
	w.heal()
	w.agentUp(false)
	_ = w.api.Close() // the episode is over
}

// heal ends every fault of the agent's link to the API server.
func (w *world) heal() {
	w.api.Heal()
	w.api.Lossy(0, 0, 0)
	w.apiDropped, w.lossy = false, false
}

// stats counts what the operations did, across episodes.
var stats = map[string]int{}

func (w *world) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf(format, args...))
}

func (w *world) name(prefix string) string {
	w.n++
	return fmt.Sprintf("%s-%d", prefix, w.n)
}

func (w *world) userWindow(n int) {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://user.example/%d", w.n*10+i)
	}
	w.n++
	_, ids := w.b.UserOpenWindow(urls...)
	for _, id := range ids {
		w.userTabs[id] = true
		w.userOrder = append(w.userOrder, id)
	}
}

func (w *world) active() []*msession {
	var out []*msession
	for _, s := range w.sessions {
		if !s.ended {
			out = append(out, s)
		}
	}
	return out
}

func (w *world) sessionNamed(name string) *msession {
	for _, s := range w.sessions {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (w *world) openUserTabs() []string {
	var out []string
	for _, id := range w.userOrder {
		if w.userTabs[id] {
			out = append(out, id)
		}
	}
	return out
}

// apiWindows lists the namespace's windows, sorted by name.
func (w *world) apiWindows() []twv1.BrowserWindow {
	var l twv1.BrowserWindowList
	if err := k8s.List(w.ctx, &l, client.InNamespace(w.ns)); err != nil {
		return nil
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// livePages are windows of active sessions whose page is open now: the pages
// that can spawn, be acted on or be closed by the user.
func (w *world) livePages(sources ...twv1.WindowSource) []twv1.BrowserWindow {
	var out []twv1.BrowserWindow
	for _, x := range w.apiWindows() {
		s := w.sessionNamed(x.Spec.SessionRef.Name)
		if s == nil || s.ended || !x.DeletionTimestamp.IsZero() || x.Status.Phase != twv1.WindowOpen || x.Status.TabID == "" {
			continue
		}
		if x.Spec.Disposition == twv1.DispositionClose || !slices.Contains(sources, x.Spec.Source) || !w.b.HasPage(x.Status.TabID) {
			continue
		}
		out = append(out, x)
	}
	return out
}
