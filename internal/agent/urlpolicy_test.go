package agent

import (
	"context"
	"errors"
	"net/netip"
	"testing"
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
