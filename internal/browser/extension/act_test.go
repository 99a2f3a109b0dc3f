package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// actPeer answers act like the extension: tab 10 is uid-a's, tab 404 is gone, a
// click on the text "Send" is ambiguous among 40 elements.
func actPeer(sent *[]string, mu *sync.Mutex) func(cmd) reply {
	return extWorld(func(c cmd) reply {
		if c.Op != "act" {
			return reply{err: &wireError{Reason: "unknown_op"}}
		}
		mu.Lock()
		*sent = append(*sent, string(c.Args))
		mu.Unlock()
		var a actArgs
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return reply{err: &wireError{Reason: "invalid_args", Message: err.Error()}}
		}
		switch {
		case a.TabID == 404:
			return reply{err: &wireError{Reason: "not_found", Message: "tab 404 not found"}}
		case a.Owner != "uid-a" || a.TabID != 10:
			return reply{err: &wireError{Reason: "not_owned", Message: "tab is not recorded under that owner"}}
		case a.Step.Kind == "observe":
			return reply{result: actResult{Observation: &wireObservation{Document: "d1", Epoch: 2, URL: "https://contacts.example/", Title: "Contacts",
				ScrollY: 40, Elements: []wireElement{{ID: "e1", Role: "button", Name: "Send", X: 10, Y: 20, Width: 80, Height: 30}}}}}
		case a.Step.Kind == "click" && a.Step.Target != nil && a.Step.Target.Text == "Send":
			var cands []wireElement
			for i := range 40 {
				cands = append(cands, wireElement{ID: fmt.Sprintf("e%d", i+1), Role: "button", Name: "Send"})
			}
			return reply{err: &wireError{Reason: "ambiguous_target", Message: `40 visible elements read "Send"`, Candidates: cands, Document: "d1", Epoch: 3}}
		case a.Step.Kind == "click" && a.Step.Target != nil && a.Step.Target.Ref == "e9":
			return reply{err: &wireError{Reason: "stale_ref", Message: "the element e9 named is gone from the page"}}
		}
		return reply{result: map[string]any{}}
	})
}

func TestActRoundTrip(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	_, d, fe, _ := connected(t, actPeer(&sent, &mu))
	ctx := context.Background()
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(sent) == 0 {
			return ""
		}
		return sent[len(sent)-1]
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(sent) }

	// observe: the document is scoped to this connection.
	r, err := d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10", Step: browser.Step{Kind: browser.StepObserve, MaxElements: 50}})
	if err != nil {
		t.Fatal(err)
	}
	if got := last(); got != `{"key":"act-1","owner":"uid-a","tabId":10,"step":{"kind":"observe","maxElements":50}}` {
		t.Fatalf("observe args %s", got)
	}
	doc := fmt.Sprintf("x%d-d1", fe.epoch)
	o := r.Observation
	if o == nil || o.Document != doc || o.Epoch != 2 || o.ScrollY != 40 || o.URL != "https://contacts.example/" ||
		len(o.Elements) != 1 || o.Elements[0] != (browser.Element{ID: "e1", Role: "button", Name: "Send", X: 10, Y: 20, Width: 80, Height: 30}) {
		t.Fatalf("observation %+v", o)
	}

	// A ref of this connection's document goes out with the page's own document id.
	if _, err := d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: "e1", Document: o.Document}}}); err != nil {
		t.Fatal(err)
	}
	if got := last(); got != `{"key":"act-1","owner":"uid-a","tabId":10,"step":{"kind":"click","target":{"ref":"e1","document":"d1"}}}` {
		t.Fatalf("click args %s", got)
	}
	if _, err := d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Point: true, X: 12.5, Y: 30, Epoch: 2, Document: o.Document}}}); err != nil {
		t.Fatal(err)
	}
	if got := last(); got != `{"key":"act-1","owner":"uid-a","tabId":10,"step":{"kind":"click","target":{"document":"d1","point":true,"x":12.5,"y":30,"epoch":2}}}` {
		t.Fatalf("point args %s", got)
	}

	// A ref or point of an earlier connection never reaches the page.
	before := count()
	old := fmt.Sprintf("x%d-d1", fe.epoch-1)
	_, err = d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: "e1", Document: old}}})
	var ae *browser.ActError
	if !errors.As(err, &ae) || ae.Reason != twv1.ReasonStaleRef || !strings.Contains(ae.Message, "observe again") {
		t.Fatalf("ref of an earlier connection: %v", err)
	}
	_, err = d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Point: true, X: 1, Y: 1, Document: "d1"}}})
	if !errors.As(err, &ae) || ae.Reason != twv1.ReasonStaleCoordinates {
		t.Fatalf("point of another document: %v", err)
	}
	if count() != before {
		t.Fatal("a stale target was sent to the extension")
	}

	// The page's refusals are ActErrors, candidates bounded.
	_, err = d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Text: "Send"}}})
	if !errors.As(err, &ae) || ae.Reason != twv1.ReasonAmbiguousTarget || len(ae.Candidates) != maxCandidates || ae.Candidates[0].ID != "e1" {
		t.Fatalf("ambiguous: %v (%d candidates)", err, len(ae.Candidates))
	}
	if ae.Document != doc || ae.Epoch != 3 {
		t.Fatalf("the candidates' document %q epoch %d, want %q 3: refs of this connection's view", ae.Document, ae.Epoch, doc)
	}
	// A candidate is a usable ref.
	if _, err := d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: ae.Candidates[1].ID, Document: ae.Document}}}); err != nil {
		t.Fatal(err)
	}
	if got := last(); got != `{"key":"act-1","owner":"uid-a","tabId":10,"step":{"kind":"click","target":{"ref":"e2","document":"d1"}}}` {
		t.Fatalf("candidate ref args %s", got)
	}
	_, err = d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: "e9", Document: o.Document}}})
	if !errors.As(err, &ae) || ae.Reason != twv1.ReasonStaleRef {
		t.Fatalf("stale ref: %v", err)
	}

	// Ownership and gone tabs map to the seam's errors.
	if _, err := d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-b", Page: "10", Step: browser.Step{Kind: browser.StepObserve}}); !errors.Is(err, browser.ErrNotOwned) {
		t.Fatalf("act on another owner's tab: %v", err)
	}
	if _, err := d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "404", Step: browser.Step{Kind: browser.StepObserve}}); !errors.Is(err, browser.ErrNotFound) {
		t.Fatalf("act on a gone tab: %v", err)
	}
	if _, err := d.Act(ctx, browser.ActRequest{Key: "act-1", Owner: "uid-a", Page: "w-1", Step: browser.Step{Kind: browser.StepObserve}}); !errors.Is(err, browser.ErrNotFound) {
		t.Fatalf("act on a malformed tab id: %v", err)
	}

	// The shorthand, and the other kinds' fields.
	steps := []struct {
		req  browser.ActRequest
		want string
	}{
		{browser.ActRequest{ClickSelector: "#save"}, `{"kind":"click","target":{"selector":"#save"}}`},
		{browser.ActRequest{Step: browser.Step{Kind: browser.StepType, Text: "Ada", Target: browser.Target{Text: "Name"}}}, `{"kind":"type","target":{"text":"Name"},"text":"Ada"}`},
		{browser.ActRequest{Step: browser.Step{Kind: browser.StepType, Text: "Ada"}}, `{"kind":"type","text":"Ada"}`},
		{browser.ActRequest{Step: browser.Step{Kind: browser.StepPress, Key: "Enter"}}, `{"kind":"press","key":"Enter"}`},
		{browser.ActRequest{Step: browser.Step{Kind: browser.StepScroll, DeltaY: 600}}, `{"kind":"scroll","deltaY":600}`},
		{browser.ActRequest{Step: browser.Step{Kind: browser.StepNavigate, URL: "https://a.example/"}}, `{"kind":"navigate","url":"https://a.example/"}`},
		{browser.ActRequest{Step: browser.Step{Kind: browser.StepWait, Text: "Saved", Timeout: 1500 * time.Millisecond}}, `{"kind":"wait","text":"Saved","timeoutMs":1500}`},
	}
	for _, s := range steps {
		s.req.Key, s.req.Owner, s.req.Page = "act-2", "uid-a", "10"
		if _, err := d.Act(ctx, s.req); err != nil {
			t.Fatalf("%+v: %v", s.req, err)
		}
		if got, want := last(), `{"key":"act-2","owner":"uid-a","tabId":10,"step":`+s.want+`}`; got != want {
			t.Fatalf("args\n got %s\nwant %s", got, want)
		}
	}

	// Bad steps teach and are not sent.
	before = count()
	for _, st := range []browser.Step{
		{Kind: "evaluate"},
		{Kind: browser.StepClick},
		{Kind: browser.StepType},
		{Kind: browser.StepPress},
		{Kind: browser.StepScroll},
		{Kind: browser.StepWait},
		{Kind: browser.StepWait, Timeout: time.Hour},
		{Kind: browser.StepNavigate},
		{Kind: browser.StepObserve, MaxElements: 5000},
	} {
		if _, err := d.Act(ctx, browser.ActRequest{Key: "k", Owner: "uid-a", Page: "10", Step: st}); err == nil {
			t.Fatalf("step %+v was accepted", st)
		}
	}
	if _, err := d.Act(ctx, browser.ActRequest{Key: "k", Page: "10", Step: browser.Step{Kind: browser.StepObserve}}); err == nil {
		t.Fatal("act without an owner")
	}
	if count() != before {
		t.Fatal("a bad step was sent")
	}
}

func TestActWhileDisconnected(t *testing.T) {
	th := startHost(t, "", nil)
	if _, err := th.Driver().Act(context.Background(), browser.ActRequest{Key: "k", Owner: "uid-a", Page: "10",
		Step: browser.Step{Kind: browser.StepObserve}}); !errors.Is(err, browser.ErrNotConnected) {
		t.Fatalf("act without an extension: %v", err)
	}
}

// A tab the extension attributes to an act is reported with Attributed, and keeps
// it across updates that do not carry it; a tab with an opener never has one.
func TestAttributedTabs(t *testing.T) {
	_, d, fe, _ := connected(t, extWorld(nil))
	ctx := context.Background()
	fe.event(evTabCreated, map[string]any{"tab": wireTab{ID: 50, WindowID: 1, URL: "https://a.example/landing", Attributed: "act-1"}})
	if ev := nextEvent(t, d); ev.Type != browser.PageCreated || ev.Page.ID != "50" || ev.Page.Attributed != "act-1" {
		t.Fatalf("event %+v", ev)
	}
	fe.event(evTabUpdated, map[string]any{"tab": wireTab{ID: 50, WindowID: 1, URL: "https://a.example/landing", Title: "Landing"}})
	if ev := nextEvent(t, d); ev.Type != browser.PageUpdated || ev.Page.Attributed != "act-1" {
		t.Fatalf("update lost the attribution: %+v", ev)
	}
	fe.event(evTabCreated, map[string]any{"tab": wireTab{ID: 51, WindowID: 1, OpenerTabID: i64(10), URL: "https://a.example/x", Attributed: "act-1"}})
	if ev := nextEvent(t, d); ev.Page.Attributed != "" || ev.Page.OpenerID != "10" {
		t.Fatalf("a tab with an opener was attributed: %+v", ev)
	}
	snap, err := d.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := snap.Page("50"); !ok || p.Attributed != "act-1" {
		t.Fatalf("snapshot page %+v %v", p, ok)
	}
}

// TestObserveOutlineOverTheWire: an observe step carries its outlineOffset (in
// range only), and the answer's outline comes back bounded, in the driver's
// terms.
func TestObserveOutlineOverTheWire(t *testing.T) {
	ws, err := wireStepOf(browser.Step{Kind: browser.StepObserve, OutlineOffset: 412}, 1)
	if err != nil || ws.OutlineOffset != 412 {
		t.Fatalf("wire step %+v, %v; want outlineOffset 412", ws, err)
	}
	for _, off := range []int{-1, maxOutlineOffset + 1} {
		if _, err := wireStepOf(browser.Step{Kind: browser.StepObserve, OutlineOffset: off}, 1); err == nil {
			t.Errorf("outlineOffset %d: no error", off)
		}
	}
	o := &wireObservation{Document: "d1", OutlineOffset: 7, Outline: []wireOutlineNode{
		{Depth: 99, Role: strings.Repeat("r", 100), Name: "Archive", ID: "e4", Text: strings.Repeat("t", 10000), Level: 2, Checked: true},
	}}
	for range maxOutlineNodes {
		o.Outline = append(o.Outline, wireOutlineNode{Role: "text", Text: "x"})
	}
	got := o.seam(3)
	if got.Document != "x3-d1" || got.OutlineOffset != 7 || !got.OutlineMore || len(got.Outline) != maxOutlineNodes {
		t.Fatalf("seam: document %q, offset %d, more %v, %d nodes", got.Document, got.OutlineOffset, got.OutlineMore, len(got.Outline))
	}
	n := got.Outline[0]
	if n.Depth != 64 || len(n.Role) != 64 || len(n.Text) != 8192 || n.ID != "e4" || n.Name != "Archive" || n.Level != 2 || !n.Checked {
		t.Errorf("first node %+v", n)
	}
}

// TestActAsksTheURLPolicyForFrames: with ActRequest.FrameAllowed, the act
// carries the policy's answers for frame urls; an answer of frameCheck (urls
// the extension reached and the act did not answer for, nothing ran past the
// check) makes the driver ask FrameAllowed and act again with them answered;
// url_not_allowed is the page's refusal. Without FrameAllowed no policy goes.
func TestActAsksTheURLPolicyForFrames(t *testing.T) {
	var mu sync.Mutex
	var sent []actArgs
	peer := extWorld(func(c cmd) reply {
		var a actArgs
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return reply{err: &wireError{Reason: "invalid_args", Message: err.Error()}}
		}
		mu.Lock()
		sent = append(sent, a)
		mu.Unlock()
		if a.Frames == nil {
			return reply{result: map[string]any{}}
		}
		known := map[string]bool{}
		for _, u := range append(a.Frames.Allowed, a.Frames.Refused...) {
			known[u] = true
		}
		if !known["http://localhost:1/login"] || !known["http://10.0.0.1/admin"] {
			return reply{result: actResult{FrameCheck: []string{"http://localhost:1/login", "http://10.0.0.1/admin"}}}
		}
		for _, u := range a.Frames.Refused {
			if u == "http://10.0.0.1/admin" && a.Step.Target != nil && a.Step.Target.Ref == "x2.e1" {
				return reply{err: &wireError{Reason: "url_not_allowed", Message: "the element is in a frame of " + u}}
			}
		}
		return reply{result: map[string]any{}}
	})
	_, d, fe, _ := connected(t, peer)
	ctx := context.Background()
	policy := func(u string) error {
		if strings.Contains(u, "10.0.0.1") {
			return errors.New("private")
		}
		return nil
	}
	doc := fmt.Sprintf("x%d-d1", fe.epoch)
	if _, err := d.Act(ctx, browser.ActRequest{Key: "k", Owner: "uid-a", Page: "10", Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: "x1.e1", Document: doc}}, FrameAllowed: policy}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(sent) != 2 || sent[0].Frames == nil || len(sent[0].Frames.Allowed)+len(sent[0].Frames.Refused) != 0 ||
		strings.Join(sent[1].Frames.Allowed, ",") != "http://localhost:1/login" || strings.Join(sent[1].Frames.Refused, ",") != "http://10.0.0.1/admin" {
		t.Errorf("acts sent %+v: want one with no answers, then one with the policy's", sent)
	}
	sent = nil
	mu.Unlock()
	_, err := d.Act(ctx, browser.ActRequest{Key: "k", Owner: "uid-a", Page: "10", Step: browser.Step{Kind: browser.StepClick, Target: browser.Target{Ref: "x2.e1", Document: doc}}, FrameAllowed: policy})
	var ae *browser.ActError
	if !errors.As(err, &ae) || ae.Reason != twv1.ReasonURLNotAllowed {
		t.Errorf("a click in a refused frame: %v, want url_not_allowed", err)
	}
	mu.Lock()
	sent = nil
	mu.Unlock()
	if _, err := d.Act(ctx, browser.ActRequest{Key: "k", Owner: "uid-a", Page: "10", Step: browser.Step{Kind: browser.StepScroll, DeltaY: 100}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 || sent[0].Frames != nil {
		t.Errorf("without FrameAllowed the act carries a policy: %+v", sent)
	}
}
