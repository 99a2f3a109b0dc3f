package agent

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestResolveHostReadsAddressesAsABrowserDoes: every spelling a browser
// accepts for a loopback, private or link-local address is read as that
// address, and a name is judged by what it resolves to (a name that resolves
// to 127.0.0.1 is loopback); public addresses and names pass.
func TestResolveHostReadsAddressesAsABrowserDoes(t *testing.T) {
	old := lookupHost
	t.Cleanup(func() { lookupHost = old })
	lookupHost = func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebind.attacker.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}, nil
		case "public.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		case "metadata.internal":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return nil, errors.New("no such host")
	}
	refused := []string{"127.0.0.1", "127.1", "0x7f000001", "0x7f.1", "2130706433", "0177.0.0.1", "127.0.0.2",
		"[::1]", "::1", "[::ffff:127.0.0.1]", "0.0.0.0", "0", "10.1.2.3", "192.168.0.1", "172.16.0.1",
		"169.254.169.254", "[fe80::1]", "[fd00::1]", "100.64.0.1", "localhost", "app.localhost",
		"rebind.attacker.example", "metadata.internal"}
	for _, h := range refused {
		hit := false
		for _, ad := range resolveHost(context.Background(), h) {
			hit = hit || private(ad)
		}
		if !hit {
			t.Errorf("%s is not read as a private destination", h)
		}
	}
	for _, h := range []string{"93.184.216.34", "public.example", "does-not-resolve.example", "8.8.8.8", "[2606:4700::1111]"} {
		for _, ad := range resolveHost(context.Background(), h) {
			if private(ad) {
				t.Errorf("%s is read as private (%s)", h, ad)
			}
		}
	}
}

// TestURLPolicyReadsURLsAsABrowserDoes: a url Chromium loads from a private
// destination is refused, however it is spelt for Go's parser: an escape Go
// will not decode (in the fragment, the path or the host), a backslash (a
// path separator to a browser), tabs and newlines (a browser drops them), a
// host in full-width digits or with an ideographic full stop (a browser maps
// them to ASCII, UTS #46). Before, a url Go could not parse, or whose host no
// resolver knew, was let through: http://169.254.169.254/latest/meta-data/#%zz
// opened cloud metadata on a profile that refuses private destinations.
func TestURLPolicyReadsURLsAsABrowserDoes(t *testing.T) {
	old := lookupHost
	t.Cleanup(func() { lookupHost = old })
	lookupHost = func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "public.example" {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return nil, errors.New("no such host")
	}
	scheme := runtime.NewScheme()
	if err := twv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}}).Build()
	a := &Agent{opts: Options{Profile: "p"}, client: c, reader: c}
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/",     // the witness: refused before too
		"http://169.254.169.254/latest/meta-data/#%zz", // Go: invalid URL escape in the fragment
		"http://169.254.169.254/latest/%zz",
		"http://127.0.0.1:9222/json/close/ABC#%",
		"http://127%2E0%2E0%2E1:9222/json/close/ABC", // Go: invalid escape in a host
		`http://169.254.169.254\@public.example/`,    // Go: invalid userinfo; a browser: host 169.254.169.254
		`http://127.0.0.1:9222\json\close\ABC`,       // a browser: /json/close/ABC
		"http://169.254.169.254/latest/meta-data/\n", // Go: control character
		"http://169.254.\t169.254/",
		"http://１２７.０.０.１:9222/json/close/ABC",           // full-width digits
		"http://127。0。0。1:9222/json/close/ABC",           // ideographic full stops
		"http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1:9222/", // full-width digits, escaped
		"http:///127.0.0.1:9222/json/close/ABC",          // Go: no host; a browser: 127.0.0.1
		`http://\127.0.0.1:9222/json/close/ABC`,
		"http:127.0.0.1:9222/json/close/ABC",
		" http://127.0.0.1:9222/ ",
		"http://LOCALHOST:9222/",
		"http://localhost.:9222/",
	} {
		if rf := a.checkURL(context.Background(), u, "spec.url"); rf == nil {
			t.Errorf("%q is let through; a browser loads it from a private destination", u)
		}
	}
	for _, u := range []string{"https://public.example/a?b=c#d", "http://public.example/%E2%9C%93", "about:blank", "https://does-not-resolve.example/"} {
		if rf := a.checkURL(context.Background(), u, "spec.url"); rf != nil {
			t.Errorf("%q is refused: %+v", u, rf)
		}
	}
}
