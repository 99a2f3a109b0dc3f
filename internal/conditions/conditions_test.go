package conditions

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a long message here", 10, "a long ..."},
		{"ééééé", 6, "é..."}, // 2-byte runes: never cut one in half
		{"abc", 2, ""},
	} {
		got := Truncate(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q (at most %d bytes, valid UTF-8)", tc.in, tc.n, got, tc.want, tc.n)
		}
	}
	long := strings.Repeat("日本", 20000)
	if got := Truncate(long, MaxMessage); len(got) > MaxMessage || !utf8.ValidString(got) {
		t.Errorf("a long message is cut to %d bytes, valid=%v", len(got), utf8.ValidString(got))
	}
}
