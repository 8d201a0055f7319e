//go:build !linux

package rootfs

import "golang.org/x/sys/unix"

// openDir opens the directory name in dir for the walk, not following a
// link.
func openDir(dir int, name string) (int, error) {
	return openAt(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
}
