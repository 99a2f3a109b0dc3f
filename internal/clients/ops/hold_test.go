package ops

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestReprimandCountsWhatIsLeft: a finish is reprimanded for spawned windows
// with no disposition, the one adopted a moment ago (no phase yet) included,
// and for the pages the session owns open; not for Keep deliverables, bound
// tabs, or windows already closed or not open yet.
func TestReprimandCountsWhatIsLeft(t *testing.T) {
	now := metav1.Now()
	win := func(name string, src twv1.WindowSource, d twv1.Disposition, phase twv1.WindowPhase) twv1.BrowserWindow {
		w := twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Name: name}}
		w.Spec.Source, w.Spec.Disposition, w.Status.Phase = src, d, phase
		return w
	}
	deleted := win("deleted-spawn", twv1.SourceSpawned, "", twv1.WindowOpen)
	deleted.DeletionTimestamp = &now
	var r Reprimand
	r.left([]twv1.BrowserWindow{
		win("fresh-spawn", twv1.SourceSpawned, "", ""),
		win("open-spawn", twv1.SourceSpawned, "", twv1.WindowOpen),
		win("closed-spawn", twv1.SourceSpawned, "", twv1.WindowClosed),
		deleted,
		win("main", twv1.SourceOpen, "", twv1.WindowOpen),
		win("temp", twv1.SourceSpawned, twv1.DispositionTemporary, twv1.WindowOpen),
		win("deliverable", twv1.SourceOpen, twv1.DispositionKeep, twv1.WindowOpen),
		win("users-tab", twv1.SourceBind, "", twv1.WindowOpen),
		win("opening", twv1.SourceOpen, "", ""),
	})
	if want := []string{"fresh-spawn", "open-spawn"}; !slices.Equal(r.Unacked, want) {
		t.Errorf("unacknowledged %v, want %v", r.Unacked, want)
	}
	// A window being deleted whose page is not closed yet is a page still open.
	if want := []string{"deleted-spawn", "main", "temp"}; !slices.Equal(r.OpenPages, want) {
		t.Errorf("open pages %v, want %v", r.OpenPages, want)
	}
}
