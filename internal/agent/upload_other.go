//go:build !unix

package agent

import "os"

// uploadOpenFlags open an upload's file (no FIFOs to block on here).
const uploadOpenFlags = os.O_RDONLY

// linkedElsewhere: hard links are not looked at here.
func linkedElsewhere(os.FileInfo) bool { return false }
