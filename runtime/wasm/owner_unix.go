//go:build unix

package wasm

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports whether fi is of a file this process's user owns.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
