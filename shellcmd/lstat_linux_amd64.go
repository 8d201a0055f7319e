//go:build linux && amd64

package shellcmd

import (
	"os"
	"syscall"
	"unsafe"
)

// lstatLink is os.Lstat(string(p)) reduced to what resolveFrom asks of
// it: whether p is a symbolic link, or the error. p is NUL-terminated in
// place (its capacity must allow one byte more), so that the kernel reads
// it where it lies: no string and no C string is made for it.
func lstatLink(p []byte) (link bool, err error) {
	if len(p) == 0 || len(p) >= cap(p) {
		fi, err := os.Lstat(string(p))
		return err == nil && fi.Mode()&os.ModeSymlink != 0, err
	}
	p = append(p, 0)
	var st syscall.Stat_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_NEWFSTATAT, atFDCWD, uintptr(unsafe.Pointer(&p[0])),
			uintptr(unsafe.Pointer(&st)), atSymlinkNoFollow, 0, 0)
		switch e {
		case 0:
			return st.Mode&syscall.S_IFMT == syscall.S_IFLNK, nil
		case syscall.EINTR:
			continue
		}
		return false, e
	}
}

// The fstatat arguments (linux/fcntl.h).
const (
	atFDCWD           = ^uintptr(99) // AT_FDCWD, -100
	atSymlinkNoFollow = 0x100        // AT_SYMLINK_NOFOLLOW
)
