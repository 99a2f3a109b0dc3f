// Package private keeps a directory to the OS user that runs tabwarden: the
// state directories of `tabwarden up` and of the agents hold keys, kubeconfigs
// and ledgers that another local user must neither read nor write.
package private

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir makes dir private to the current user: it creates it (and its parents)
// when missing; it refuses a dir, or anything in it, that another user owns;
// and it forces dir to mode 0700 and takes every group and other permission
// from what is in it (files 0600, directories 0700 when they were 0644 and
// 0755). Symbolic links are not followed below dir. It reports what it
// tightened, as "path: old → new" lines, for a log.
func Dir(dir string) (tightened []string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: move it away, or choose another directory", dir)
	}
	if err := mine(dir, fi); err != nil {
		return nil, err
	}
	// The directory first: once it is 0700 no one else can reach what is in it,
	// whatever the modes below.
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("making %s private (0700): %w", dir, err)
		}
		tightened = append(tightened, fmt.Sprintf("%s: %v → %v", dir, fi.Mode().Perm(), fs.FileMode(0o700)))
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := mine(path, info); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // its mode is not its own; its target is not below dir
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(path, perm&^0o077); err != nil {
				return fmt.Errorf("making %s private: %w", path, err)
			}
			tightened = append(tightened, fmt.Sprintf("%s: %v → %v", path, perm, perm&^0o077))
		}
		return nil
	})
	return tightened, err
}

// Mine refuses path (whose info is fi) when another user owns it: they could
// change its mode back, or have planted it to be trusted.
func Mine(path string, fi os.FileInfo) error { return mine(path, fi) }
