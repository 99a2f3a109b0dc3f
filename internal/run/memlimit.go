package run

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryFiles hold a container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// SoftMemoryLimit sets the Go runtime's soft memory limit to 90% of the
// container's memory limit, unless GOMEMLIMIT says otherwise or no limit is
// set. Without it the heap grows to twice what is live before a collection
// (GOGC=100), so a role whose live heap is half its container's limit is
// killed for memory it does not need; with it the collector runs more often as
// the heap nears the limit instead. Returns the limit set, 0 when none.
func SoftMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := containerMemoryLimit(cgroupMemoryFiles)
	if limit <= 0 {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	return soft
}

// containerMemoryLimit reads the first of files that names a limit in bytes;
// "max" (cgroup v2) and absurdly large values (cgroup v1's unlimited) are none.
func containerMemoryLimit(files []string) int64 {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0
		}
		return n
	}
	return 0
}
