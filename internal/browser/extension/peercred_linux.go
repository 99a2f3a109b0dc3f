//go:build linux

package extension

import (
	"fmt"
	"net"
	"syscall"
)

// checkPeerUID refuses a Unix-socket peer whose uid (SO_PEERCRED) is not uid.
func checkPeerUID(c net.Conn, uid int) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("peer uid %d is not the agent's uid %d", cred.Uid, uid)
	}
	return nil
}
