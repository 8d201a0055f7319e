package wasmenv

import (
	"os"
	"syscall"
)

// sysID is the identity of the regular file fi: device, inode, size,
// modification and change times (nanoseconds).
func sysID(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}
