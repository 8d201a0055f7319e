package rootfs

import (
	"errors"
	"path"
	"strings"
	"syscall"

	esys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// walker resolves the paths a guest names under a writable mount, from a
// descriptor of the mount's root, one component at a time, as part of the
// operation that uses them:
//
//   - each directory on the way is opened in the one before it with
//     O_NOFOLLOW|O_DIRECTORY (openat(2)): what the walk holds is the
//     directory that bore that name at that moment, never a symbolic link;
//   - a symbolic link on the way is read (readlinkat(2)) in the directory
//     the walk holds, and its target walked on from there, as the kernel
//     would; one that leads out of the mount (absolute, or ".." past the
//     root) is EPERM, more than maxLinkHops links is ELOOP;
//   - ".." goes back to the directory the walk held before, not to the
//     parent the kernel would find now (a rename may have moved it);
//   - the last name is left to the operation, which acts on it in the
//     directory held (openat, mkdirat, renameat... with O_NOFOLLOW or
//     AT_SYMLINK_NOFOLLOW) and asks the walk to go on when it is a link
//     the operation follows.
//
// The components walked (reached.comps) are where the operation acts,
// whatever anyone renames, links or swaps in the mount meanwhile: the
// protected-path check is made on them and on nothing else.
type walker struct {
	root int // the mount's root directory; the rootFS holds it open
}

// reached is where a walk ended: the directory the last name is in, held
// open by the walk until the operation returns, and the path to that name
// as walked.
type reached struct {
	dir   int
	name  string   // the last name in dir; "." for the mount's root itself
	comps []string // from the mount's root: the directories walked, then name (none for the root)
	slash bool     // the path ended in "/"
}

// Flags of walk.
const (
	// walkCreatingDir: a path ending in "/" may name nothing yet (mkdir,
	// the new name of a rename).
	walkCreatingDir = 1 << iota
	// walkNoSlash: a path ending in "/" is left to the operation (mkdir:
	// Linux does not follow "link/" to make a directory).
	walkNoSlash
)

// maxWalkDepth is the most directories one walk holds open at once.
const maxWalkDepth = 255

// op is an operation on the last name a walk reached. It returns a
// symbolic link's target for the walk to follow (the name was a link the
// operation follows), or "" and its errno.
type op func(at reached) (follow string, e esys.Errno)

// walk resolves p, relative to the mount's root, and calls f on the last
// name. The descriptors the walk opened are closed when it returns.
func (w walker) walk(p string, flags int, f op) esys.Errno {
	parts, slash := splitPath(p)
	dirs := []int{w.root} // dirs[i+1] is the directory comps[:i+1] reached
	var comps []string
	defer func() {
		for _, fd := range dirs[1:] {
			_ = unix.Close(fd)
		}
	}()
	up := func() {
		_ = unix.Close(dirs[len(dirs)-1])
		dirs = dirs[:len(dirs)-1]
		comps = comps[:len(comps)-1]
	}
	hops := 0
	follow := func(target string, rest []string) esys.Errno {
		if hops++; hops > maxLinkHops {
			return esys.ELOOP
		}
		if target == "" {
			return esys.ENOENT
		}
		if path.IsAbs(target) {
			return esys.EPERM
		}
		t, s := splitPath(target)
		if len(rest) == 0 && s {
			slash = true
		}
		parts = append(t, rest...)
		return 0
	}
	for {
		if len(parts) == 0 {
			// The path named a directory the walk holds ("." or "a/b/.."):
			// the operation gets it as a name in its parent.
			if len(comps) == 0 {
				_, e := f(reached{dir: w.root, name: ".", slash: slash})
				return e
			}
			parts = []string{comps[len(comps)-1]}
			up()
			slash = true
			continue
		}
		c := parts[0]
		if c == ".." {
			if len(comps) == 0 {
				return esys.EPERM // out of the mount
			}
			up()
			parts = parts[1:]
			continue
		}
		dir := dirs[len(dirs)-1]
		if len(parts) == 1 {
			at := reached{dir: dir, name: c, comps: append(comps[:len(comps):len(comps)], c), slash: slash}
			if slash && flags&walkNoSlash == 0 {
				target, e := checkSlash(dir, c, flags&walkCreatingDir != 0)
				if e != 0 {
					return e
				}
				if target != "" {
					if e := follow(target, nil); e != 0 {
						return e
					}
					continue
				}
			}
			target, e := f(at)
			if e != 0 || target == "" {
				return e
			}
			if e := follow(target, nil); e != 0 {
				return e
			}
			continue
		}
		fd, err := openDir(dir, c)
		if err != nil {
			if target, ok := linkAt(dir, c, err); ok {
				if e := follow(target, parts[1:]); e != 0 {
					return e
				}
				continue
			}
			return errno(err)
		}
		if len(dirs) > maxWalkDepth {
			_ = unix.Close(fd)
			return esys.ENAMETOOLONG
		}
		dirs = append(dirs, fd)
		comps = append(comps, c)
		parts = parts[1:]
	}
}

// splitPath cuts p into its components, leaving out empty ones and ".",
// and reports whether it ended in "/".
func splitPath(p string) (parts []string, slash bool) {
	slash = strings.HasSuffix(p, "/")
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	return parts, slash && len(parts) > 0
}

// checkSlash is what a path ending in "/" asks of its last name: a
// directory, or a link to follow (its target is returned), or, when
// creating a directory, nothing yet.
func checkSlash(dir int, name string, creating bool) (follow string, e esys.Errno) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	switch {
	case errors.Is(err, syscall.ENOENT) && creating:
		return "", 0
	case err != nil:
		return "", errno(err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "", 0
	case unix.S_IFLNK:
		if t, ok := readlinkAt(dir, name); ok {
			return t, 0
		}
	}
	return "", esys.ENOTDIR
}

// linkAt reports, after an open of name in dir with O_NOFOLLOW failed
// with err, whether name is a symbolic link, and its target.
func linkAt(dir int, name string, err error) (string, bool) {
	if !isNoFollow(err) && !errors.Is(err, syscall.ENOTDIR) {
		return "", false
	}
	return readlinkAt(dir, name)
}

// isNoFollow reports whether err is what an open with O_NOFOLLOW returns
// for a symbolic link (ELOOP; EMLINK on FreeBSD and NetBSD).
func isNoFollow(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

// readlinkAt returns the target of the symbolic link name in dir; false
// when name is not one (or is gone).
func readlinkAt(dir int, name string) (string, bool) {
	for n := 128; n <= 1<<16; n *= 2 {
		b := make([]byte, n)
		var m int
		err := ignoringEINTR(func() (err error) { m, err = unix.Readlinkat(dir, name, b); return err })
		if err != nil {
			return "", false
		}
		if m < n {
			return string(b[:m]), true
		}
	}
	return "", false
}

// openAt opens name in dir with flags (O_CLOEXEC added).
func openAt(dir int, name string, flags int, mode uint32) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) { fd, err = unix.Openat(dir, name, flags|unix.O_CLOEXEC, mode); return err })
	return fd, err
}

// ignoringEINTR calls f until it fails with something other than EINTR.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lstatAt is fstatat(2) of name in dir, not following a link.
func lstatAt(dir int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, err
}

func isDir(st unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isLink(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
