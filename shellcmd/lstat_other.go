//go:build !(linux && amd64)

package shellcmd

import "os"

// lstatLink is os.Lstat(string(p)) reduced to what resolveFrom asks of
// it: whether p is a symbolic link, or the error.
func lstatLink(p []byte) (link bool, err error) {
	fi, err := os.Lstat(string(p))
	return err == nil && fi.Mode()&os.ModeSymlink != 0, err
}
