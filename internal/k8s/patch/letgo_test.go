package patch_test

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
)

const fin = "tabwarden.dev/test"

func window(uid string, deleted bool, finalizers ...string) *twv1.BrowserWindow {
	w := &twv1.BrowserWindow{}
	w.Namespace, w.Name, w.UID, w.Finalizers = "ns", "w1", types.UID("uid-"+uid), finalizers
	if deleted {
		now := metav1.Now()
		w.DeletionTimestamp = &now
	}
	return w
}

func TestReleased(t *testing.T) {
	for _, tc := range []struct {
		w    *twv1.BrowserWindow
		want bool
	}{
		{window("1", false), false},
		{window("1", false, fin), false},
		{window("1", true, fin), false},
		{window("1", true, fin, "other"), false},
		{window("1", true), true},
		{window("1", true, "other"), true},
	} {
		if got := patch.Released(tc.w, fin); got != tc.want {
			t.Errorf("Released(deleted %v, finalizers %v) = %v, want %v", !tc.w.DeletionTimestamp.IsZero(), tc.w.Finalizers, got, tc.want)
		}
	}
}

// TestLetGo walks the cache-lag trick: a window this reconciler released is
// Gone while the cache still shows it, and forgotten once the cache lost it,
// or a new window took its name.
func TestLetGo(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "tabwarden.dev", Resource: "browserwindows"}, "w1")
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "tabwarden.dev", Resource: "browserwindows"}, "w1", errors.New("changed"))
	var l patch.LetGo

	// Patches that do not release remember nothing; their errors are theirs.
	if err := l.Patched(window("1", false, fin), fin, nil); err != nil || l.Gone(window("1", true)) {
		t.Fatalf("a patch that released nothing: err %v, gone %v", err, l.Gone(window("1", true)))
	}
	if err := l.Patched(window("1", false, fin), fin, notFound); !apierrors.IsNotFound(err) {
		t.Errorf("the 404 of a live object is an error: %v", err)
	}
	if err := l.Patched(window("1", true, fin), fin, fmt.Errorf("patching: %w", notFound)); err != nil {
		t.Errorf("the 404 of a deleted object is no error: %v", err)
	}
	if l.Gone(window("1", true, fin)) {
		t.Error("a deleted object still holding the finalizer was remembered")
	}
	if err := l.Patched(window("1", true), fin, conflict); !apierrors.IsConflict(err) || l.Gone(window("1", true)) {
		t.Errorf("a release that failed: err %v, remembered %v", err, l.Gone(window("1", true)))
	}

	// Released: Gone while the cache shows it.
	if err := l.Patched(window("1", true), fin, nil); err != nil {
		t.Fatal(err)
	}
	for read := range 2 { // every read of the cache until it sees the object go
		if !l.Gone(window("1", true)) {
			t.Fatalf("a released object is not Gone (read %d)", read+1)
		}
	}
	l.Forget(client.ObjectKey{Namespace: "ns", Name: "w1"})
	if l.Gone(window("1", true)) {
		t.Error("Forget kept the object")
	}

	// Released by a patch that met a 404 (gone already): remembered too.
	if err := l.Patched(window("1", true), fin, notFound); err != nil || !l.Gone(window("1", true)) {
		t.Errorf("released by a 404: err %v", err)
	}
	// A new object of the same name is not Gone, and the old entry goes.
	if l.Gone(window("2", false, fin)) {
		t.Error("a new object of the same name is Gone")
	}
	if l.Gone(window("1", true)) {
		t.Error("the entry of the old object outlived a new one of its name")
	}
}
