//go:build unix

package extension

import (
	"fmt"
	"os"
	"syscall"
)

// checkOwner refuses a state directory owned by another user.
func checkOwner(fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("owned by uid %d, not by the agent's uid %d", st.Uid, os.Getuid())
	}
	return nil
}
