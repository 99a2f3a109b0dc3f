package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	fakebrowser "github.com/tabwarden/tabwarden/internal/browser/fake"
)

// TestBatchClosesByWhatTheAPIServerHas: an ended session's batch close
// (closeSessionPages) finds its candidates in the agent's cache, which may be
// behind, and decides each page on the window as the API server has it. The
// cache shows every window Temporary; the API server has the user's Keep on
// one, another window gone, and a third deleted and re-created under the same
// name (another uid, with a page of its own). Only the page whose window the API server still has as
// Temporary closes; the others stay open (each window's own cleanup decides
// when its deletion arrives). The batch returns without waiting for the
// closed page's window to be deleted: that window is let go (its page
// finalizer removed) when its deletion shows afterwards.
func TestBatchClosesByWhatTheAPIServerHas(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	fb := fakebrowser.New()
	session := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "uid-s"}}
	session.Spec.Thread, session.Spec.State, session.Status.ProfileName = "t", twv1.SessionFinished, "p"

	type row struct {
		name       string
		api        func(w *twv1.BrowserWindow) *twv1.BrowserWindow // the API server's copy (nil: gone)
		wantClosed bool
	}
	var cached, api []client.Object
	pages := map[string]string{}
	rows := []row{
		{"temporary", func(w *twv1.BrowserWindow) *twv1.BrowserWindow { return w.DeepCopy() }, true},
		{"kept", func(w *twv1.BrowserWindow) *twv1.BrowserWindow {
			k := w.DeepCopy()
			k.Spec.Disposition = twv1.DispositionKeep
			return k
		}, false},
		{"gone", func(*twv1.BrowserWindow) *twv1.BrowserWindow { return nil }, false},
		{"recreated", func(w *twv1.BrowserWindow) *twv1.BrowserWindow {
			// Re-created under the same name with a page of its own, which
			// the batch must not take for the old window's.
			n := w.DeepCopy()
			n.UID = "uid-other"
			p, err := fb.Open(ctx, browser.OpenRequest{Key: "uid-other", URL: "https://example.test/other", NewWindow: true})
			if err != nil {
				t.Fatal(err)
			}
			pages["other"] = p.ID
			n.Status.TabID = p.ID
			return n
		}, false},
	}
	for _, r := range rows {
		uid := types.UID("uid-" + r.name)
		p, err := fb.Open(ctx, browser.OpenRequest{Key: string(uid), URL: "https://example.test/" + r.name, NewWindow: true})
		if err != nil {
			t.Fatal(err)
		}
		pages[r.name] = p.ID
		w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: r.name, UID: uid,
			Labels: map[string]string{twv1.ProfileLabel: "p", twv1.SessionLabel: "s"}, Finalizers: []string{twv1.PageFinalizer}}}
		w.Spec.SessionRef.Name, w.Spec.Source, w.Spec.Disposition = "s", twv1.SourceOpen, twv1.DispositionTemporary
		w.Status.TabID, w.Status.Phase = p.ID, twv1.WindowOpen
		cached = append(cached, w)
		if a := r.api(w); a != nil {
			api = append(api, a)
		}
	}
	index := func(o client.Object) []string { return []string{o.(*twv1.BrowserWindow).Spec.SessionRef.Name} }
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(cached, session)...).
		WithIndex(&twv1.BrowserWindow{}, twv1.SessionRefIndex, index).Build()
	apiserver := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(api, session.DeepCopy())...).Build()

	snap, err := fb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{opts: Options{Profile: "p", Browser: fb}, client: cache, reader: apiserver, model: newModel(), barrier: make(chan chan struct{})}
	a.model.replace(snap, a.model.beginSnapshot())
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the adopter: nothing pending
		for {
			select {
			case done := <-a.barrier:
				close(done)
			case <-stop:
				return
			}
		}
	}()
	r := &WindowReconciler{agent: a}
	if err := r.closeSessionPages(ctx, session); err != nil {
		t.Fatal(err)
	}
	// The batch is over; the controller's deletion of the closed page's
	// window comes now, and the let-go waiting in the background lets it go.
	w := &twv1.BrowserWindow{}
	if err := cache.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "temporary"}, w); err != nil {
		t.Fatal(err)
	}
	if err := cache.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	a.deletions.seen(w.UID)
	deadline := time.Now().Add(5 * time.Second)
	for err := cache.Get(ctx, client.ObjectKeyFromObject(w), w); !apierrors.IsNotFound(err); err = cache.Get(ctx, client.ObjectKeyFromObject(w), w) {
		if time.Now().After(deadline) {
			t.Fatalf("the closed page's window was not let go after its deletion showed (finalizers %v, err %v)", w.Finalizers, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !fb.HasPage(pages["other"]) {
		t.Error("the page of the window re-created under the name of another was closed")
	}
	for _, row := range rows {
		if closed := !fb.HasPage(pages[row.name]); closed != row.wantClosed {
			t.Errorf("window %s: its page closed = %v after the batch, want %v (the API server's copy decides, not the cache's)", row.name, closed, row.wantClosed)
		}
	}
}

// TestNoneKeptAsksTheAPIServer: before an ended pool session's context is
// disposed (which closes every page in it), the windows the cache showed
// temporary are confirmed on the API server. A Keep or a Bind there, or a read
// that fails, stops the disposal (the per-page path decides); a window gone is
// no kept one.
func TestNoneKeptAsksTheAPIServer(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	window := func(name string) *twv1.BrowserWindow {
		w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
		w.Spec.SessionRef.Name, w.Spec.Source, w.Spec.Disposition = "s", twv1.SourceOpen, twv1.DispositionTemporary
		return w
	}
	for _, tc := range []struct {
		name   string
		api    func(a, b *twv1.BrowserWindow) []client.Object // the API server's copies of a and b
		getErr bool
		want   bool
	}{
		{"both temporary", func(a, b *twv1.BrowserWindow) []client.Object { return []client.Object{a, b} }, false, true},
		{"one kept since", func(a, b *twv1.BrowserWindow) []client.Object {
			b.Spec.Disposition = twv1.DispositionKeep
			return []client.Object{a, b}
		}, false, false},
		{"one a bind", func(a, b *twv1.BrowserWindow) []client.Object {
			b.Spec.Source = twv1.SourceBind
			return []client.Object{a, b}
		}, false, false},
		{"one gone", func(a, _ *twv1.BrowserWindow) []client.Object { return []client.Object{a} }, false, true},
		{"the API server away", func(a, b *twv1.BrowserWindow) []client.Object { return []client.Object{a, b} }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.api(window("a"), window("b"))...)
			if tc.getErr {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return errors.New("connection refused")
				}})
			}
			a := &Agent{reader: b.Build()}
			cached := map[string]*twv1.BrowserWindow{"uid-a": window("a"), "uid-b": window("b")}
			if got := a.noneKept(ctx, cached, "7"); got != tc.want {
				t.Errorf("noneKept = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCurrentReadsAsOfTheSessionsEnd: the batch's read of a window names the
// ended session's resourceVersion ("not older than": the API server answers
// from its watch cache once that has caught up, not with a quorum read from
// etcd), and when the watch cache does not catch up in time (504,
// ResourceVersionTooLarge, or no answer within watchCacheWait while client-go
// retries that 504) it reads again without one rather than leave the page to
// the slow path. Any other error is returned.
func TestCurrentReadsAsOfTheSessionsEnd(t *testing.T) {
	ctx := context.Background()
	defer func(d time.Duration) { watchCacheWait = d }(watchCacheWait)
	watchCacheWait = 50 * time.Millisecond
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "uid-w"}}
	w.Spec.Disposition = twv1.DispositionKeep
	tooLarge := apierrors.NewTimeoutError("Too large resource version: 900, current: 800", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}
	for _, tc := range []struct {
		name    string
		atRV    error // the answer to the read that names a resourceVersion
		want    []string
		wantErr bool
	}{
		{"the watch cache caught up", nil, []string{"900"}, false},
		{"the watch cache is behind", tooLarge, []string{"900", ""}, false},
		{"the API server away", errors.New("connection refused"), []string{"900"}, true},
		// The API server's 504 carries a Retry-After, which client-go retries:
		// the read at the resourceVersion runs out of its own time.
		{"the watch cache stays behind", context.DeadlineExceeded, []string{"900", ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					o := &client.GetOptions{}
					o.ApplyOptions(opts)
					rv := ""
					if o.Raw != nil {
						rv = o.Raw.ResourceVersion
					}
					asked = append(asked, rv)
					if rv != "" && errors.Is(tc.atRV, context.DeadlineExceeded) {
						<-ctx.Done()
						return fmt.Errorf("client rate limiter Wait returned an error: %w", ctx.Err())
					}
					if rv != "" && tc.atRV != nil {
						return tc.atRV
					}
					return c.Get(ctx, key, obj)
				}}).Build()
			a := &Agent{reader: reader}
			got, err := a.current(ctx, w, "900")
			if (err != nil) != tc.wantErr {
				t.Fatalf("current: err %v, want an error: %v", err, tc.wantErr)
			}
			if !slices.Equal(asked, tc.want) {
				t.Errorf("reads asked at resourceVersions %q, want %q", asked, tc.want)
			}
			if !tc.wantErr && (got == nil || got.Spec.Disposition != twv1.DispositionKeep) {
				t.Errorf("current returned %+v, want the API server's copy (Keep)", got)
			}
		})
	}
}
