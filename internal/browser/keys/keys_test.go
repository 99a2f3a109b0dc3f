package keys

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// table is testdata/keys.json, which extension/test/keys.test.mjs reads too.
type table struct {
	Cases []struct {
		Spec  string `json:"spec"`
		Mac   bool   `json:"mac"`
		Want  Chord  `json:"want"`
		Focus bool   `json:"focus"`
	} `json:"cases"`
	Errors []struct {
		Spec string `json:"spec"`
		Says string `json:"says"`
	} `json:"errors"`
}

func load(t *testing.T) table {
	t.Helper()
	raw, err := os.ReadFile("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	var tb table
	if err := json.Unmarshal(raw, &tb); err != nil {
		t.Fatal(err)
	}
	if len(tb.Cases) < 20 || len(tb.Errors) < 3 {
		t.Fatalf("testdata/keys.json has %d cases and %d errors: too few to mean anything", len(tb.Cases), len(tb.Errors))
	}
	return tb
}

// TestParse: every driver presses what the shared table says.
func TestParse(t *testing.T) {
	for _, tc := range load(t).Cases {
		got, err := Parse(tc.Spec, tc.Mac)
		if err != nil || got != tc.Want {
			t.Errorf("Parse(%q, mac=%v) = %+v, %v; want %+v", tc.Spec, tc.Mac, got, err, tc.Want)
		}
	}
	for _, tc := range load(t).Errors {
		_, err := Parse(tc.Spec, false)
		if err == nil || !strings.Contains(err.Error(), tc.Says) || !strings.Contains(err.Error(), "Shift+Tab") {
			t.Errorf("Parse(%q): %v; want an error saying %q and showing the corrected call", tc.Spec, err, tc.Says)
		}
	}
}

// TestFocusShortcut: the focus guard refuses a shortcut however it is
// spelled: Mod+t exactly like Control+t, on every platform.
func TestFocusShortcut(t *testing.T) {
	for _, tc := range load(t).Cases {
		if got := FocusShortcut(tc.Spec); got != tc.Focus {
			t.Errorf("FocusShortcut(%q) = %v, want %v", tc.Spec, got, tc.Focus)
		}
	}
	for _, tc := range load(t).Errors {
		if FocusShortcut(tc.Spec) {
			t.Errorf("FocusShortcut(%q) = true for a key no driver presses", tc.Spec)
		}
	}
}
