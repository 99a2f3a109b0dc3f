package up

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// serveSites serves the fixture site and the roles' metrics on their loopback
// addresses (unless Off); shutDown closes them.
func (r *runner) serveSites(context.Context) error {
	for _, srv := range []struct {
		what, addr string
		handler    http.Handler
		url        *string
	}{
		{"the fixture site", r.o.FixtureAddr, fixture.Tracked(fixture.Handler()), &r.info.FixtureURL},
		{"the metrics endpoint", r.o.MetricsAddr, metricsHandler(), &r.info.MetricsURL},
	} {
		if srv.addr == Off {
			continue
		}
		u, closeSrv, err := serveLoopback(srv.addr, srv.handler)
		if err != nil && srv.addr == DefaultFixtureAddr {
			return fmt.Errorf("serving %s on %s: %w\n(another tabwarden up may be running: stop it, or pass --fixture-addr 127.0.0.1:0 and use the printed address instead of the samples' %s)", srv.what, srv.addr, err, srv.addr)
		}
		if err != nil {
			return fmt.Errorf("serving %s on %s: %w", srv.what, srv.addr, err)
		}
		r.closers = append(r.closers, closeSrv)
		*srv.url = u
	}
	if r.info.MetricsURL != "" {
		r.info.MetricsURL += "/metrics"
	}
	return nil
}

// serveLoopback serves h on addr, which must be a loopback address, and returns
// its base URL and a function that stops it.
func serveLoopback(addr string, h http.Handler) (string, func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", nil, fmt.Errorf("%s is not a loopback address: up serves only this machine (e.g. 127.0.0.1:0)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// metricsHandler serves controller-runtime's registry, where every role of this
// process registers its metrics.
func metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	return mux
}
