//go:build !unix

package agent

import "os"

// uploadOpenFlags open an upload's file (no FIFOs to block on here).
const uploadOpenFlags = os.O_RDONLY
