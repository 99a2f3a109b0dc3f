package chromium_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
)

// uiTargets opens a new window on c and reports, once the window has settled,
// the targets other than pages (and the browser) that exist then: UI that
// Chromium built for the window, each with a renderer of its own.
func uiTargets(ctx context.Context, t *testing.T, c *wire.Conn) []wire.TargetInfo {
	t.Helper()
	created, err := wire.Call(ctx, c, "", wire.CreateTarget{URL: "about:blank", NewWindow: true, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	// Chromium builds a window's UI pages as the window is made; give it a
	// moment beyond that to show any it builds late.
	time.Sleep(time.Second)
	r, err := wire.Call(ctx, c, "", wire.GetTargets{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.TargetInfos, func(ti wire.TargetInfo) bool { return ti.TargetID == created.TargetID }) {
		t.Fatalf("the new window's page %s is not among the targets %+v", created.TargetID, r.TargetInfos)
	}
	return slices.DeleteFunc(r.TargetInfos, func(ti wire.TargetInfo) bool { return ti.Type == "page" || ti.Type == "browser" })
}

// TestHeadlessWindowsBuildNoUI: a headless Chromium tabwarden launches builds
// no UI pages for its windows. Chromium 156 builds the omnibox's popup for
// every window as two WebUI pages (browser_ui targets at
// chrome://omnibox-popup.top-chrome/), each a renderer that a headless browser
// never shows, which made every new window and every close cost a third more
// CPU. The same browser launched without DefaultArgs' features flag shows
// what the check looks for, when this Chromium builds it.
func TestHeadlessWindowsBuildNoUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	bin, err := chromium.Find()
	if err != nil {
		t.Fatal(err)
	}
	// The witness: DefaultArgs without the features flag.
	args := slices.DeleteFunc(chromium.DefaultArgs(false), func(a string) bool {
		return strings.HasPrefix(a, "--disable-features=") || strings.HasPrefix(a, "--remote-debugging-port")
	})
	if len(args) != len(chromium.DefaultArgs(false))-2 {
		t.Fatalf("DefaultArgs(false) = %q: want one --disable-features flag to take out for the witness", chromium.DefaultArgs(false))
	}
	witness, err := chromium.Exec(bin, append(args, "--user-data-dir="+t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = witness.Close() }() // only the witness of the check
	wc, err := witness.Dial(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	if ui := uiTargets(ctx, t, wc); len(ui) > 0 {
		t.Logf("without the flag this Chromium builds %d UI page(s) per window, e.g. %s %s", len(ui), ui[0].Type, ui[0].URL)
	} else {
		t.Logf("this Chromium builds no UI pages for a window even without the flag: the check below cannot tell the flag's effect here")
	}

	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"default flags", nil},
		// Chromium takes only the last of several --disable-features: an
		// operator's own list must add to tabwarden's, not replace it.
		{"an operator's own --disable-features", []string{"--disable-features=PaintHolding"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := chromium.Launch(ctx, chromium.Options{ExtraArgs: tc.extra})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Close() }()
			c, err := wire.Dial(ctx, p.WebSocketURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if ui := uiTargets(ctx, t, c); len(ui) > 0 {
				t.Errorf("a headless window of a Chromium tabwarden launched with extra flags %q has %d UI page(s) besides its own, each a renderer nobody sees: %+v", tc.extra, len(ui), ui)
			}
		})
	}
}

// TestMergeFeatureLists: repeated feature flags become one, each name once,
// where the first stood; other flags keep their order.
func TestMergeFeatureLists(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"--headless", "--no-sandbox"}, []string{"--headless", "--no-sandbox"}},
		{
			[]string{"--disable-features=A,B", "--headless", "--disable-features=B,C", "-disable-features=D"},
			[]string{"--disable-features=A,B,C,D", "--headless"},
		},
		{
			[]string{"--enable-features=X", "--disable-features=A", "--enable-features=Y, X", "--disable-features="},
			[]string{"--enable-features=X,Y", "--disable-features=A"},
		},
		// A bare switch is an empty list to Chromium: merged, it takes nothing away.
		{[]string{"--disable-features=A", "--disable-features-foo=1", "--disable-features"}, []string{"--disable-features=A", "--disable-features-foo=1"}},
		// Chromium strips one - or --: ---disable-features is another switch.
		{[]string{"--disable-features=A", "---disable-features=B"}, []string{"--disable-features=A", "---disable-features=B"}},
		// Nothing after a lone -- is a switch.
		{[]string{"--disable-features=A", "--", "--disable-features=B"}, []string{"--disable-features=A", "--", "--disable-features=B"}},
	} {
		if got := chromium.MergeFeatureLists(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("MergeFeatureLists(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
