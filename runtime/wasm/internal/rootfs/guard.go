package rootfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	esys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/internal/sensitive"
	"github.com/ccrun/ccrun/runtime/job"
)

// implantGuard keeps a writable mount's protected paths
// (job.Mount.ProtectedIn: the rows of internal/sensitive, at any depth, and
// git's view of the tree, minus the mount's named Implants) read-only for
// the guest: no creation, write-open, truncation,
// rename onto or from, link or symbolic link to or at, removal, mkdir,
// utimes or chmod. Reads work.
//
// Each check is made on the path a walk reached (walker: the directories
// opened one by one from the mount's root, the symbolic links inside the
// mount read and followed on the way, then the last name), in the same
// walk as the change and on the directory the change is made in: a link
// alias -> .git makes alias/config the walk's .git/config, whoever made
// the link and whenever. It is made too on the names that links the host
// already had give to what they point at (a link .git -> real.git makes
// real.git/config the host's .git/config: see scanAliases). A guest cannot
// add such a name: a link may not be made, moved or hard-linked at a path
// a protected one could lie under (sensitive.Above: ".git", ".config"), a
// directory may neither take nor leave such a name, and a directory is
// renamed only when nothing protected is in it, at its old place or its
// new one.
//
// Check and change happen under an exclusive flock(2) of the mount's root
// directory, so that two guests sharing the mount (in one process or in
// two workers) do not interleave a directory's check and its rename. A
// writer the lock does not cover (another process, a sandbox with another
// mount) cannot redirect a change: the walk is the change's own.
type implantGuard struct {
	m       job.Mount
	root    *os.Root
	w       walker
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
func newGuard(r *os.Root, w walker, m job.Mount) (*implantGuard, error) {
	if err := m.CheckImplants(); err != nil {
		return nil, err
	}
	g := &implantGuard{m: m, root: r, w: w}
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
				if t, e := g.resolve(p); e == 0 && join(t) != p {
					g.aliases = append(g.aliases, alias{target: join(t), link: p})
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

// protected reports whether comps, a path of the mount as a walk reached
// it (the directories walked, then the last name), is protected: under
// its own name, or under a name an alias gives it. It is the one place
// where what a guest may change is judged; every refusal below asks it.
func (g *implantGuard) protected(comps []string) bool {
	if len(comps) == 0 {
		return false // the mount's root
	}
	p := strings.Join(comps, "/")
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

// above reports whether something under comps (as a walk reached it)
// could be protected: comps is protected, or could hold protected paths,
// under its name or an alias's. No link may be placed there, and no
// directory may take or leave such a name.
func (g *implantGuard) above(comps []string) bool {
	if g.protected(comps) {
		return true
	}
	p := join(comps)
	if sensitive.Above(p) {
		return true
	}
	for _, a := range g.aliases {
		if r, ok := below(p, a.target); ok && sensitive.Above(path.Join(a.link, r)) {
			return true
		}
	}
	return false
}

// join is comps as a path relative to the mount ("." for none).
func join(comps []string) string {
	if len(comps) == 0 {
		return "."
	}
	return strings.Join(comps, "/")
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

// resolve walks p (relative to the mount) and returns the components the
// walk reached, a symbolic link at the end followed: the path the host
// names the file by. A missing last component is kept as it is; a missing
// directory is ENOENT, a path leading out EPERM.
func (g *implantGuard) resolve(p string) ([]string, esys.Errno) {
	var comps []string
	e := g.w.walk(p, 0, func(at reached) (string, esys.Errno) {
		if t, ok := readlinkAt(at.dir, at.name); ok {
			return t, 0
		}
		comps = at.comps
		return "", 0
	})
	return comps, e
}

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

// refuse returns EACCES when the path a walk reached is protected.
func (g *implantGuard) refuse(at reached) esys.Errno {
	if g.protected(at.comps) {
		return esys.EACCES
	}
	return 0
}

// refuseRename checks a rename of o to n: neither may be protected; a
// link may not land where a protected path could lie under it; a
// directory may neither take nor leave such a name (what another writer
// puts in an empty directory after the check would be planted), and may
// hold nothing protected at its old place or its new one.
func (g *implantGuard) refuseRename(o, n reached) esys.Errno {
	if g.protected(o.comps) || g.protected(n.comps) {
		return esys.EACCES
	}
	st, err := lstatAt(o.dir, o.name)
	if err != nil {
		return errno(err)
	}
	switch {
	case isLink(st):
		if g.above(n.comps) {
			return esys.EACCES
		}
	case isDir(st):
		if g.above(o.comps) || g.above(n.comps) {
			return esys.EACCES
		}
		// Its entries move too: none may be protected where it was (that
		// would remove it from the host's view) or where it goes (a
		// directory of ours renamed to an alias's target).
		return g.refuseTree(o, n.comps)
	}
	return 0
}

// refuseTree walks the directory o (each directory opened in the one
// before it, links not followed) and refuses when an entry is protected
// where it is or would be under dst, or is a link that would land above a
// protected path; or when it holds more than maxRenameEntries entries (too
// many to check: the guest can still move them one by one).
func (g *implantGuard) refuseTree(o reached, dst []string) esys.Errno {
	n := 0
	var walk func(dir int, name string, src, dst []string) esys.Errno
	walk = func(dir int, name string, src, dst []string) esys.Errno {
		fd, err := openAt(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return errno(err)
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		ents, err := f.ReadDir(-1)
		if err != nil {
			return errno(err)
		}
		for _, e := range ents {
			if n++; n > maxRenameEntries {
				return esys.EACCES
			}
			s, d := appendComp(src, e.Name()), appendComp(dst, e.Name())
			if g.protected(s) || g.protected(d) {
				return esys.EACCES
			}
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				if g.above(d) {
					return esys.EACCES
				}
			case e.IsDir():
				if e := walk(fd, e.Name(), s, d); e != 0 {
					return e
				}
			}
		}
		return 0
	}
	return walk(o.dir, o.name, o.comps, dst)
}

// appendComp is comps with c after it, in a slice of its own.
func appendComp(comps []string, c string) []string {
	return append(comps[:len(comps):len(comps)], c)
}

// dirOf is the directory part of a walked path.
func dirOf(comps []string) []string {
	if len(comps) == 0 {
		return nil
	}
	return comps[:len(comps)-1]
}

// refuseLink checks a hard link of o at n: o (its last link not followed,
// as link(2)) may not be protected, nor what it names when it is a
// symbolic link; n may not be protected. A symbolic link linked at n is a
// link made there: as Symlink, it may not lie above a protected path, nor
// point, read from n's directory, out of the mount.
func (g *implantGuard) refuseLink(o, n reached) esys.Errno {
	if g.protected(o.comps) || g.protected(n.comps) {
		return esys.EACCES
	}
	st, err := lstatAt(o.dir, o.name)
	if err != nil || !isLink(st) {
		return 0 // linkat(2) answers
	}
	target, ok := readlinkAt(o.dir, o.name)
	if !ok {
		return esys.ENOENT
	}
	// What it names, followed from where it is, is protected too; a link
	// that loops names no file.
	comps, e := g.resolve(strings.Join(append(dirOf(o.comps), target), "/"))
	switch {
	case e == esys.ELOOP:
	case e != 0:
		return e
	case g.protected(comps):
		return esys.EACCES
	}
	if escapes(dirOf(n.comps), target) {
		return esys.EPERM
	}
	if g.above(n.comps) {
		return esys.EACCES
	}
	return 0
}

// escapes reports whether a symbolic link to target in the directory dir
// (walked components) would point outside the mount, or anywhere but
// inside it by a relative path.
func escapes(dir []string, target string) bool {
	if target == "" || path.IsAbs(target) {
		return true
	}
	return !fs.ValidPath(path.Join(join(dir), target))
}

// refuseSymlink checks a symbolic link to target at at: at may not be at
// or above a protected path, and target, read from at's directory, may not
// name a protected one.
func (g *implantGuard) refuseSymlink(target string, at reached) esys.Errno {
	if g.above(at.comps) {
		return esys.EACCES
	}
	comps, e := g.resolve(strings.Join(append(dirOf(at.comps), target), "/"))
	switch {
	case e == esys.ENOENT:
	case e != 0:
		return e
	case g.protected(comps):
		return esys.EACCES
	}
	return 0
}
