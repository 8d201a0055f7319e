// Package dotccrun makes a project's .ccrun/ directory, where ccrun keeps
// its housekeeping (the audit log, the locks and temporary files of the
// settings files it writes) beside the capabilities that are committed.
//
// The directory is ignored by git from its first byte: Mkdir makes it
// under a temporary name, writes its .gitignore there and renames it into
// place, so that no `git add .` between the two can take the audit log
// into the repository. The .gitignore ignores itself too, so a run leaves
// `git status` as it found it; only capabilities/ shows, to be committed.
package dotccrun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Name is the directory's name in the project root.
const Name = ".ccrun"

// Gitignore is the .gitignore Mkdir writes: everything ccrun writes there
// stays out of the repository (a committed audit log, or a committed link
// in its place, is a hostile repository's tool); the capabilities are
// committed.
const Gitignore = `# Written by ccrun: its own files (audit.jsonl, locks, temporary files)
# stay out of the repository; capabilities are committed.
/*
!/capabilities/
`

// ErrUnsafe: the path exists and is not a real directory (a symbolic link
// or a file in its place).
var ErrUnsafe = errors.New("not a real directory")

// Mkdir makes dir, which should be a project's .ccrun, with its
// .gitignore, unless it exists; its parents are made if missing. An
// existing dir (one that came with a clone, holding committed capabilities)
// gets the .gitignore if it has none; one it has is kept as it is. A
// symbolic link or a file in dir's place is refused with ErrUnsafe. Safe
// for concurrent use by many processes: the first rename wins.
func Mkdir(dir string, perm fs.FileMode) error {
	switch err := existing(dir); {
	case err == nil:
		return writeIgnore(dir)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, filepath.Base(dir)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // left only when the rename did not happen
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	if err := writeIgnore(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process made it first (EEXIST, or ENOTEMPTY when it is
		// a directory with files): take what is there, if it is safe.
		if e := existing(dir); e == nil {
			return nil
		}
		return err
	}
	return nil
}

// existing reports nil for a real directory at dir, fs.ErrNotExist for
// nothing there, and ErrUnsafe for anything else.
func existing(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w (a symbolic link?): refusing to write there", dir, ErrUnsafe)
	}
	return nil
}

// writeIgnore writes dir's .gitignore unless it has one (or a link, or
// anything, in its place: what is there is left alone).
func writeIgnore(dir string) error {
	name := filepath.Join(dir, ".gitignore")
	if _, err := os.Lstat(name); err == nil {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, werr := f.WriteString(Gitignore)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}
