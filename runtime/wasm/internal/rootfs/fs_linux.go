package rootfs

import (
	"os"
	"syscall"
	"unsafe"

	esys "github.com/tetratelabs/wazero/experimental/sys"
)

// utimeOmit is Linux's UTIME_OMIT for utimensat(2).
const utimeOmit = (1 << 30) - 2

// setAppend turns O_APPEND on or off on the open descriptor.
func setAppend(f *os.File, enable bool) esys.Errno {
	rc, err := f.SyscallConn()
	if err != nil {
		return errno(err)
	}
	var e syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		flags, _, e1 := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		if e1 != 0 {
			e = e1
			return
		}
		if enable {
			flags |= syscall.O_APPEND
		} else {
			flags &^= syscall.O_APPEND
		}
		_, _, e = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETFL, flags)
	}); err != nil {
		return errno(err)
	}
	return errno(errOrNil(e))
}

// futimens sets the times of the open descriptor (wazero's UTIME_OMIT
// leaves one unchanged).
func futimens(f *os.File, atim, mtim int64) esys.Errno {
	ts := [2]syscall.Timespec{timespec(atim), timespec(mtim)}
	rc, err := f.SyscallConn()
	if err != nil {
		return errno(err)
	}
	var e syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, e = syscall.Syscall6(syscall.SYS_UTIMENSAT, fd, 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	}); err != nil {
		return errno(err)
	}
	return errno(errOrNil(e))
}

// pwrite writes buf at off without moving the file's offset; on a file
// opened with O_APPEND Linux writes at the end.
func pwrite(f *os.File, buf []byte, off int64) (int, esys.Errno) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, errno(err)
	}
	var n int
	var e error
	if err := rc.Write(func(fd uintptr) bool {
		for n < len(buf) {
			m, err := syscall.Pwrite(int(fd), buf[n:], off+int64(n))
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				e = err
				break
			}
			n += m
		}
		return true
	}); err != nil {
		return n, errno(err)
	}
	return n, errno(e)
}

func timespec(t int64) syscall.Timespec {
	if t == esys.UTIME_OMIT {
		return syscall.Timespec{Nsec: utimeOmit}
	}
	return syscall.NsecToTimespec(t)
}

func errOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// flock takes an exclusive flock(2) of f (a directory) and returns its
// release. A failure to lock (not seen on Linux file systems) leaves the
// change unserialized rather than refused.
func flock(f *os.File) func() {
	fd := int(f.Fd())
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	return func() { _ = syscall.Flock(fd, syscall.LOCK_UN) }
}
