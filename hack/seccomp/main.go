// Command seccomp prints the seccomp profile of the pool's Chromium container:
// the runtime default profile, plus the system calls Chromium's sandbox makes
// to put its renderers in namespaces of their own.
//
// The default profile allows clone with namespace flags, unshare, setns and
// chroot only to a container holding CAP_SYS_ADMIN (or CAP_SYS_CHROOT), and the
// pool's container drops every capability. Chromium's namespace sandbox, run by
// an unprivileged user, clones its zygote and renderers into new user, PID and
// network namespaces (clone, unshare), and takes their filesystem away with
// chroot inside the new user namespace, where it holds that capability; its
// seccomp-bpf filters then confine each renderer far more tightly than this
// profile. Nothing else is added.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func main() {
	p := seccomp.DefaultProfile()
	p.Syscalls = append(p.Syscalls, &seccomp.Syscall{
		LinuxSyscall: specs.LinuxSyscall{Names: []string{"chroot", "clone", "setns", "unshare"}, Action: specs.ActAllow},
		Comment:      "tabwarden: Chromium's namespace sandbox, run without capabilities (see hack/seccomp)",
	})
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", "  ")
	if err := e.Encode(p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
