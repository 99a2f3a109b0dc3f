package patch_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

var admin *rest.Config

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Setup: func(e *testenv.Env) error { admin = e.Admin; return nil }})
}

// recorder lists the requests a client sends, as "METHOD path-suffix".
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

type recordingRT struct {
	r  *recorder
	rt http.RoundTripper
}

func (t recordingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	if i := strings.Index(p, "/browsersessions/"); i >= 0 {
		p = p[i+1:] // browsersessions/<name>[/status]
	}
	t.r.mu.Lock()
	t.r.reqs = append(t.r.reqs, req.Method+" "+p)
	t.r.mu.Unlock()
	return t.rt.RoundTrip(req)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	sort.Strings(out)
	return out
}

// controllerClient is a client under the controller's identity (the only one
// that may write a session's status) whose requests rec records.
func controllerClient(t *testing.T, rec *recorder) client.Client {
	cfg := testenv.MustConfig(t)(testenv.ControllerConfig(admin))
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recordingRT{r: rec, rt: rt} }
	c, err := client.New(cfg, client.Options{Scheme: run.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newSession(t *testing.T, g *WithT) *twv1.BrowserSession {
	adm, err := client.New(admin, client.Options{Scheme: run.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	ns := testenv.NewNamespace(t, adm, "patch")
	s := &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
		Spec:       twv1.BrowserSessionSpec{Thread: "thread-1", Purpose: "test the patch helper", ProfileName: "local"},
	}
	g.Expect(adm.Create(context.Background(), s)).To(Succeed())
	return s
}

func TestUnchangedObjectSendsNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rec := &recorder{}
	c := controllerClient(t, rec)
	s := newSession(t, g)
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
	rec.take()

	h := patch.NewHelper(s, c)
	// Setting fields to what they already are, and nil lists to empty ones, is no change.
	s.Labels = map[string]string{}
	s.Status.Conditions = []metav1.Condition{}
	s.Spec.Thread = "thread-1"
	g.Expect(h.Patch(ctx, s)).To(Succeed())
	g.Expect(rec.take()).To(BeEmpty(), "an unchanged object costs no request")
}

func TestStatusOnlyChangeIsOneStatusPatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rec := &recorder{}
	c := controllerClient(t, rec)
	s := newSession(t, g)
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
	rec.take()

	h := patch.NewHelper(s, c)
	s.Status.Phase = twv1.SessionPhaseActive
	g.Expect(h.Patch(ctx, s)).To(Succeed())
	g.Expect(rec.take()).To(Equal([]string{"PATCH browsersessions/s/status"}))

	got := &twv1.BrowserSession{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(twv1.SessionPhaseActive))

	// The helper's snapshot follows the write: patching again sends nothing.
	rec.take()
	g.Expect(h.Patch(ctx, s)).To(Succeed())
	g.Expect(rec.take()).To(BeEmpty())
}

func TestObjectAndStatusChangeAreTwoPatchesAndBothStick(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rec := &recorder{}
	c := controllerClient(t, rec)
	s := newSession(t, g)
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
	rec.take()

	h := patch.NewHelper(s, c)
	s.Finalizers = append(s.Finalizers, twv1.SessionFinalizer)
	s.Status.Phase = twv1.SessionPhasePending
	s.Status.ProfileName = "local"
	g.Expect(h.Patch(ctx, s)).To(Succeed())
	g.Expect(rec.take()).To(Equal([]string{"PATCH browsersessions/s", "PATCH browsersessions/s/status"}))
	g.Expect(s.Status.Phase).To(Equal(twv1.SessionPhasePending), "the desired status survives the object patch's reply")

	got := &twv1.BrowserSession{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
	g.Expect(got.Finalizers).To(ContainElement(twv1.SessionFinalizer))
	g.Expect(got.Status.Phase).To(Equal(twv1.SessionPhasePending))
	g.Expect(got.Status.ProfileName).To(Equal("local"))

	// Clean up: the finalizer would hold the namespace's deletion.
	h = patch.NewHelper(got, c)
	got.Finalizers = nil
	g.Expect(h.Patch(ctx, got)).To(Succeed())
}

func TestSkipStatusSendsOnlyTheObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rec := &recorder{}
	c := controllerClient(t, rec)
	s := newSession(t, g)
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
	rec.take()

	h := patch.NewHelper(s, c)
	s.Labels = map[string]string{"a": "b"}
	s.Status.Phase = twv1.SessionPhaseActive
	h.SkipStatus()
	g.Expect(h.Patch(ctx, s)).To(Succeed())
	g.Expect(rec.take()).To(Equal([]string{"PATCH browsersessions/s"}))
}

func TestConcurrentObjectChangeIsAConflict(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rec := &recorder{}
	c := controllerClient(t, rec)
	s := newSession(t, g)
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())

	// Someone else changes the object after our read.
	other := s.DeepCopy()
	other.Labels = map[string]string{"someone": "else"}
	adm, err := client.New(admin, client.Options{Scheme: run.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(adm.Update(ctx, other)).To(Succeed())

	h := patch.NewHelper(s, c)
	s.Labels = map[string]string{"mine": "too"}
	s.Status.Phase = twv1.SessionPhaseActive
	err = h.Patch(ctx, s)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a stale object patch is refused, not merged over the other writer: %v", err)

	got := &twv1.BrowserSession{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
	g.Expect(got.Labels).To(Equal(map[string]string{"someone": "else"}))
	g.Expect(got.Status.Phase).To(BeEmpty(), "nothing of the refused reconcile was written")
}

func TestChangesComparesTypedFields(t *testing.T) {
	g := NewWithT(t)
	w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Name: "w"}}
	h := patch.NewHelper(w, nil)
	o, st := h.Changes(w)
	g.Expect(o || st).To(BeFalse())

	w.Status.Conditions = []metav1.Condition{}
	w.Labels = map[string]string{}
	o, st = h.Changes(w)
	g.Expect(o || st).To(BeFalse(), "empty and nil are the same")

	w.Status.Title = "t"
	o, st = h.Changes(w)
	g.Expect(o).To(BeFalse())
	g.Expect(st).To(BeTrue())

	w.Spec.URL = "https://example.com/"
	o, _ = h.Changes(w)
	g.Expect(o).To(BeTrue())
}
