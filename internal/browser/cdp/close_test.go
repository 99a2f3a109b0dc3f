package cdp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// hostilePages are pages that resist closing, as the page itself (or a
// crashed renderer) makes them: an unsent draft (a beforeunload handler armed
// after the user typed), a page stuck in alert(), a crashed tab.
var hostilePages = map[string]string{
	"beforeunload": `document.body.textContent = 'unsent draft';
		window.addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'unsent'; return 'unsent'; }); true`,
	"alert":   `setTimeout(() => alert('stuck'), 0); true`,
	"confirm": `setTimeout(() => confirm('leave?'), 0); true`,
	"crash":   ``,
}

// makeHostile turns page id into one of hostilePages, through a DevTools
// session of its own (the page's doing, not the driver's).
func makeHostile(t *testing.T, b *Browser, id, kind string) {
	t.Helper()
	ctx := tctx(t)
	c, err := b.current()
	if err != nil {
		t.Fatal(err)
	}
	sess, detach, err := attach(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	defer detach()
	if kind == "crash" {
		go func() { _, _ = wire.Call(context.Background(), c, sess, wire.PageCrash{}) }() // the reply never comes: the renderer is gone
		time.Sleep(500 * time.Millisecond)
		return
	}
	// An open page need not have parsed its body yet: retry until the script
	// runs clean (it throws before that without side effects).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, err := call(ctx, c, sess, wire.Evaluate{Expression: hostilePages[kind], ReturnByValue: true, UserGesture: true})
		if err == nil && r.ExceptionDetails == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("arming %s: %v %+v", kind, err, r.ExceptionDetails)
		}
	}
	time.Sleep(300 * time.Millisecond)
}

// TestCloseNeverHangsOnAPage: the driver closes a page with an unsent draft
// (beforeunload), a page stuck in alert() or confirm(), and a crashed tab,
// each in a tab of a user's window and in a window of its own, within a few
// seconds; Chromium lists none of them afterwards and no dialog is left open.
func TestCloseNeverHangsOnAPage(t *testing.T) {
	b, r := newDriver(t, Options{})
	for kind := range hostilePages {
		for _, own := range []bool{true, false} {
			name := kind + "/tab"
			if own {
				name = kind + "/window"
			}
			t.Run(name, func(t *testing.T) {
				key := "hostile-" + name
				var p browser.Page
				if own {
					p = openWindow(t, b, r, key, "/quiet", fixture.TitleQuiet)
				} else {
					uw := openWindow(t, b, r, key+"-user", "/quiet", fixture.TitleQuiet)
					var err error
					p, err = b.Open(tctx(t), browser.OpenRequest{Key: key, URL: site.Path("/quiet"), WindowID: uw.WindowID})
					if err != nil {
						t.Fatal(err)
					}
					waitTitle(t, b, p.ID, fixture.TitleQuiet)
				}
				makeHostile(t, b, p.ID, kind)
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				start := time.Now()
				err := b.Close(ctx, browser.CloseRequest{Key: key, ID: p.ID, OwnsWindow: own})
				took := time.Since(start)
				t.Logf("%s: close -> page gone in %s (err %v)", name, took, err)
				if err != nil {
					t.Fatalf("close: %v", err)
				}
				if _, ok := chromiumPages(t)[p.ID]; ok {
					t.Fatalf("Chromium still lists the %s page after its close", kind)
				}
				if took > 5*time.Second {
					t.Errorf("close took %s", took)
				}
			})
		}
	}
}

// TestAwaitDestroyed: a close ends at the page's targetDestroyed whether or
// not Chromium has answered the closeTarget (it answers late when many windows
// close at once); an error reply ends it unless it says the page is gone (or
// the page went meanwhile), and so do the connection's end, the caller's
// context and a retry tick once the close was answered; a close not answered
// yet is never sent again.
func TestAwaitDestroyed(t *testing.T) {
	closed := func() chan struct{} { c := make(chan struct{}); close(c); return c }
	reply := func(err error) chan error { r := make(chan error, 1); r <- err; return r }
	tick := func() <-chan time.Time { c := make(chan time.Time, 1); c <- time.Now(); return c }
	refused := &wire.Error{Code: -32000, Message: "refused"}
	gone := &wire.Error{Code: -32602, Message: "No target with given id found"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	shortly, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		done     <-chan struct{}
		connGone <-chan struct{}
		replied  <-chan error
		retry    <-chan time.Time
		want     func(error) bool
	}{
		{name: "destroyed, no reply yet", done: closed(), replied: make(chan error), want: func(err error) bool { return err == nil }},
		{name: "answered, then destroyed", done: closed(), replied: reply(nil), want: func(err error) bool { return err == nil }},
		{name: "answered that the page is gone, then destroyed", done: closed(), replied: reply(gone), want: func(err error) bool { return err == nil }},
		{name: "an error reply", replied: reply(refused), want: func(err error) bool { return errors.Is(err, refused) }},
		{name: "the connection ends", connGone: closed(), replied: make(chan error), want: func(err error) bool { return errors.Is(err, browser.ErrNotConnected) }},
		{name: "the caller gives up", ctx: cancelled, replied: make(chan error), want: func(err error) bool { return errors.Is(err, context.Canceled) }},
		{name: "answered, still there at the retry tick", replied: reply(nil), retry: tick(), want: func(err error) bool { return errors.Is(err, errCloseAgain) }},
		{name: "not answered at the retry tick: not sent again", ctx: shortly, replied: make(chan error), retry: tick(), want: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{name: "an error reply for a page gone meanwhile", done: closed(), replied: reply(refused), want: func(err error) bool { return err == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			err := awaitDestroyed(ctx, "P1", tc.done, tc.connGone, tc.replied, tc.retry)
			if !tc.want(err) {
				t.Fatalf("awaitDestroyed = %v", err)
			}
		})
	}
}
