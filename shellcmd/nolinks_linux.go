//go:build linux

package shellcmd

import (
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noLinks reports whether the kernel, walking the clean absolute path p,
// meets no symbolic link before it finds p or finds that it cannot go on
// because a component does not exist (ENOENT) or is not a directory
// (ENOTDIR): then p resolves to itself, and resolveFrom's walk, which
// stops at the same component, gives p too. One openat2 with
// RESOLVE_NO_SYMLINKS (magic links too, the last component too) asks it.
// false means "not known": a link (ELOOP), any other error, a kernel
// without openat2 (asked once: noOpenat2); the caller walks.
func noLinks(p string) bool {
	if noOpenat2.Load() || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	var err error
	var fd int
	if len(p) < maxStackPath {
		fd, err = openat2NoLinks(p)
	} else {
		fd, err = unix.Openat2(unix.AT_FDCWD, p, &noLinksHow)
	}
	switch err {
	case nil:
		unix.Close(fd)
		return true
	case unix.ENOENT, unix.ENOTDIR:
		return true
	case unix.ENOSYS:
		noOpenat2.Store(true)
	}
	return false
}

// noLinksHow is the openat2 of noLinks: a path descriptor, and no link
// followed on the way.
var noLinksHow = unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}

// maxStackPath is the longest path (NUL included) openat2NoLinks copies
// to its stack; a longer one goes through unix.Openat2.
const maxStackPath = 512

// openat2NoLinks is unix.Openat2(AT_FDCWD, p, &noLinksHow) without the
// heap copy of p that unix.Openat2 makes to NUL-terminate it: p (shorter
// than maxStackPath, without a NUL) is copied to the stack instead.
func openat2NoLinks(p string) (int, error) {
	var buf [maxStackPath]byte
	copy(buf[:], p) // buf[len(p)] stays 0
	how, dirfd := noLinksHow, unix.AT_FDCWD
	fd, _, e := syscall.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// noOpenat2 is set once the kernel has said it has no openat2 (before
// Linux 5.6, or a seccomp filter or valgrind refusing it).
var noOpenat2 atomic.Bool
