package rootfs

import "golang.org/x/sys/unix"

// openDir opens the directory name in dir for the walk, not following a
// link: O_PATH, which needs no read permission on it, as the kernel's own
// walk needs only search permission.
func openDir(dir int, name string) (int, error) {
	return openAt(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
}
