package wasm

import (
	"fmt"
	"syscall"
)

// fileKey identifies the content of the file at path without reading it:
// its device, inode, size, mtime and ctime (a rewrite changes ctime). ""
// when it cannot be had.
func fileKey(path string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	return fmt.Sprint(path, st.Dev, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano())
}
