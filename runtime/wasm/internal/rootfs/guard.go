package rootfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/ccrun/ccrun/internal/sensitive"
	"github.com/ccrun/ccrun/runtime/job"
	esys "github.com/tetratelabs/wazero/experimental/sys"
)

// implantGuard keeps a writable mount's protected paths
// (job.Mount.ProtectedIn: the rows of internal/sensitive, at any depth, and
// git's view of the tree, minus the mount's named Implants) read-only for
// the guest: no creation, write-open, truncation,
// rename onto or from, link or symbolic link to or at, removal, mkdir,
// utimes or chmod. Reads work.
//
// Each check is made on the path as the host will name it, with the
// symbolic links inside the mount resolved (a link alias -> .git makes
// alias/config the host's .git/config), and on the names that links the
// host already had give to what they point at (a link .git -> real.git
// makes real.git/config the host's .git/config: see scanAliases). A guest
// cannot add such a name: a link may not be made, moved or hard-linked at
// a path a protected one could lie under (sensitive.Above, ".git",
// ".config"), and a directory is renamed only when nothing protected is
// in it, at its old place or its new one.
//
// Check and change happen under an exclusive flock(2) of the mount's root
// directory, so that two guests sharing the mount (in one process or in
// two workers) cannot swap a link between one's check and its change.
type implantGuard struct {
	m       job.Mount
	root    *os.Root
	aliases []alias
}

// alias is a symbolic link the mount held when the run began, at a path
// that is protected or could hold protected ones: what it points at is
// protected as if it lay under link.
type alias struct {
	target string // the link's target, resolved, relative to the mount
	link   string // the link, relative to the mount
}

// Bounds of the walks: the mount scan when a run begins, the check of a
// directory to be renamed.
const (
	maxScanEntries   = 200_000
	maxScanDepth     = 64
	maxRenameEntries = 10_000
	maxLinkHops      = 40 // as Linux's MAXSYMLINKS
)

// errTooBig is the class of a mount too big to be checked.
var errTooBig = errors.New("too many entries")

// newGuard prepares the guard of a writable mount: it scans the mount for
// links at protected names.
func newGuard(r *os.Root, m job.Mount) (*implantGuard, error) {
	if err := m.CheckImplants(); err != nil {
		return nil, err
	}
	g := &implantGuard{m: m, root: r}
	if err := g.scanAliases(); err != nil {
		return nil, fmt.Errorf("check for protected paths: %w", err)
	}
	return g, nil
}

// scanAliases walks the mount, without following links, for symbolic
// links at a protected path or one a protected path could lie under, and
// records where each points inside the mount. Past maxScanEntries entries
// or maxScanDepth levels the mount is refused rather than half checked.
func (g *implantGuard) scanAliases() error {
	n := 0
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > maxScanDepth {
			return fmt.Errorf("deeper than %d directories: %w", maxScanDepth, errTooBig)
		}
		f, err := g.root.Open(dir)
		if err != nil {
			return nil // unreadable: the guest cannot reach it either
		}
		ents, err := f.ReadDir(-1)
		_ = f.Close()
		if err != nil {
			return nil
		}
		for _, e := range ents {
			if n++; n > maxScanEntries {
				return fmt.Errorf("more than %d entries: %w", maxScanEntries, errTooBig)
			}
			p := path.Join(dir, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				if !g.covered(p) && !sensitive.Above(p) {
					continue
				}
				if t, e := g.resolve(p, true); e == 0 && t != p {
					g.aliases = append(g.aliases, alias{target: t, link: p})
				}
			case e.IsDir():
				if err := walk(p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(".", 0)
}

// covered reports whether the host names p (relative to the mount) a
// protected path: by the table's names, or by what the mount holds as git
// reads it (a gitfile, a repository's config under any name, the entry
// that would make a directory a repository: job.Mount.ProtectedIn).
func (g *implantGuard) covered(p string) bool {
	_, ok := g.m.ProtectedIn(g.root, p)
	return ok
}

// protected reports whether p, resolved, is protected under its own name
// or under a name an alias gives it.
func (g *implantGuard) protected(p string) bool {
	if g.covered(p) {
		return true
	}
	for _, a := range g.aliases {
		if r, ok := below(p, a.target); ok && g.covered(path.Join(a.link, r)) {
			return true
		}
	}
	return false
}

// above reports whether something under p, resolved, could be protected
// (p is protected or could hold protected paths, under its name or an
// alias's): no link may be placed there.
func (g *implantGuard) above(p string) bool {
	if g.protected(p) || sensitive.Above(p) {
		return true
	}
	for _, a := range g.aliases {
		if r, ok := below(p, a.target); ok && sensitive.Above(path.Join(a.link, r)) {
			return true
		}
	}
	return false
}

// below returns p relative to dir when p is dir or under it.
func below(p, dir string) (string, bool) {
	if dir == "." {
		return p, true
	}
	if p == dir {
		return ".", true
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir)+1:], true
	}
	return "", false
}

// resolve returns name (relative to the mount, as wazero gives it) with
// the symbolic links of its directories resolved, and of its last
// component too when followLast: the path, relative to the mount and
// clean, the host names the file by. A missing last component is kept
// as it is; a missing directory is ENOENT. A path leading out is EPERM,
// as os.Root refuses it.
func (g *implantGuard) resolve(name string, followLast bool) (string, esys.Errno) {
	todo := split(name)
	var done []string
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", esys.EPERM
			}
			done = done[:len(done)-1]
			continue
		}
		last := len(todo) == 0
		p := strings.Join(append(done, c), "/")
		if last && !followLast {
			done = append(done, c)
			break
		}
		st, err := g.root.Lstat(p)
		if err != nil {
			if !last {
				e := errno(err)
				if e == esys.ENOTDIR {
					e = esys.ENOENT
				}
				return "", e
			}
			done = append(done, c)
			continue
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", esys.ELOOP
		}
		t, err := g.root.Readlink(p)
		if err != nil {
			return "", errno(err)
		}
		if path.IsAbs(t) {
			return "", esys.EPERM
		}
		todo = append(split(t), todo...)
	}
	if len(done) == 0 {
		return ".", 0
	}
	return strings.Join(done, "/"), 0
}

func split(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }

// hold takes the mount's lock for one check and its change. The lock is
// on a descriptor of its own, so that it serializes this run's guests
// against each other's too (flock(2) locks belong to an open file).
func (g *implantGuard) hold() (unlock func()) {
	f, err := g.root.Open(".")
	if err != nil {
		return func() {}
	}
	release := flock(f)
	return func() {
		release()
		_ = f.Close()
	}
}

// refuse returns EACCES when the resolved name is protected, and the
// resolution's errno when it failed.
func (g *implantGuard) refuse(name string, followLast bool) esys.Errno {
	if g.covered(rel(name)) {
		return esys.EACCES
	}
	p, e := g.resolve(name, followLast)
	if e != 0 {
		return e
	}
	if g.protected(p) {
		return esys.EACCES
	}
	return 0
}

// refuseLinkAt returns EACCES when a symbolic link (or a hard link of
// one) may not be placed at name: the path, or something under it, could
// be protected.
func (g *implantGuard) refuseLinkAt(name string) esys.Errno {
	if g.above(rel(name)) {
		return esys.EACCES
	}
	p, e := g.resolve(name, false)
	if e != 0 {
		return e
	}
	if g.above(p) {
		return esys.EACCES
	}
	return 0
}

// refuseRename checks a rename of from to to: neither may be protected,
// a link may not land where a protected path could lie under it, and a
// directory may hold nothing protected at its old place or its new one.
func (g *implantGuard) refuseRename(from, to string) esys.Errno {
	if e := g.refuse(from, false); e != 0 {
		return e
	}
	if e := g.refuse(to, false); e != 0 {
		return e
	}
	src, e := g.resolve(from, false)
	if e != 0 {
		return e
	}
	dst, e := g.resolve(to, false)
	if e != 0 {
		return e
	}
	st, err := g.root.Lstat(src)
	if err != nil {
		return errno(err)
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		if g.above(dst) {
			return esys.EACCES
		}
	case st.IsDir():
		// Its entries move too: none may be protected where it was (that
		// would remove it from the host's view) or where it goes (a
		// directory of ours renamed to .git).
		return g.refuseTree(src, dst)
	}
	return 0
}

// refuseTree walks directory src (not following links) and refuses when
// an entry is protected at src or would be at dst, or is a link that would
// land above a protected path; or when it holds more than
// maxRenameEntries entries (too many to check: the guest can still move
// them one by one).
func (g *implantGuard) refuseTree(src, dst string) esys.Errno {
	n := 0
	var walk func(rel string) esys.Errno
	walk = func(r string) esys.Errno {
		f, err := g.root.Open(path.Join(src, r))
		if err != nil {
			return errno(err)
		}
		ents, err := f.ReadDir(-1)
		_ = f.Close()
		if err != nil {
			return errno(err)
		}
		for _, e := range ents {
			if n++; n > maxRenameEntries {
				return esys.EACCES
			}
			sub := path.Join(r, e.Name())
			if g.protected(path.Join(src, sub)) || g.protected(path.Join(dst, sub)) {
				return esys.EACCES
			}
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				if g.above(path.Join(dst, sub)) {
					return esys.EACCES
				}
			case e.IsDir():
				if e := walk(sub); e != 0 {
					return e
				}
			}
		}
		return 0
	}
	return walk(".")
}

// refuseLink checks a hard link of old at new: old (its last link not
// followed, as link(2)) may not be protected, nor what it names when it
// is a symbolic link; new may not be protected, nor, for a link, above a
// protected path.
func (g *implantGuard) refuseLink(old, new string) esys.Errno {
	if e := g.refuse(old, false); e != 0 {
		return e
	}
	// What a symbolic link at old names, followed, is protected too; a
	// link that loops names no file.
	if e := g.refuse(old, true); e != 0 && e != esys.ELOOP {
		return e
	}
	if e := g.refuse(new, false); e != 0 {
		return e
	}
	src, e := g.resolve(old, false)
	if e != 0 {
		return e
	}
	if st, err := g.root.Lstat(src); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return g.refuseLinkAt(new)
	}
	return 0
}

// refuseSymlink checks a symbolic link at link to target: link may not be
// at or above a protected path, and target, read from the link's
// directory, may not name a protected one.
func (g *implantGuard) refuseSymlink(target, link string) esys.Errno {
	if e := g.refuseLinkAt(link); e != 0 {
		return e
	}
	dir, e := g.resolve(path.Dir(rel(link)), true)
	if e != 0 {
		return e
	}
	if e := g.refuse(path.Join(dir, target), true); e != 0 && e != esys.ENOENT {
		return e
	}
	return 0
}
