package mcpserver

import (
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// TestParseAbandonAfter: start_session's abandon_after defaults to 15m, takes
// "never", and a wrong value is an Invalid error whose hint is the corrected call.
func TestParseAbandonAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{"": DefaultAbandonAfter, "never": 0, "0": 0, "90s": 90 * time.Second, " 1h ": time.Hour} {
		got, err := parseAbandonAfter(in)
		if err != nil || got != want {
			t.Errorf("parseAbandonAfter(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"soon", "-5m", "15"} {
		_, err := parseAbandonAfter(in)
		e, ok := ops.AsError(err)
		if !ok || e.Kind != ops.Invalid || e.Hint == "" {
			t.Errorf("parseAbandonAfter(%q) = %v; want an Invalid error with a hint", in, err)
		}
	}
}
