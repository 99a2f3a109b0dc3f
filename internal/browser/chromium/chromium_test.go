package chromium

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLaunchAndClose(t *testing.T) {
	if _, err := Find(); err != nil {
		t.Fatal(err) // never skip: install chromium or set TABWARDEN_CHROMIUM
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	p, err := Launch(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("launch → DevTools: %v (%s)", time.Since(start), p.WebSocketURL)
	if !strings.HasPrefix(p.WebSocketURL, "ws://127.0.0.1:") || !strings.Contains(p.WebSocketURL, "/devtools/browser/") {
		t.Errorf("ws url %q", p.WebSocketURL)
	}
	resp, err := http.Get(p.HTTPURL + "/json/version")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Browser string }
	_ = json.NewDecoder(resp.Body).Decode(&v)
	_ = resp.Body.Close() // the body is read; a close error changes nothing
	if !strings.Contains(v.Browser, "Chrom") {
		t.Errorf("/json/version browser %q", v.Browser)
	}
	dir := p.UserDataDir
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("process still running after Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary profile %s left behind: %v", dir, err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestFindOverride(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/chromium")
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "apt-get install -y chromium") {
		t.Errorf("Find with a bad override: %v", err)
	}
}

func TestVersion(t *testing.T) {
	v, err := Version(context.Background())
	if err != nil || !strings.Contains(v, "Chrom") {
		t.Errorf("Version: %q %v", v, err)
	}
}

// TestExecRefusesPortFlags: the pool's browser gets no DevTools port, however
// the flag is spelled (Chromium takes -flag as well as --flag).
func TestExecRefusesPortFlags(t *testing.T) {
	for _, arg := range []string{"--remote-debugging-port=9222", "-remote-debugging-port=9222", "---remote-debugging-address=0.0.0.0", "-remote-allow-origins=*"} {
		if p, err := Exec("/bin/true", []string{"--headless", arg}, nil); err == nil || !strings.Contains(err.Error(), "drop the flag") {
			if p != nil {
				_ = p.Close()
			}
			t.Errorf("Exec with %s: %v, want a refusal", arg, err)
		}
	}
}
