package metrics

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// fakeCache is a reader holding objects, as the controller's cache would.
func fakeCache(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&twv1.BrowserSession{}, &twv1.BrowserWindow{}).Build()
}

func sessionIn(ns, name, phase, profile string, unacked int32) *twv1.BrowserSession {
	s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s.Status.Phase, s.Status.ProfileName = twv1.SessionPhase(phase), profile
	s.Status.Windows.Unacknowledged = unacked
	return s
}

func windowIn(ns, name string, source twv1.WindowSource, phase twv1.WindowPhase, statusProfile, labelProfile string) *twv1.BrowserWindow {
	w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if labelProfile != "" {
		w.Labels = map[string]string{twv1.ProfileLabel: labelProfile}
	}
	w.Spec.Source = source
	w.Status.Phase, w.Status.ProfileName = phase, statusProfile
	return w
}

// gauge is the value of family name's sample with exactly labels, or -1.
func gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// TestLiveGaugesFromTheCache: the session and window gauges are what the
// cache holds at the scrape, by phase and profile (source for windows), with
// zeros for every phase of every known profile; a restarted controller (a new
// reader over the same objects) reports the same, with nothing carried over.
func TestLiveGaugesFromTheCache(t *testing.T) {
	profile := &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "idle"}}
	objs := []client.Object{
		profile,
		sessionIn("a", "s1", "Active", "local", 1),
		sessionIn("a", "s2", "Active", "local", 0),
		sessionIn("b", "s3", "WaitingForUser", "my-chrome", 0),
		sessionIn("b", "s4", "", "", 0), // not placed, no phase yet: Pending
		windowIn("a", "w1", twv1.SourceOpen, twv1.WindowOpen, "local", "local"),
		windowIn("a", "w2", twv1.SourceSpawned, twv1.WindowOpen, "local", "local"),
		windowIn("a", "w3", twv1.SourceOpen, "", "", "local"), // not taken yet: the label's profile
		windowIn("b", "w4", twv1.SourceBind, twv1.WindowGone, "my-chrome", "my-chrome"),
		// A user may label a window of a session that does not exist with any
		// profile name: it is counted, under no profile, and names no series.
		windowIn("b", "w5", twv1.SourceOpen, "", "", "no-such-profile-1234"),
	}
	for restart := range 2 {
		withdraw := SetSessionReader(fakeCache(t, objs...))
		for _, c := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{SessionsName, map[string]string{"phase": "Active", "profile": "local"}, 2},
			{SessionsName, map[string]string{"phase": "WaitingForUser", "profile": "my-chrome"}, 1},
			{SessionsName, map[string]string{"phase": "Pending", "profile": ""}, 1},
			{SessionsName, map[string]string{"phase": "Finished", "profile": "local"}, 0},
			{SessionsName, map[string]string{"phase": "Active", "profile": "idle"}, 0},
			{WindowsName, map[string]string{"phase": "Open", "source": "Open", "profile": "local"}, 1},
			{WindowsName, map[string]string{"phase": "Open", "source": "Spawned", "profile": "local"}, 1},
			{WindowsName, map[string]string{"phase": "Pending", "source": "Open", "profile": "local"}, 1},
			{WindowsName, map[string]string{"phase": "Gone", "source": "Bind", "profile": "my-chrome"}, 1},
			{WindowsName, map[string]string{"phase": "Open", "source": "Bind", "profile": "idle"}, 0},
			{WindowsName, map[string]string{"phase": "Pending", "source": "Open", "profile": ""}, 1},
			{WindowsName, map[string]string{"phase": "Pending", "source": "Open", "profile": "no-such-profile-1234"}, -1},
			{UnacknowledgedSpawnsName, map[string]string{"namespace": "a"}, 1},
			{UnacknowledgedSpawnsName, map[string]string{"namespace": "b"}, 0},
			{DirtySessionsName, map[string]string{"namespace": "a"}, 0},
		} {
			if got := gauge(t, c.name, c.labels); got != c.want {
				t.Errorf("after %d restart(s): %s%v = %v, want %v", restart, c.name, c.labels, got, c.want)
			}
		}
		withdraw()
		if got := gauge(t, SessionsName, map[string]string{"phase": "Active", "profile": "local"}); got != -1 {
			t.Errorf("withdrawn reader: %s still reported (%v)", SessionsName, got)
		}
	}
}

// TestAgentMetricsCarryProfile: every agent-side series is labelled with the
// agent's profile and driver, so two agents in one process (tabwarden up) are
// told apart.
func TestAgentMetricsCarryProfile(t *testing.T) {
	a, b := For("p-a", "cdp"), For("p-b", "extension")
	a.DriverConnected(true, true)
	b.DriverConnected(false, false)
	a.PageOpened(time.Now().Add(-time.Second))
	if got := gauge(t, DriverConnectedName, map[string]string{"profile": "p-a", "driver": "cdp"}); got != 1 {
		t.Errorf("connected p-a = %v", got)
	}
	if got := gauge(t, DriverPairedName, map[string]string{"profile": "p-b", "driver": "extension"}); got != 0 {
		t.Errorf("paired p-b = %v", got)
	}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != PagesOpenedName {
			continue
		}
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			if l["profile"] == "p-a" && l["driver"] == "cdp" && m.GetCounter().GetValue() == 1 {
				return
			}
		}
	}
	t.Errorf("%s{profile=p-a,driver=cdp} 1 not found", PagesOpenedName)
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// documented is a row of docs/metrics.md's tables.
type documented struct {
	typ    string
	labels []string
}

var (
	rowRe  = regexp.MustCompile("^\\| `(tabwarden_[a-z_]+)` \\| ([a-z]+) \\| ([^|]*) \\|")
	tickRe = regexp.MustCompile("`([a-z_]+)`")
	descRe = regexp.MustCompile(`fqName: "([^"]+)"`)
)

func readDocs(t *testing.T) map[string]documented {
	t.Helper()
	text, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]documented{}
	for _, line := range strings.Split(string(text), "\n") {
		m := rowRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d := documented{typ: m[2]}
		for _, l := range tickRe.FindAllStringSubmatch(m[3], -1) {
			d.labels = append(d.labels, l[1])
		}
		sort.Strings(d.labels)
		if _, dup := docs[m[1]]; dup {
			t.Errorf("docs/metrics.md lists %s twice", m[1])
		}
		docs[m[1]] = d
	}
	return docs
}

// TestMetricsDocumented: every metric tabwarden registers appears in
// docs/metrics.md with its type and labels, and the docs list no other.
// Every series is made to exist first (each agent metric once, the session
// gauges over a cache), then the registry is gathered as a scrape would.
func TestMetricsDocumented(t *testing.T) {
	a := For("doc", "fake")
	a.SpawnAdopted("opener", time.Now())
	a.PageOpened(time.Now())
	a.PageClosed()
	a.PageReleased()
	a.ActionFinished("Succeeded", "", time.Now())
	a.SpawnSettle("none")
	a.PoolContextDisposed(DisposedInCleanup)
	a.DriverConnected(true, true)
	SessionCleaned("doc", time.Now())
	withdraw := SetSessionReader(fakeCache(t,
		sessionIn("doc", "s", "Active", "doc", 0),
		windowIn("doc", "w", twv1.SourceOpen, twv1.WindowOpen, "doc", "doc")))
	defer withdraw()

	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]documented{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "tabwarden_") {
			continue
		}
		d := documented{typ: strings.ToLower(f.GetType().String())}
		if len(f.GetMetric()) > 0 {
			for name := range labelsOf(f.GetMetric()[0]) {
				d.labels = append(d.labels, name)
			}
			sort.Strings(d.labels)
		}
		gathered[f.GetName()] = d
	}
	// A collector registered but not exercised above gathers nothing: its
	// descriptions still name it.
	for _, c := range registered {
		descs := make(chan *prometheus.Desc, 16)
		c.Describe(descs)
		close(descs)
		for d := range descs {
			m := descRe.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			if _, ok := gathered[m[1]]; !ok {
				t.Errorf("%s is registered but gathered nothing: make this test give it a series", m[1])
			}
		}
	}
	docs := readDocs(t)
	for name, g := range gathered {
		d, ok := docs[name]
		switch {
		case !ok:
			t.Errorf("%s (%s, labels %v) is registered but not in docs/metrics.md", name, g.typ, g.labels)
		case d.typ != g.typ:
			t.Errorf("%s: docs/metrics.md says %s, it is a %s", name, d.typ, g.typ)
		case !slices.Equal(d.labels, g.labels):
			t.Errorf("%s: docs/metrics.md says labels %v, it has %v", name, d.labels, g.labels)
		}
	}
	for name := range docs {
		if _, ok := gathered[name]; !ok {
			t.Errorf("docs/metrics.md lists %s, which tabwarden does not register", name)
		}
	}
}
