package agent

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	fakebrowser "github.com/tabwarden/tabwarden/internal/browser/fake"
)

// cachedReads is the manager's client as the agent has it: reads from a cache
// (which may be behind), writes to the API server.
type cachedReads struct {
	client.Client // the API server
	cache         client.Reader
}

func (c cachedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.cache.Get(ctx, key, obj, opts...)
}

func (c cachedReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.cache.List(ctx, list, opts...)
}

// TestAStaleCacheNeverRunsAnAction: the action runner reads the action from
// its cache only (no read from the API server on the way to the claim), and
// the cache may be behind: the action finished, claimed or deleted and
// created again under its name since. The claim carries the resourceVersion
// the runner read, so on a stale copy it is a conflict: nothing is written,
// no step runs, and the reconcile is retried (it reads again). With the cache
// current the same reconcile claims the action: the row that shows the test
// can fail. It fails if the claim stops carrying the resourceVersion.
func TestAStaleCacheNeverRunsAnAction(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	errClaimed := errors.New("claimed: the test stops the run here")
	for _, tc := range []struct {
		name string
		// since changes the API server's copy after the cache took its own
		// (nil: the cache is current).
		since func(t *testing.T, api client.Client, act *twv1.BrowserAction)
		// claims says whether the reconcile claims the action.
		claims bool
	}{
		{"current", nil, true},
		{"finished since", func(t *testing.T, api client.Client, act *twv1.BrowserAction) {
			now := metav1.Now()
			act.Status.Phase, act.Status.ProfileName, act.Status.Message = twv1.ActionSucceeded, "p", "1 step(s) ran"
			act.Status.StartTime, act.Status.CompletionTime = &now, &now
			if err := api.Status().Update(ctx, act); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"claimed since", func(t *testing.T, api client.Client, act *twv1.BrowserAction) {
			now := metav1.Now()
			act.Status.Phase, act.Status.ProfileName, act.Status.StartTime = twv1.ActionRunning, "p", &now
			if err := api.Status().Update(ctx, act); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"deleted and created again", func(t *testing.T, api client.Client, act *twv1.BrowserAction) {
			if err := api.Delete(ctx, act); err != nil {
				t.Fatal(err)
			}
			n := act.DeepCopy()
			n.UID, n.ResourceVersion = "uid-a2", ""
			if err := api.Create(ctx, n); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := fakebrowser.New()
			page, err := fb.Open(ctx, browser.OpenRequest{Key: "uid-w", URL: "https://example.test/", NewWindow: true})
			if err != nil {
				t.Fatal(err)
			}
			s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "uid-s"}}
			s.Spec.Thread, s.Spec.State, s.Status.ProfileName = "t", twv1.SessionActive, "p"
			w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "uid-w",
				Labels: map[string]string{twv1.ProfileLabel: "p", twv1.SessionLabel: "s"}}}
			w.Spec.SessionRef.Name, w.Spec.Source, w.Spec.Disposition = "s", twv1.SourceOpen, twv1.DispositionTemporary
			w.Status.TabID, w.Status.Phase = page.ID, twv1.WindowOpen
			act := &twv1.BrowserAction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a",
				Labels: map[string]string{twv1.ProfileLabel: "p"}}}
			act.Spec.SessionRef.Name, act.Spec.Thread, act.Spec.WindowRef.Name = "s", "t", "w"
			act.Spec.Steps = []twv1.ActionStep{{Type: twv1.StepObserve}}

			var claims int
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s, w, act).
				WithStatusSubresource(&twv1.BrowserAction{}).
				WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					if err := c.SubResource(sub).Patch(ctx, obj, p, opts...); err != nil {
						return err
					}
					if a, ok := obj.(*twv1.BrowserAction); ok && a.Status.Phase == twv1.ActionRunning {
						claims++
						return errClaimed // the steps would run now
					}
					return nil
				}}).Build()
			cached := &twv1.BrowserAction{}
			if err := api.Get(ctx, client.ObjectKeyFromObject(act), cached); err != nil {
				t.Fatal(err)
			}
			cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s.DeepCopy(), w.DeepCopy(), cached.DeepCopy()).Build()
			if tc.since != nil {
				tc.since(t, api, cached.DeepCopy())
			}
			before := &twv1.BrowserAction{}
			if err := api.Get(ctx, client.ObjectKeyFromObject(act), before); err != nil {
				t.Fatal(err)
			}

			snap, err := fb.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			a := &Agent{opts: Options{Profile: "p", Browser: fb}, client: cachedReads{Client: api, cache: cache}, reader: api,
				recorder: &events.FakeRecorder{}, model: newModel()}
			a.model.replace(snap, a.model.beginSnapshot())
			r := &ActionReconciler{agent: a}
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}})

			after := &twv1.BrowserAction{}
			if gerr := api.Get(ctx, client.ObjectKeyFromObject(act), after); gerr != nil {
				t.Fatal(gerr)
			}
			if tc.claims {
				if !errors.Is(err, errClaimed) || claims != 1 || after.Status.Phase != twv1.ActionRunning || after.Status.ProfileName != "p" {
					t.Fatalf("with the cache current the action was not claimed: err %v, claims %d, the API server's phase %q by %q", err, claims, after.Status.Phase, after.Status.ProfileName)
				}
				return
			}
			if err != nil || res.IsZero() {
				t.Errorf("a stale copy: the reconcile returned %+v, %v; want a retry (its claim a conflict) and no error", res, err)
			}
			if claims != 0 || after.ResourceVersion != before.ResourceVersion || after.UID != before.UID || after.Status.Phase != before.Status.Phase {
				t.Errorf("a stale copy was claimed or written: claims %d; the API server's copy %s (%s, phase %q), before %s (%s, phase %q)",
					claims, after.ResourceVersion, after.UID, after.Status.Phase, before.ResourceVersion, before.UID, before.Status.Phase)
			}
			// The claim was refused by the API server, not skipped: the
			// patch it sent was a conflict.
			claim := cached.DeepCopy()
			claim.Status.Phase = twv1.ActionRunning
			if perr := api.Status().Patch(ctx, claim, client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(perr) {
				t.Errorf("the stale copy's claim: %v, want a conflict", perr)
			}
		})
	}
}
