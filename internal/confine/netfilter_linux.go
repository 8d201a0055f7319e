//go:build linux

package confine

import (
	"fmt"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// The seccomp program of a program in a NetNS: the one of a Policy with
// Network, behind a check of socket(2)'s family. Only AF_INET and AF_INET6
// sockets may be made: they see nothing but the namespace's loopback. A
// unix socket would reach the host's services by their paths, which no
// network namespace scopes (a Docker Engine's socket starts a container
// with any network; systemd-resolved's answers any name), a netlink socket
// would let root move an interface to another namespace, and a vsock
// reaches the hypervisor: each fails with EACCES. socketpair stays.

const offArg0 = 16 // struct seccomp_data's args[0], low 32 bits on a little-endian machine

// limitedFilters are the programs for a Policy's Writable, built once each.
var limitedFilters = [2]func() []unix.SockFilter{
	sync.OnceValue(func() []unix.SockFilter { return buildLimited(false) }),
	sync.OnceValue(func() []unix.SockFilter { return buildLimited(true) }),
}

func buildLimited(writable bool) []unix.SockFilter {
	rest := filterOf(true, writable)
	if len(rest) == 0 {
		return nil // no seccomp on this architecture
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	var a asm
	toRest, deny := a.label(), a.label()
	a.op(ld, offArch)
	a.jump(jeq, auditArch, next, toRest) // another architecture: the program below refuses it
	a.op(ld, offNr)
	a.jump(jeq, unix.SYS_SOCKET, next, toRest)
	a.op(ld, offArg0)
	a.jump(jeq, unix.AF_INET, toRest, next)
	a.jump(jeq, unix.AF_INET6, toRest, deny)
	a.place(deny)
	a.op(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EACCES))
	a.place(toRest) // the first instruction of rest, appended below
	return append(a.link(), rest...)
}

var limitedFiles struct {
	mu    sync.Mutex
	files [2]*os.File
}

// limitedFilter returns the sealed memfd of the program for writable.
func limitedFilter(writable bool) (*os.File, error) {
	limitedFiles.mu.Lock()
	defer limitedFiles.mu.Unlock()
	v := 0
	if writable {
		v = 1
	}
	if limitedFiles.files[v] == nil {
		f, err := programMemfd("ccrun-seccomp-net", limitedFilters[v]())
		if err != nil {
			return nil, err
		}
		limitedFiles.files[v] = f
	}
	return limitedFiles.files[v], nil
}

// startLimited is Start for a program in a NetNS: with the filter above,
// and the capabilities dropped (ns: see startHelper).
func (rs *Ruleset) startLimited(cmd *exec.Cmd, ns *nsFiles) error {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	if rs.closed {
		return fmt.Errorf("confine: start %s: %w", cmd.Path, ErrClosed)
	}
	rs.used.Store(true)
	if !rs.network {
		return startHelper(cmd, rs, nil, ns) // no socket at all already
	}
	var filter *os.File
	if rs.withSeccomp {
		var err error
		if filter, err = limitedFilter(rs.writable); err != nil {
			return err
		}
	}
	return startHelper(cmd, rs, filter, ns)
}
