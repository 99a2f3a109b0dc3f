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
	"github.com/tabwarden/tabwarden/internal/k8s/index"
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
// created again under its name since. The claim (or a refusal up front)
// carries the resourceVersion the runner read, so on a stale copy it is a
// conflict: nothing is written, no step runs, no refusal is told (Event), and
// the reconcile is retried (it reads again). The cache holds the action as
// the agent's does, through its transform (index.SlimAction). With the cache
// current the same reconcile claims the action, or refuses it once: the rows
// that show the test can fail. It fails if the writes stop carrying the
// resourceVersion, and if a refusal is told before the API server took it.
func TestAStaleCacheNeverRunsAnAction(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	errClaimed := errors.New("claimed: the test stops the run here")
	finishedSince := func(t *testing.T, api client.Client, act *twv1.BrowserAction) {
		now := metav1.Now()
		act.Status.Phase, act.Status.ProfileName, act.Status.Message = twv1.ActionSucceeded, "p", "1 step(s) ran"
		act.Status.StartTime, act.Status.CompletionTime = &now, &now
		if err := api.Status().Update(ctx, act); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// since changes the API server's copy after the cache took its own
		// (nil: the cache is current).
		since func(t *testing.T, api client.Client, act *twv1.BrowserAction)
		// ended: the session has ended (as both the cache and the API
		// server have it), so the action is refused up front, not claimed.
		ended bool
		// writes says whether the reconcile's write (the claim, or the
		// refusal) lands.
		writes bool
	}{
		{"current", nil, false, true},
		{"refused up front, current", nil, true, true},
		{"finished since", finishedSince, false, false},
		{"refused up front on a copy finished since", finishedSince, true, false},
		{"claimed since", func(t *testing.T, api client.Client, act *twv1.BrowserAction) {
			now := metav1.Now()
			act.Status.Phase, act.Status.ProfileName, act.Status.StartTime = twv1.ActionRunning, "p", &now
			if err := api.Status().Update(ctx, act); err != nil {
				t.Fatal(err)
			}
		}, false, false},
		{"deleted and created again", func(t *testing.T, api client.Client, act *twv1.BrowserAction) {
			if err := api.Delete(ctx, act); err != nil {
				t.Fatal(err)
			}
			n := act.DeepCopy()
			n.UID, n.ResourceVersion = "uid-a2", ""
			if err := api.Create(ctx, n); err != nil {
				t.Fatal(err)
			}
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := fakebrowser.New()
			page, err := fb.Open(ctx, browser.OpenRequest{Key: "uid-w", URL: "https://example.test/", NewWindow: true})
			if err != nil {
				t.Fatal(err)
			}
			s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "uid-s"}}
			s.Spec.Thread, s.Spec.State, s.Status.ProfileName = "t", twv1.SessionActive, "p"
			if tc.ended {
				s.Spec.State = twv1.SessionFinished
			}
			w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "uid-w",
				Labels: map[string]string{twv1.ProfileLabel: "p", twv1.SessionLabel: "s"}}}
			w.Spec.SessionRef.Name, w.Spec.Source, w.Spec.Disposition = "s", twv1.SourceOpen, twv1.DispositionTemporary
			w.Status.TabID, w.Status.Phase = page.ID, twv1.WindowOpen
			act := &twv1.BrowserAction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a",
				Labels: map[string]string{twv1.ProfileLabel: "p"}}}
			act.Spec.SessionRef.Name, act.Spec.Thread, act.Spec.WindowRef.Name = "s", "t", "w"
			act.Spec.Steps = []twv1.ActionStep{{Type: twv1.StepObserve}}

			var claims, refusals int
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s, w, act).
				WithStatusSubresource(&twv1.BrowserAction{}).
				WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					if err := c.SubResource(sub).Patch(ctx, obj, p, opts...); err != nil {
						return err
					}
					a, _ := obj.(*twv1.BrowserAction)
					switch {
					case a != nil && a.Status.Phase == twv1.ActionRunning:
						claims++
						return errClaimed // the steps would run now
					case a != nil && a.Status.Phase == twv1.ActionRefused:
						refusals++
					}
					return nil
				}}).Build()
			cached := &twv1.BrowserAction{}
			if err := api.Get(ctx, client.ObjectKeyFromObject(act), cached); err != nil {
				t.Fatal(err)
			}
			// The cache holds what the agent's cache does: the action through
			// its transform (CacheOptions).
			slim, err := index.SlimAction(cached.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s.DeepCopy(), w.DeepCopy(), slim.(*twv1.BrowserAction)).Build()
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
			recorder := events.NewFakeRecorder(10)
			a := &Agent{opts: Options{Profile: "p", Browser: fb}, client: cachedReads{Client: api, cache: cache}, reader: api,
				recorder: recorder, model: newModel()}
			a.model.replace(snap, a.model.beginSnapshot())
			r := &ActionReconciler{agent: a}
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}})

			after := &twv1.BrowserAction{}
			if gerr := api.Get(ctx, client.ObjectKeyFromObject(act), after); gerr != nil {
				t.Fatal(gerr)
			}
			refusedEvents := len(recorder.Events)
			switch {
			case tc.writes && tc.ended:
				if err != nil || refusals != 1 || after.Status.Phase != twv1.ActionRefused || after.Status.Reason != twv1.ReasonSessionFinished || refusedEvents != 1 {
					t.Fatalf("with the cache current the ended session's action was not refused once: err %v, refusals %d, the API server's %q %q, %d Events", err, refusals, after.Status.Phase, after.Status.Reason, refusedEvents)
				}
				return
			case tc.writes:
				if !errors.Is(err, errClaimed) || claims != 1 || after.Status.Phase != twv1.ActionRunning || after.Status.ProfileName != "p" {
					t.Fatalf("with the cache current the action was not claimed: err %v, claims %d, the API server's phase %q by %q", err, claims, after.Status.Phase, after.Status.ProfileName)
				}
				return
			}
			if err != nil || res.IsZero() {
				t.Errorf("a stale copy: the reconcile returned %+v, %v; want a retry (its write a conflict) and no error", res, err)
			}
			if claims != 0 || refusals != 0 || after.ResourceVersion != before.ResourceVersion || after.UID != before.UID || after.Status.Phase != before.Status.Phase {
				t.Errorf("a stale copy was claimed or written: claims %d, refusals %d; the API server's copy %s (%s, phase %q), before %s (%s, phase %q)",
					claims, refusals, after.ResourceVersion, after.UID, after.Status.Phase, before.ResourceVersion, before.UID, before.Status.Phase)
			}
			if refusedEvents != 0 {
				t.Errorf("a refusal the API server did not take was told: %d Event(s), %q", refusedEvents, <-recorder.Events)
			}
			// The write was refused by the API server, not skipped: the
			// patch it sent was a conflict.
			claim := cached.DeepCopy()
			claim.Status.Phase = twv1.ActionRunning
			if perr := api.Status().Patch(ctx, claim, client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(perr) {
				t.Errorf("the stale copy's claim: %v, want a conflict", perr)
			}
		})
	}
}
