package allowlist

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/ccrun/ccrun/internal/errclass"
)

// maxProjectFile bounds what ReadProjectFile reads.
const maxProjectFile = 4 << 20

// ReadProjectFile reads one of a project's own files (ccrun.json,
// ccrun.local.json) without following a symbolic link at path, and only
// when it is a regular file owned by the current user: a file another user
// wrote (into a shared directory, say) is refused with an error of classes
// ccrun.ErrInvalidConfig and fs.ErrPermission. A missing file is an error that
// errors.Is(err, fs.ErrNotExist).
func ReadProjectFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s: a symbolic link: ccrun reads its project files only as regular files: %w: %w", path, errclass.InvalidConfig, fs.ErrPermission)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file: %w", path, errclass.InvalidConfig)
	}
	if err := ownedByMe(path, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxProjectFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxProjectFile {
		return nil, fmt.Errorf("%s: larger than %d bytes: %w", path, maxProjectFile, errclass.InvalidConfig)
	}
	return data, nil
}

// ownedByMe refuses a file or directory another user owns.
func ownedByMe(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: owned by uid %d, not by you (uid %d): ccrun does not read project files another user wrote: %w: %w",
			path, st.Uid, os.Geteuid(), errclass.InvalidConfig, fs.ErrPermission)
	}
	return nil
}

// CheckProjectDir refuses a project root that another user could have put
// files into: a directory owned by another user, or one writable by others
// without the sticky bit. The error is of classes ccrun.ErrInvalidConfig and
// fs.ErrPermission.
func CheckProjectDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("project dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("project dir %s: not a directory: %w", dir, errclass.InvalidConfig)
	}
	if err := ownedByMe(dir, fi); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s: writable by every user (mode %04o, no sticky bit): anyone could plant ccrun.json there: %w: %w",
			dir, fi.Mode().Perm(), errclass.InvalidConfig, fs.ErrPermission)
	}
	return nil
}
