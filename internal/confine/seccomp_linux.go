//go:build linux && (amd64 || arm64)

package confine

import (
	"golang.org/x/sys/unix"
)

// hasSeccomp says whether this architecture gets the seccomp filter.
const hasSeccomp = true

// denied are the syscalls a confined program may not make: what Landlock
// does not see. Each fails with EACCES.
var denied = append([]uint32{
	// every socket: UDP, raw, netlink, unix (the Docker Engine's socket,
	// an ssh agent's); socketpair stays
	unix.SYS_SOCKET,
	// io_uring can open sockets and files past the filter
	unix.SYS_IO_URING_SETUP,
	// metadata writes: modes, owners, times (touch of an existing file), xattrs
	unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_FCHOWN, unix.SYS_FCHOWNAT,
	unix.SYS_UTIMENSAT, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_REMOVEXATTRAT,
	// secrets held by the kernel, and opening a file by handle, not by path
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_OPEN_BY_HANDLE_AT,
	// the machine itself (for root): kernel code, modules, reboot, swap,
	// clocks, names, accounting, quotas
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE,
	unix.SYS_DELETE_MODULE, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_ACCT, unix.SYS_QUOTACTL,
}, archDenied...)

// deniedIoctls are the ioctl requests refused on every file descriptor:
// typing into a terminal the program inherited.
var deniedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg1 = 16 + 8*1 // low 32 bits on a little-endian machine: what tty ioctls read
)

// buildFilter returns the seccomp program: refuse the syscalls of another
// architecture with ENOSYS, denied and deniedIoctls with EACCES, allow the
// rest.
func buildFilter() []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// Jump targets are patched once the program is laid out.
	type jump struct {
		at     int
		target *int
		onTrue bool
	}
	var (
		prog                     []unix.SockFilter
		jumps                    []jump
		allow, deny, foreignArch int
	)
	emit := func(code uint16, k uint32) int {
		prog = append(prog, unix.SockFilter{Code: code, K: k})
		return len(prog) - 1
	}
	jumpIf := func(code uint16, k uint32, target *int) {
		jumps = append(jumps, jump{emit(code, k), target, true})
	}
	jumpUnless := func(code uint16, k uint32, target *int) {
		jumps = append(jumps, jump{emit(code, k), target, false})
	}

	emit(ld, offArch)
	jumpUnless(jeq, auditArch, &foreignArch)
	emit(ld, offNr)
	if x32Bit != 0 {
		jumpIf(jge, x32Bit, &deny)
	}
	for _, nr := range denied {
		jumpIf(jeq, nr, &deny)
	}
	jumpUnless(jeq, unix.SYS_IOCTL, &allow)
	emit(ld, offArg1)
	for _, req := range deniedIoctls {
		jumpIf(jeq, req, &deny)
	}
	allow = emit(ret, unix.SECCOMP_RET_ALLOW)
	deny = emit(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EACCES))
	foreignArch = emit(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	for _, j := range jumps {
		off := *j.target - j.at - 1
		if off < 0 || off > 255 {
			panic("confine: seccomp jump out of range") // a programming error: the lists are fixed
		}
		if j.onTrue {
			prog[j.at].Jt = uint8(off)
		} else {
			prog[j.at].Jf = uint8(off)
		}
	}
	return prog
}
