package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/local/up"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) WriteString(str string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(str)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func sample(t *testing.T, repo, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "config", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eventually(t *testing.T, timeout time.Duration, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, detail := f()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v (last: %s)", what, timeout, strings.TrimSpace(last))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// shown counts the pages at path (and query) the browser shows, as up's
// fixture site sees them (fixture.Presence): up drives Chromium over a pipe,
// so nothing else can list its tabs. It returns the whole list too, for messages.
func shown(t *testing.T, fixtureURL, path string) (int, string) {
	t.Helper()
	var pages []fixture.OpenPage
	if err := json.Unmarshal([]byte(httpGet(t, fixtureURL+fixture.PresencePath)), &pages); err != nil {
		t.Fatalf("the fixture site's page list: %v", err)
	}
	n := 0
	for _, p := range pages {
		if p.Path == path {
			n++
		}
	}
	return n, fmt.Sprintf("%v", pages)
}

// groupListeningPorts are the TCP ports process group pgid listens on.
func groupListeningPorts(t *testing.T, pgid int) []int {
	t.Helper()
	ports, err := chromium.ListeningPorts(pgid)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

func parsePids(t *testing.T, s string) []up.Proc {
	t.Helper()
	var out []up.Proc
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			t.Fatalf("malformed pids line %q", line)
		}
		pid, err1 := strconv.Atoi(f[0])
		start, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("malformed pids line %q", line)
		}
		out = append(out, up.Proc{PID: pid, Start: start, Comm: f[2]})
	}
	return out
}

func hasComm(procs []up.Proc, comm string) bool {
	for _, p := range procs {
		if strings.HasPrefix(p.Comm, comm) {
			return true
		}
	}
	return false
}

// upDescendants is the test's own view of the processes below up.
func upDescendants(pid int) []up.Proc { return up.Descendants(pid) }

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []string {
	if s == "" {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return out
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return string(b)
}
