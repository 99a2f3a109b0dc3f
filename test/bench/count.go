package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// counter counts a role's API requests by verb and resource, client-side.
type counter struct {
	mu sync.Mutex
	m  map[string]int64 // "VERB resource[/sub]"
	// trace, when set, sees every request with its start and end.
	trace func(key, name string, start, end time.Time)
}

func newCounter() *counter { return &counter{m: map[string]int64{}} }

type countingRT struct {
	c  *counter
	rt http.RoundTripper
}

func (t countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	k := classify(req)
	t.c.add(k)
	if os.Getenv("TABWARDEN_BENCH_DUMP_WRITES") != "" && isWrite(k) && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			body, _ := io.ReadAll(b)
			fmt.Fprintf(os.Stderr, "write %s %s %s %s\n", time.Now().Format("15:04:05.000"), k, req.URL.Path, body)
		}
	}
	if t.c.trace == nil {
		return t.rt.RoundTrip(req)
	}
	start := time.Now()
	resp, err := t.rt.RoundTrip(req)
	name := path.Base(req.URL.Path)
	if name == "status" || name == "finalizers" {
		name = path.Base(path.Dir(req.URL.Path))
	}
	t.c.trace(k, name, start, time.Now())
	return resp, err
}

func (c *counter) add(k string) {
	c.mu.Lock()
	c.m[k]++
	c.mu.Unlock()
}

// config returns a copy of cfg whose requests c counts.
func (c *counter) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return countingRT{c: c, rt: rt}
	}
	return cfg
}

func (c *counter) snapshot() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.m)
}

// counts is a snapshot (or a difference of two).
type counts map[string]int64

func (a counts) minus(b counts) counts {
	out := counts{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (a counts) plus(b counts) counts {
	out := maps.Clone(a)
	if out == nil {
		out = counts{}
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

func isWrite(k string) bool {
	v, _, _ := strings.Cut(k, " ")
	switch v {
	case "CREATE", "UPDATE", "PATCH", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

func (a counts) writes() (n int64) {
	for k, v := range a {
		if isWrite(k) {
			n += v
		}
	}
	return
}

func (a counts) total() (n int64) {
	for _, v := range a {
		n += v
	}
	return
}

// breakdown lists the writes (or all requests) as "PATCH browserwindows/status 2.0".
func (a counts) breakdown(per float64, writesOnly bool) string {
	var keys []string
	for k := range a {
		if !writesOnly || isWrite(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" "+trimFloat(float64(a[k])/per))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func trimFloat(v float64) string {
	s := strings.TrimRight(strings.TrimRight(strconvF(v), "0"), ".")
	if s == "" {
		return "0"
	}
	return s
}

// classify names a request "VERB resource[/subresource]".
func classify(req *http.Request) string {
	path := strings.Trim(req.URL.Path, "/")
	parts := strings.Split(path, "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return req.Method + " discovery"
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	resource := rest[0]
	named := len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	verb := req.Method
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "WATCH"
		case named:
			verb = "GET"
		default:
			verb = "LIST"
		}
	case http.MethodPost:
		verb = "CREATE"
	case http.MethodPut:
		verb = "UPDATE"
	case http.MethodDelete:
		verb = "DELETE"
		if !named {
			verb = "DELETECOLLECTION"
		}
	}
	return verb + " " + resource
}
