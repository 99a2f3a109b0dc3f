package controllers

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestCleanupDeletesEachWindowOnce: a reconcile whose cache does not show the
// windows it deleted as deleting yet (the watch runs behind the DELETEs'
// replies) does not delete them again; once the cache shows them deleting,
// or no longer lists them, nothing of them is remembered.
func TestCleanupDeletesEachWindowOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(twv1.AddToScheme(scheme)).To(Succeed())

	s := &twv1.BrowserSession{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "session"}}
	var objs []client.Object
	for i := range 3 {
		w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("w%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)),
			Finalizers: []string{twv1.PageFinalizer}}}
		w.Spec.SessionRef.Name, w.Spec.Source, w.Spec.Disposition = "s", twv1.SourceOpen, twv1.DispositionTemporary
		objs = append(objs, w)
	}
	var deletes atomic.Int32
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			deletes.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	r := &SessionReconciler{Client: c, Recorder: events.NewFakeRecorder(10)}

	list := func() []twv1.BrowserWindow {
		var l twv1.BrowserWindowList
		g.Expect(c.List(ctx, &l, client.InNamespace("ns"))).To(Succeed())
		return l.Items
	}
	stale := list() // the cache before the DELETEs' events arrive

	n, err := r.cleanup(ctx, s, stale)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(3))
	g.Expect(deletes.Load()).To(BeEquivalentTo(3))
	for _, w := range list() {
		g.Expect(w.DeletionTimestamp).NotTo(BeNil(), "window %s was not deleted", w.Name)
	}

	// The next reconcile still reads the stale cache: nothing is sent again.
	_, err = r.cleanup(ctx, s, stale)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deletes.Load()).To(BeEquivalentTo(3), "a reconcile on a cache that lags the DELETEs deleted the windows again")

	// The cache shows them deleting: nothing is sent, and nothing is held.
	_, err = r.cleanup(ctx, s, list())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deletes.Load()).To(BeEquivalentTo(3))
	g.Expect(r.deleting.Len()).To(BeZero())

	// A window deleted at once (no finalizer) is never shown deleting: it
	// leaves the list, and its expectation goes with it.
	w := &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare", UID: "uid-bare"}}
	w.Spec.SessionRef.Name = "s"
	g.Expect(c.Create(ctx, w)).To(Succeed())
	bare := []twv1.BrowserWindow{*w}
	_, err = r.cleanup(ctx, s, bare)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deletes.Load()).To(BeEquivalentTo(4))
	g.Expect(r.deleting.Len()).To(Equal(1))
	_, err = r.cleanup(ctx, s, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.deleting.Len()).To(BeZero())
}
