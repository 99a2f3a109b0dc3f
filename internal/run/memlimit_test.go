package run

import (
	"os"
	"path/filepath"
	"testing"
)

// TestContainerMemoryLimit: a container's limit is read from cgroup v2 or v1;
// "max" and v1's unlimited value mean no limit.
func TestContainerMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name  string
		files []string
		want  int64
	}{
		{"v2 limit", []string{write("v2", "268435456\n")}, 268435456},
		{"v2 unlimited", []string{write("v2max", "max\n"), write("v1a", "1000\n")}, 0},
		{"v1 limit", []string{missing, write("v1", "536870912\n")}, 536870912},
		{"v1 unlimited", []string{missing, write("v1max", "9223372036854771712\n")}, 0},
		{"no cgroup files", []string{missing}, 0},
	} {
		if got := containerMemoryLimit(tc.files); got != tc.want {
			t.Errorf("%s: containerMemoryLimit = %d, want %d", tc.name, got, tc.want)
		}
	}
}
