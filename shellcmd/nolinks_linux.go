//go:build linux

package shellcmd

import (
	"strings"
	"sync/atomic"

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
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
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

// noOpenat2 is set once the kernel has said it has no openat2 (before
// Linux 5.6, or a seccomp filter or valgrind refusing it).
var noOpenat2 atomic.Bool
