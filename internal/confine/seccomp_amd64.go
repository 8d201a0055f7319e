//go:build linux

package confine

import "golang.org/x/sys/unix"

// auditArch is the architecture a seccomp filter expects; a syscall of any
// other (the 32-bit ABI through int 0x80) is refused.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks a syscall of the x32 ABI, which shares auditArch: refused.
const x32Bit = 0x40000000

// archDenied are the syscalls of this architecture that only it has.
var archDenied = []uint32{
	unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_UTIME, unix.SYS_UTIMES,
	unix.SYS_FUTIMESAT,
}
