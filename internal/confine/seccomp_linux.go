//go:build linux && (amd64 || arm64)

package confine

import (
	"slices"

	"golang.org/x/sys/unix"
)

// hasSeccomp says whether this architecture gets the seccomp filter.
const hasSeccomp = true

// The syscalls a confined program may not make: what Landlock does not
// see. Each fails with EACCES. Every program is refused denied; one whose
// Policy has no Network also deniedNet, and one with nothing Writable
// deniedMeta.
var (
	// every socket: UDP, raw, netlink, unix (the Docker Engine's socket,
	// an ssh agent's); socketpair stays
	deniedNet = []uint32{unix.SYS_SOCKET}
	// metadata writes: modes, owners, times (touch of an existing file),
	// xattrs; where a program may write (Writable), Landlock decides where
	// it may and the mount namespace keeps the protected paths read-only
	deniedMeta = []uint32{unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_FCHOWN, unix.SYS_FCHOWNAT,
		unix.SYS_UTIMENSAT, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
		unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_SETXATTRAT,
		unix.SYS_REMOVEXATTRAT}
)

var denied = append([]uint32{
	// io_uring can open sockets and files past the filter
	unix.SYS_IO_URING_SETUP,
	// the mount namespace's binds keep the protected paths read-only:
	// nothing may change what is mounted (Landlock refuses it too)
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	// another process's memory and file descriptors: a confined program
	// reads or patches no process, whatever Landlock's scoping allows
	// within its domain
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_PROCESS_MADVISE, unix.SYS_KCMP,
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
// rest. The syscall number is found by a balanced search over the sorted
// list (about 7 comparisons rather than one per entry): the kernel runs
// the program for every syscall number when the filter is installed, to
// cache what it always allows, so its length is paid on every confined
// start.
func buildFilter(network, writable bool) []unix.SockFilter {
	list := slices.Clone(denied)
	if !network {
		list = append(list, deniedNet...)
	}
	if !writable {
		list = append(list, deniedMeta...)
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ja  = unix.BPF_JMP | unix.BPF_JA
		ret = unix.BPF_RET | unix.BPF_K
	)
	var a asm
	allow, deny, foreignArch, ioctl := a.label(), a.label(), a.label(), a.label()

	a.op(ld, offArch)
	a.jump(jeq, auditArch, next, foreignArch)
	a.op(ld, offNr)
	if x32Bit != 0 {
		a.jump(jge, x32Bit, deny, next)
	}
	nrs := append([]uint32{unix.SYS_IOCTL}, list...)
	slices.Sort(nrs)
	nrs = slices.Compact(nrs)
	target := func(nr uint32) label {
		if nr == unix.SYS_IOCTL {
			return ioctl
		}
		return deny
	}
	var search func(keys []uint32)
	search = func(keys []uint32) {
		if len(keys) <= 4 {
			for _, k := range keys {
				a.jump(jeq, k, target(k), next)
			}
			a.jump(ja, 0, allow, allow)
			return
		}
		mid := len(keys) / 2
		upper := a.label()
		a.jump(jge, keys[mid], upper, next)
		search(keys[:mid])
		a.place(upper)
		search(keys[mid:])
	}
	search(nrs)

	a.place(ioctl)
	a.op(ld, offArg1)
	for _, req := range deniedIoctls {
		a.jump(jeq, req, deny, next)
	}
	a.place(allow)
	a.op(ret, unix.SECCOMP_RET_ALLOW)
	a.place(deny)
	a.op(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EACCES))
	a.place(foreignArch)
	a.op(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	return a.link()
}

// label is a place in a program being assembled; next is the instruction
// after the jump.
type label int

const next label = -1

// asm assembles a classic BPF program whose jumps name labels.
type asm struct {
	prog  []unix.SockFilter
	at    []int // label → instruction index, -1 until placed
	jumps []fixup
}

type fixup struct {
	pc     int
	jt, jf label
}

func (a *asm) label() label {
	a.at = append(a.at, -1)
	return label(len(a.at) - 1)
}

func (a *asm) place(l label) { a.at[l] = len(a.prog) }

func (a *asm) op(code uint16, k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

// jump emits a conditional jump to jt when true, jf when false (for BPF_JA,
// an unconditional jump to jt).
func (a *asm) jump(code uint16, k uint32, jt, jf label) {
	a.jumps = append(a.jumps, fixup{len(a.prog), jt, jf})
	a.op(code, k)
}

// link resolves the jumps. Jumps go forward only, a conditional one at
// most 255 instructions: the lists are fixed, so anything else is a
// programming error.
func (a *asm) link() []unix.SockFilter {
	off := func(pc int, l label) int {
		if l == next {
			return 0
		}
		d := a.at[l] - pc - 1
		if a.at[l] < 0 || d < 0 {
			panic("confine: seccomp jump to an unplaced or earlier label")
		}
		return d
	}
	for _, j := range a.jumps {
		in := &a.prog[j.pc]
		if in.Code == unix.BPF_JMP|unix.BPF_JA {
			in.K = uint32(off(j.pc, j.jt))
			continue
		}
		t, f := off(j.pc, j.jt), off(j.pc, j.jf)
		if t > 255 || f > 255 {
			panic("confine: seccomp jump out of range")
		}
		in.Jt, in.Jf = uint8(t), uint8(f)
	}
	return a.prog
}
