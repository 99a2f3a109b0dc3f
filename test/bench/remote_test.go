package main

import (
	"testing"
	"time"
)

func TestParsePaths(t *testing.T) {
	got, err := parsePaths("0, 10,50,10+10")
	if err != nil {
		t.Fatal(err)
	}
	want := []remotePhase{{"c0", 0, 0}, {"c10", 10 * time.Millisecond, 0}, {"c50", 50 * time.Millisecond, 0}, {"c10a10", 10 * time.Millisecond, 10 * time.Millisecond}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("path %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := got[3].String(); s != "CDP 10 ms RTT, API 10 ms RTT" {
		t.Fatalf("String() = %q", s)
	}
	for _, bad := range []string{"", "x", "-1", "10+", "10+x"} {
		if _, err := parsePaths(bad); err == nil {
			t.Errorf("parsePaths(%q): no error", bad)
		}
	}
}
