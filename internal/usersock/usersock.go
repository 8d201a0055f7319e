// Package usersock holds what ccrun's long-lived helper servers (the warm
// @wasm server, the confinement server) share about their unix sockets:
// the directory of this user's sockets, the check that nobody else can
// enter it, who is at the other end of a connection, and the lock that
// keeps a second server off a socket.
package usersock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// ErrUnsafe: a socket directory is not a directory that only this user can
// enter, or the peer at the other end of a socket is another user.
var ErrUnsafe = errdefs.ErrPermissionDenied.WithMessage("unsafe socket")

// Dir is the directory of this user's server sockets: $XDG_RUNTIME_DIR/ccrun
// when XDG_RUNTIME_DIR is an absolute path, else os.TempDir()/ccrun-UID.
func Dir() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "ccrun")
	}
	return filepath.Join(os.TempDir(), "ccrun-"+strconv.Itoa(os.Getuid()))
}

// CheckDir refuses a directory that is a symbolic link, is not a
// directory, is not owned by this user, or that others may enter (any
// permission bit for group or others), with an error of class ErrUnsafe
// (or the Lstat's).
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("socket dir %s is not a plain directory: %w", dir, ErrUnsafe)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("socket dir %s is not yours: %w", dir, ErrUnsafe)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("socket dir %s is open to others (%v): %w", dir, fi.Mode().Perm(), ErrUnsafe)
	}
	return nil
}

// TakeLock opens the lock file at path (created 0600 when missing) and
// returns it locked (flock, exclusive), or nil when another process holds
// it. A lock file may be removed by whoever holds it (a sweep of stale
// sockets): a file this process opened before that removal and locked
// after it is no longer the one at path, and a second server, opening path
// anew, would lock another file and serve at the same socket (each
// removing the other's). So the file locked must still be the one at
// path; when it is not, path is opened again.
func TakeLock(path string) (*os.File, error) {
	for range 8 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		held, err := LockHeld(f, path)
		if held {
			return f, nil
		}
		_ = f.Close()
		if !errors.Is(err, ErrReplaced) {
			return nil, err // nil: another server has it
		}
	}
	return nil, fmt.Errorf("lock: %s keeps being replaced", path)
}

// ErrReplaced (LockHeld): the lock file locked is no longer the one at its
// path.
var ErrReplaced = errors.New("lock file replaced")

// LockHeld locks f, the lock file opened at path, without waiting: true
// when this process now holds it and it is still the file at path; false
// and nil when another process holds it; ErrReplaced when path now names
// another file, or none (f is then locked, and closing it unlocks it).
func LockHeld(f *os.File, path string) (bool, error) {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("lock: %w", err)
	}
	if !isAt(f, path) {
		return false, ErrReplaced
	}
	return true, nil
}

// isAt says whether f is the file at path (not following a symbolic link).
func isAt(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, now)
}
