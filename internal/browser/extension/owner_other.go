//go:build !unix

package extension

import "os"

func checkOwner(os.FileInfo) error { return nil }
