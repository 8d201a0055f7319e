//go:build !linux

package rootfs

import (
	"os"

	esys "github.com/tetratelabs/wazero/experimental/sys"
)

// setAppend is not implemented outside Linux.
func setAppend(*os.File, bool) esys.Errno { return esys.ENOSYS }

// futimens is not implemented outside Linux.
func futimens(*os.File, int64, int64) esys.Errno { return esys.ENOSYS }

// flock is not implemented outside Linux: guests sharing a mount are not
// serialized.
func flock(*os.File) func() { return func() {} }

// pwrite writes buf at off (os.File.WriteAt, which refuses a file opened
// with O_APPEND).
func pwrite(f *os.File, buf []byte, off int64) (int, esys.Errno) {
	n, err := f.WriteAt(buf, off)
	return n, errno(err)
}
