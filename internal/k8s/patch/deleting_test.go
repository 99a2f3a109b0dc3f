package patch

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDeletingExpires: an expectation older than DeletingTTL no longer holds
// (the DELETE is sent again), and one owner's expectations are not another's.
func TestDeletingExpires(t *testing.T) {
	defer func(ttl time.Duration) { DeletingTTL = ttl }(DeletingTTL)
	DeletingTTL = 50 * time.Millisecond
	var d Deleting
	a, b := client.ObjectKey{Namespace: "ns", Name: "a"}, client.ObjectKey{Namespace: "ns", Name: "b"}
	w := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "uid-w"}}
	d.Deleted(a, w)
	if !d.Pending(a, w) {
		t.Fatal("a window just deleted is not pending")
	}
	if d.Pending(b, w) {
		t.Fatal("owner b holds owner a's expectation")
	}
	time.Sleep(2 * DeletingTTL)
	if d.Pending(a, w) {
		t.Fatalf("an expectation older than %v still holds", DeletingTTL)
	}
	if d.Len() != 0 {
		t.Fatalf("an expired expectation is still held: %d", d.Len())
	}
	d.Deleted(a, w)
	d.Forget(a)
	if d.Pending(a, w) || d.Len() != 0 {
		t.Fatal("Forget left the owner's expectations")
	}
}
