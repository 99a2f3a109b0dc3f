//go:build unix

package agent

import (
	"os"
	"syscall"
)

// uploadOpenFlags open an upload's file without blocking on a FIFO or device.
const uploadOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK

// linkedElsewhere reports whether the file has more than one hard link.
func linkedElsewhere(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Nlink > 1
}
