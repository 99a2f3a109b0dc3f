package up

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Proc identifies one process: its pid and its start time in clock ticks since
// boot (field 22 of /proc/<pid>/stat), so that a recycled pid is not mistaken for it.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Comm  string `json:"comm"`
}

// String is "pid start comm", the line format of the pids file.
func (p Proc) String() string { return fmt.Sprintf("%d %d %s", p.PID, p.Start, p.Comm) }

// procStat reads the parent pid, start time, state and comm of pid from /proc.
func procStat(pid int) (ppid int, start uint64, state byte, comm string, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, 0, "", err
	}
	s := string(b)
	// comm is in parentheses and may itself contain spaces or parentheses.
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return 0, 0, 0, "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	comm = s[open+1 : closing]
	f := strings.Fields(s[closing+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22 (starttime).
	if len(f) < 20 {
		return 0, 0, 0, "", fmt.Errorf("short /proc/%d/stat", pid)
	}
	ppid, _ = strconv.Atoi(f[1])
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return ppid, start, f[0][0], comm, nil
}

// Descendants lists every live process below pid (children, grandchildren, …),
// from /proc. Linux only; elsewhere it returns nothing.
func Descendants(pid int) []Proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]Proc{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, start, state, comm, err := procStat(n)
		if err != nil || state == 'Z' {
			continue
		}
		children[ppid] = append(children[ppid], Proc{PID: n, Start: start, Comm: comm})
	}
	var out []Proc
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.PID)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Alive reports whether the process still runs: same pid, same start time, not a zombie.
func Alive(p Proc) bool {
	_, start, state, _, err := procStat(p.PID)
	return err == nil && start == p.Start && state != 'Z'
}
