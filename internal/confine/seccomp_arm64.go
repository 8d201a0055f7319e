//go:build linux

package confine

import "golang.org/x/sys/unix"

// auditArch is the architecture a seccomp filter expects; a syscall of any
// other (the 32-bit compat ABI) is refused.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit is zero here: arm64 has no x32-like ABI.
const x32Bit = 0

// archDenied are the syscalls of this architecture that only it has.
var archDenied = []uint32{}
