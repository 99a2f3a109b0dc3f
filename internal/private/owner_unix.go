//go:build unix

package private

import (
	"fmt"
	"os"
	"syscall"
)

// mine refuses what another user owns: they could change its mode back, or
// have planted it to be trusted.
func mine(path string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): remove it, or choose a directory of your own", path, st.Uid, uid)
	}
	return nil
}
