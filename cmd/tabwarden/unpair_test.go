package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/browser/extension"
)

// TestUnpair: `tabwarden unpair` makes the running agent forget its pairing.
func TestUnpair(t *testing.T) {
	base, err := os.MkdirTemp("", "twu") // short: Unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(base) }() // best-effort cleanup
	dir := base + "/state"
	h, err := extension.New(extension.Options{Addr: "127.0.0.1:0", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }() // best-effort cleanup
	code, _ := h.NewPairingCode()
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.Addr()+"/v1/pair", strings.NewReader(`{"code":"`+code+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", h.ExtensionOrigin())
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pairing: %v %v", resp, err)
	}
	_ = resp.Body.Close() // the body is read; a close error changes nothing

	var out, errOut bytes.Buffer
	if code := dispatch([]string{"unpair", "--state-dir", dir}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "forgot its pairing") {
		t.Fatalf("tabwarden unpair: exit %d, %q %q", code, out.String(), errOut.String())
	}
	if h.Paired() {
		t.Fatal("the agent is still paired")
	}
	out.Reset()
	if code := dispatch([]string{"unpair", "--state-dir", dir}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "no pairing") {
		t.Fatalf("second unpair: exit %d, %q", code, out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := dispatch([]string{"unpair", "--state-dir", t.TempDir()}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "no tabwarden agent is running") {
		t.Fatalf("unpair without an agent: exit %d, %q", code, errOut.String())
	}
}
