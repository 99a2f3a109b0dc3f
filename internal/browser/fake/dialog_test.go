package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/fake"
)

// TestDialogNobodyAnswersIsDismissed: a dialog left open waits for a dialog
// step at most the dialog timeout; then it is dismissed (the page takes its
// dismissed title) and the page runs steps again.
func TestDialogNobodyAnswersIsDismissed(t *testing.T) {
	b := fake.New()
	b.SetDialogTimeout(50 * time.Millisecond)
	url := "https://site.example/dialog"
	b.SetSite(url, fake.Element{Role: "button", Name: "Delete", Dialog: &fake.Dialog{Dialog: browser.Dialog{Type: "confirm", Message: "Delete everything?"}, Accepted: "Deleted", Dismissed: "Kept"}})
	ctx := context.Background()
	p, err := b.Open(ctx, browser.OpenRequest{Key: "k", URL: url, NewWindow: true})
	if err != nil {
		t.Fatal(err)
	}
	act := func(s browser.Step) (browser.ActResult, error) {
		return b.Act(ctx, browser.ActRequest{Key: "act", Owner: "k", Page: p.ID, Step: s})
	}
	if r, err := act(browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Delete"}}); err != nil || r.Dialog == nil {
		t.Fatalf("click: %+v, %v, want the confirm", r.Dialog, err)
	}
	var ae *browser.ActError
	if _, err := act(browser.Step{Kind: browser.StepObserve}); !errors.As(err, &ae) || ae.Reason != browser.ReasonDialogOpen {
		t.Fatalf("observe while the confirm shows: %v, want dialog_open", err)
	}
	time.Sleep(100 * time.Millisecond)
	r, err := act(browser.Step{Kind: browser.StepObserve})
	if err != nil || r.Observation.Title != "Kept" {
		t.Fatalf("observe after the timeout: %+v, %v, want the page with the confirm dismissed", r.Observation, err)
	}
	if _, ok := b.Dialog(p.ID); ok {
		t.Error("the dialog still shows")
	}
}
