package chromium

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ListeningPorts returns the TCP ports that any process of process group pgid
// (a browser, its renderers, GPU and network services) listens on, read from
// /proc: the sockets each process holds, matched against the listening
// sockets of /proc/net/tcp and tcp6. It fails when no process is in the group,
// so that a wrong pid cannot pass for a browser with no port.
func ListeningPorts(pgid int) ([]int, error) {
	inodes := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	group := 0
	for _, dir := range procs {
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces; split after ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		group++
		fds, _ := filepath.Glob(filepath.Join(dir, "fd", "*"))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	if group == 0 {
		return nil, fmt.Errorf("no process in process group %d", pgid)
	}
	var ports []int
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			local := f[1]
			port, err := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", file, line, err)
			}
			ports = append(ports, int(port))
		}
	}
	return ports, nil
}
