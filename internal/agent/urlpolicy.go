package agent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/idna"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// The url policy (BrowserProfile spec.urlPolicy): which destinations a session
// may open or navigate to. It is checked when the agent opens a window's page
// and before a navigate step; names are resolved then. A name may resolve
// otherwise when the browser fetches it (DNS rebinding): the driver's
// interception of every request to the DevTools port (cdp/boundary.go) is the
// backstop for the control plane.

// lookupHost resolves a name; a variable so that tests can stand in a resolver.
var lookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// checkURL returns the url_not_allowed refusal for raw under the profile's
// policy, or nil. what names the field the url came from, for the message.
func (a *Agent) checkURL(ctx context.Context, raw, what string) *refusal {
	p := &twv1.BrowserProfile{}
	var pol twv1.URLPolicy
	if err := a.client.Get(ctx, client.ObjectKey{Name: a.opts.Profile}, p); err == nil && p.Spec.URLPolicy != nil {
		pol = *p.Spec.URLPolicy
	}
	host, err := browserHost(raw)
	if err != nil {
		return refuse(twv1.ReasonURLNotAllowed, "give an absolute url such as https://example.com/path",
			"%s %q is refused: %v, so its destination cannot be checked", what, raw, err)
	}
	if host == "" {
		return nil // not a network destination (about:blank); the scheme checks are the API's
	}
	if pol.AllowPrivateNetworks || slices.Contains(pol.AllowedHosts, host) {
		return nil
	}
	why := ""
	for _, ad := range resolveHost(ctx, host) {
		if private(ad) {
			why = fmt.Sprintf("%s is a private, loopback or link-local address", host)
			if ad.String() != host {
				why = fmt.Sprintf("%s is %s, a private, loopback or link-local address", host, ad)
			}
			break
		}
	}
	if why == "" {
		return nil
	}
	patch := fmt.Sprintf(`kubectl patch browserprofile %s --type=json -p '[{"op":"add","path":"/spec/urlPolicy","value":{"allowedHosts":[%q]}}]'`, a.opts.Profile, host)
	if pol.AllowedHosts != nil {
		patch = fmt.Sprintf(`kubectl patch browserprofile %s --type=json -p '[{"op":"add","path":"/spec/urlPolicy/allowedHosts/-","value":%q}]'`, a.opts.Profile, host)
	}
	return refuse(twv1.ReasonURLNotAllowed, patch,
		"%s %q is refused: %s, and profile %q does not allow it. Pages never reach the browser's control plane or the machine's own services; open a public url, or an admin allows this host with spec.urlPolicy.allowedHosts (or every private destination with spec.urlPolicy.allowPrivateNetworks)",
		what, raw, why, a.opts.Profile)
}

// browserHost is the host a browser loads raw from, lower case, without a
// trailing dot ("" for a url with none, such as about:blank), read as
// Chromium reads it (the WHATWG URL standard) where Go's parser differs: a
// browser drops tabs and newlines anywhere and C0 controls and spaces around
// the url, takes a backslash for a slash in an http(s) url and any number of
// slashes after its scheme for two, and maps a host
// to ASCII (UTS #46: full-width digits, an ideographic full stop). A url Go
// cannot parse is an error, never a pass: a browser loads many of them
// (http://169.254.169.254/#%zz), TestURLPolicyReadsURLsAsABrowserDoes.
func browserHost(raw string) (string, error) {
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	if scheme, rest, ok := strings.Cut(s, ":"); ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) {
		// Any run of slashes and backslashes (none too) after the scheme of
		// an http(s) url leads to its host: http:///127.0.0.1 is 127.0.0.1.
		s = scheme + "://" + strings.TrimLeft(strings.ReplaceAll(rest, `\`, "/"), "/")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("it does not parse as a url (%w)", err)
	}
	host := u.Hostname()
	if host == "" {
		return "", nil
	}
	if !strings.Contains(host, ":") { // not an IPv6 literal
		if host, err = hostIDNA.ToASCII(host); err != nil {
			return "", fmt.Errorf("its host is not a name a browser can look up (%w)", err)
		}
	}
	return strings.ToLower(strings.TrimSuffix(host, ".")), nil
}

// hostIDNA maps a host name as a browser does before it looks it up.
var hostIDNA = idna.New(idna.MapForLookup(), idna.StrictDomainName(false), idna.Transitional(false))

// resolveHost returns host's addresses: the address itself when host is one
// (in any form a browser accepts: 127.1, 0x7f000001, 2130706433, [::1]), else
// what it resolves to now. A name that does not resolve has none: the browser
// cannot reach it either, and should it resolve later to the control plane
// the driver's interception fails the request.
func resolveHost(ctx context.Context, host string) []netip.Addr {
	if ad, ok := parseIP(host); ok {
		return []netip.Addr{ad}
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// Browsers answer these themselves, whatever DNS says.
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := lookupHost(ctx, host)
	if err != nil {
		return nil
	}
	return addrs
}

// parseIP reads an address as a browser's url parser does: IPv6 in brackets
// or not, and IPv4 in the inet_aton forms (1 to 4 parts, decimal, octal with a
// leading 0, hex with 0x).
func parseIP(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ad, err := netip.ParseAddr(h); err == nil {
		return ad.Unmap(), true
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, 0, 32)
		if err != nil && strings.HasPrefix(p, "0") && len(p) > 1 && !strings.HasPrefix(strings.ToLower(p), "0x") {
			n, err = strconv.ParseUint(p[1:], 8, 32)
		}
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (24 - 8*i)
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// private reports whether ad is an address a page must not reach by default.
func private(ad netip.Addr) bool {
	ad = ad.Unmap()
	return ad.IsLoopback() || ad.IsPrivate() || ad.IsLinkLocalUnicast() || ad.IsLinkLocalMulticast() ||
		ad.IsUnspecified() || ad.IsInterfaceLocalMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(ad) || // carrier-grade NAT, cluster networks
		netip.MustParsePrefix("0.0.0.0/8").Contains(ad)
}
