//go:build unix

package agent

import (
	"os"
	"syscall"
)

// uploadOpenFlags open an upload's file without blocking on a FIFO or device.
const uploadOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK
