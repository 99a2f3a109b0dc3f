package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	privatepkg "github.com/tabwarden/tabwarden/internal/private"
)

// Options configures Run.
type Options struct {
	// Socket is the unix socket to serve the pipe on. Its directory is created
	// 0700 when missing; one that another user owns, or that the group or
	// others may write, is refused.
	Socket string
	// Binary and Args are the Chromium to run, exactly (Run adds
	// --remote-debugging-pipe; a DevTools port flag is refused).
	Binary string
	Args   []string
	// Stderr receives Chromium's output (default: discarded).
	Stderr io.Writer
	Logger logr.Logger
}

// Run serves Chromium's pipe on the socket until ctx ends (it closes Chromium
// and returns nil) or Chromium exits (it returns an error: the container
// restarts with a fresh browser).
func Run(ctx context.Context, o Options) error {
	if o.Socket == "" || !filepath.IsAbs(o.Socket) {
		return fmt.Errorf("--socket %q: want an absolute path", o.Socket)
	}
	if o.Binary == "" {
		return errors.New("no Chromium to run: pass it after --, e.g. -- /usr/lib/chromium/chromium --headless")
	}
	l, err := Listen(o.Socket)
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }() // removes the socket
	p, err := chromium.Exec(o.Binary, o.Args, o.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }() // the browser ends with the bridge
	r, w, err := p.Pipe()
	if err != nil {
		return err
	}
	b := New(r, w, o.Logger)
	browserDone := make(chan error, 1)
	go func() { browserDone <- b.Run() }()
	go func() { _ = b.Serve(l) }() // ends when l closes
	o.Logger.Info("Serving Chromium's DevTools pipe (no DevTools port)", "socket", o.Socket, "pid", p.Pid(), "binary", o.Binary)
	select {
	case <-ctx.Done():
		o.Logger.Info("Stopping: closing Chromium")
		_ = l.Close() // no new client while the browser closes
		return nil
	case err := <-browserDone:
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second): // a browser that closed its pipe but lives: Close ends it
		}
		return fmt.Errorf("chromium exited (%v): %w", p.Err(), err)
	}
}

// Listen prepares the socket's directory (created 0700 when missing; refused
// when another user owns it or the group or others may write it), removes a
// stale socket of ours, and listens on path with mode 0600.
func Listen(path string) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("socket directory %s is not a directory", dir)
	}
	if err := private(dir, fi); err != nil {
		return nil, fmt.Errorf("socket directory %s: %w (use a directory of the bridge's own user, mode 0700: a subdirectory of a shared volume, which the bridge creates)", dir, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket: remove it", path)
		}
		if err := private(path, fi); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		// A socket of ours that nobody serves: an earlier bridge's.
		if c, err := net.Dial("unix", path); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s is served by another process: one bridge per socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// Created 0600 (no moment with a wider mode), in a directory (0700) that
	// already keeps everyone else out.
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// private refuses what another user owns or what the group or others may
// use at all (read, write or enter).
func private(path string, fi os.FileInfo) error {
	if err := privatepkg.Mine(path, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mode %04o: the group or others may use it (want 0700 for the directory, 0600 for the socket)", perm)
	}
	return nil
}
