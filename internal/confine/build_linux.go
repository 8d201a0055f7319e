//go:build linux

package confine

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/internal/sensitive"
)

// A built ruleset is kept, per Policy, for the next Prepare: building one
// reads every partly granted directory and adds a rule per entry (about a
// millisecond), checking it costs one stat per such directory. It is
// rebuilt as soon as one of them has changed (its inode, mtime or ctime:
// an entry added, removed, renamed, or a symlink replaced), so a cached
// ruleset grants exactly what a new one would.
var cache = struct {
	sync.Mutex
	m map[string]*built
}{m: map[string]*built{}}

// maxCached bounds the cache: a policy per project and home in use.
const maxCached = 16

// built is a ruleset fd and what it was built from.
type built struct {
	fd    int
	rules atomic.Int32 // added, by the threads of addRules
	dirs  []stamp      // the partly granted directories, as they were
}

// stamp identifies a directory's state.
type stamp struct {
	path         string
	dev, ino     uint64
	mtime, ctime unix.Timespec
	missing      bool
}

func stampOf(p string) stamp {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return stamp{path: p, missing: true}
	}
	return stamp{p, st.Dev, st.Ino, st.Mtim, st.Ctim, false}
}

func (b *built) fresh() bool {
	for _, d := range b.dirs {
		if stampOf(d.path) != d {
			return false
		}
	}
	return true
}

// cachedDup returns a new fd of the built ruleset of p (close it), and
// how many rules it has, building it if it is missing or stale. The dup
// is made under the cache's lock: another Prepare may close the cache's
// own fd as soon as it finds it stale.
func cachedDup(p Policy, abi int) (fd, rules int, err error) {
	cache.Lock()
	defer cache.Unlock()
	b, err := cachedLocked(p, abi)
	if err != nil {
		return -1, 0, err
	}
	fd, err = unix.FcntlInt(uintptr(b.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("confine: dup ruleset: %w: %w", ErrUnavailable, err)
	}
	return fd, int(b.rules.Load()), nil
}

// cachedLocked returns the built ruleset of p, building it if it is
// missing or stale; the cache's lock is held. The fd stays the cache's.
func cachedLocked(p Policy, abi int) (*built, error) {
	// "\x00" cannot be in a path: the key is unambiguous
	key := strconv.Itoa(abi) + "\x01" + strings.Join(p.Hide, "\x00") + "\x01" + strings.Join(p.Read, "\x00") +
		"\x01" + strings.Join(p.Write, "\x00") + "\x01" + strconv.FormatBool(p.HideProcesses) +
		"\x01" + strings.Join(p.Private, "\x00") + "\x01" + strings.Join(p.Search, "\x00") +
		"\x01" + strings.Join(p.Writable, "\x00") + "\x01" + strconv.FormatBool(p.Network) // Protect: not in the ruleset
	if b := cache.m[key]; b != nil {
		if b.fresh() {
			return b, nil
		}
		unix.Close(b.fd)
		delete(cache.m, key)
	}
	b, err := build(p, abi)
	if err != nil {
		return nil, err
	}
	if len(cache.m) >= maxCached {
		for k, old := range cache.m {
			unix.Close(old.fd)
			delete(cache.m, k)
			break
		}
	}
	cache.m[key] = b
	return b, nil
}

// dropCache forgets every built ruleset (tests).
func dropCache() {
	cache.Lock()
	defer cache.Unlock()
	for k, b := range cache.m {
		unix.Close(b.fd)
		delete(cache.m, k)
	}
}

// node is a directory on the way to hidden paths (partly granted), or a
// hidden path.
type node struct {
	hidden bool
	rest   bool // a private directory: entries that are no kid are hidden
	procs  bool // /proc under HideProcesses: its numeric entries are hidden
	kids   map[string]*node
	globs  []globKid
}

// plain reports whether n says nothing of what is beneath it: granted
// whole.
func (n *node) plain() bool {
	return !n.hidden && !n.rest && !n.procs && len(n.kids) == 0 && len(n.globs) == 0
}

// child returns n's kid c, made if missing: a kid made in a private
// directory is private too, until reveal says otherwise.
func (n *node) child(c string) *node {
	if n.kids == nil {
		n.kids = map[string]*node{}
	}
	k := n.kids[c]
	if k == nil {
		k = &node{rest: n.rest}
		n.kids[c] = k
	}
	return k
}

// private marks the directory at cs private, unless it is hidden
// already.
func (n *node) private(cs []string) {
	for _, c := range cs {
		if n.hidden {
			return
		}
		n = n.child(c)
	}
	if !n.hidden {
		n.rest = true
	}
}

// reveal puts sub, a searched directory's plan, at cs: readable again in a
// private directory, but for what sub hides. A hidden path stays hidden.
func (n *node) reveal(cs []string, sub *node) {
	for _, c := range cs {
		if n.hidden {
			return
		}
		n = n.child(c)
	}
	if n.hidden {
		return
	}
	n.rest = false
	if sub.hidden {
		n.hidden, n.kids, n.globs = true, nil, nil
		return
	}
	for k, v := range sub.kids {
		n.graft([]string{k}, v)
	}
}

type globKid struct {
	pat string
	n   *node
}

// add marks the path of components cs (globs allowed) as hidden beneath n.
func (n *node) add(cs []string) {
	for _, c := range cs {
		if n.hidden {
			return // already hidden whole
		}
		var next *node
		if strings.ContainsAny(c, `*?[\`) {
			for _, g := range n.globs {
				if g.pat == c {
					next = g.n
				}
			}
			if next == nil {
				next = &node{rest: n.rest}
				n.globs = append(n.globs, globKid{c, next})
			}
		} else {
			next = n.child(c)
		}
		n = next
	}
	n.hidden, n.kids, n.globs = true, nil, nil
}

// match returns what an entry of the directory n is: hidden, partly
// granted (walk into it: the merge of every matching kid), or granted
// (nil, false).
func (n *node) match(name string) (*node, bool) {
	return n.matchAt(-1, name)
}

// matchAt is match for the entry name of the directory open as fd, which
// also counts the kids spelled in another case that are the same entry
// there: in a directory that folds case (a casefold ext4 or tmpfs
// directory, vfat, exfat), a path written .ssh is the entry listed as
// .SSH, and is hidden, or walked, as what it is. Whether two spellings
// are one entry is asked of the directory itself (sameEntry: the kid's
// spelling looked up in fd leads to the listed entry's inode), so that on
// a case-sensitive file system .SSH and .ssh stay two paths, neither
// hiding nor revealing the other. fd -1 asks nothing.
func (n *node) matchAt(fd int, name string) (*node, bool) {
	if n.procs && isPID(name) {
		return nil, true
	}
	var hits []*node
	if k := n.kids[name]; k != nil {
		hits = append(hits, k)
	}
	if fd >= 0 {
		for kn, k := range n.kids {
			if kn != name && strings.EqualFold(kn, name) && sameEntry(fd, name, kn) {
				hits = append(hits, k)
			}
		}
	}
	for _, g := range n.globs {
		if ok, _ := path.Match(g.pat, name); ok {
			hits = append(hits, g.n)
		} else if low := strings.ToLower(name); fd >= 0 && low != name && sameEntry(fd, name, low) {
			if ok, _ := path.Match(strings.ToLower(g.pat), low); ok {
				hits = append(hits, g.n) // ID_RSA where the directory folds case
			}
		}
	}
	switch len(hits) {
	case 0:
		return nil, n.rest
	case 1:
		if hits[0].plain() {
			return nil, false
		}
		return hits[0], hits[0].hidden
	}
	merged := &node{}
	for _, h := range hits {
		if h.hidden {
			return nil, true
		}
		merged.rest = merged.rest || h.rest // the narrower reading wins
		for k, v := range h.kids {
			merged.graft([]string{k}, v)
		}
		merged.globs = append(merged.globs, h.globs...)
	}
	return merged, false
}

// sameEntry reports whether the names a and b lead to one entry (device
// and inode) of the directory open as fd: two spellings of one name in a
// directory that folds case. A name that cannot be looked up is not the
// other.
func sameEntry(fd int, a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Fstatat(fd, a, &sa, unix.AT_SYMLINK_NOFOLLOW) != nil || unix.Fstatat(fd, b, &sb, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// graft puts the subtree sub at the components cs beneath n.
func (n *node) graft(cs []string, sub *node) {
	for _, c := range cs {
		if n.hidden {
			return
		}
		n = n.child(c)
	}
	if sub.hidden {
		n.hidden, n.kids, n.globs = true, nil, nil
		return
	}
	for k, v := range sub.kids {
		n.graft([]string{k}, v)
	}
	n.globs = append(n.globs, sub.globs...)
	n.procs = n.procs || sub.procs
	n.rest = n.rest || sub.rest
}

func comps(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// grant is one rule to add.
type grant struct {
	dirfd  int // -1: name is absolute
	name   string
	rights uint64
	dir    bool // known to be a directory (d_type)
}

// planner walks the partly granted directories.
type planner struct {
	root   *node
	grants []grant
	dirs   []stamp
	links  []string // symlinks met where a hidden or partly granted entry is
	fds    []int    // directory fds to close once the rules are added
}

// build makes the ruleset of p: read (and execute) everything but the
// hidden paths, then p.Read, then p.Write, each with what rights that ABI
// can handle.
func build(p Policy, abi int) (*built, error) {
	root := &node{}
	for _, list := range [][]string{p.Private, p.Search} {
		for _, d := range list {
			if !filepath.IsAbs(d) || path.Clean(d) == "/" {
				return nil, fmt.Errorf("confine: directory %q: not absolute, or the whole file system: %w", d, ErrInvalidPolicy)
			}
		}
	}
	for _, d := range p.Private {
		root.private(comps(path.Clean(d)))
	}
	var searched []stamp
	budget := searchLimit
	for _, d := range p.Search {
		d = path.Clean(d)
		sub := search(d, &budget, &searched)
		root.reveal(comps(d), sub)
	}
	for _, h := range p.Hide {
		if !filepath.IsAbs(h) {
			return nil, fmt.Errorf("confine: hide %q: not absolute: %w", h, ErrInvalidPolicy)
		}
		c := path.Clean(h)
		if c == "/" {
			return nil, fmt.Errorf("confine: hide %q: the whole file system: %w", h, ErrInvalidPolicy)
		}
		root.add(comps(c))
	}
	root.prune() // /work, when all that is revealed in it is /work/proj, whole
	if p.HideProcesses && !root.kids["proc"].isHidden() {
		if root.kids == nil {
			root.kids = map[string]*node{}
		}
		if root.kids["proc"] == nil {
			root.kids["proc"] = &node{}
		}
		root.kids["proc"].procs = true
	}
	for _, list := range [][]string{p.Read, p.Write, p.Writable, p.Protect} {
		for _, w := range list {
			if !filepath.IsAbs(w) {
				return nil, fmt.Errorf("confine: path %q: not absolute: %w", w, ErrInvalidPolicy)
			}
		}
	}

	// Plan, and where a hidden or partly granted entry is a symlink, hide
	// (or walk) what it points to as well, and plan again.
	var pl *planner
	grafted := map[string]bool{}
	for round := 0; ; round++ {
		pl = &planner{root: root}
		pl.walk(-1, "/", "/", root)
		var fresh []string
		for _, l := range pl.links {
			if !grafted[l] {
				grafted[l] = true
				fresh = append(fresh, l)
			}
		}
		if len(fresh) == 0 {
			break
		}
		pl.close()
		if round == 8 {
			return nil, fmt.Errorf("confine: symlinks to hidden paths nest deeper than 8: %w", ErrInvalidPolicy)
		}
		for _, l := range fresh {
			sub := root
			for _, c := range comps(l) {
				if sub, _ = sub.match(c); sub == nil {
					break
				}
			}
			target, err := filepath.EvalSymlinks(l)
			if err != nil || sub == nil {
				continue
			}
			if target == "/" {
				return nil, fmt.Errorf("confine: hide %s: a symlink to the whole file system: %w", l, ErrInvalidPolicy)
			}
			root.graft(comps(target), sub)
		}
	}
	defer pl.close()

	attr := ll.RulesetAttr{HandledAccessFS: handledFS(abi), HandledAccessNet: handledNet(abi), Scoped: scoped(abi)}
	if p.Network {
		// sockets stay as an unconfined command has them: TCP, and the
		// abstract unix sockets of other processes; signals stay scoped
		attr.HandledAccessNet, attr.Scoped = 0, attr.Scoped&^ll.ScopeAbstractUnixSocket
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return nil, fmt.Errorf("confine: create ruleset: %w: %w", ErrUnavailable, err)
	}
	b := &built{fd: fd, dirs: append(pl.dirs, searched...)}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if err := b.addRules(pl.grants, attr.HandledAccessFS); err != nil {
		return nil, err
	}
	// Read and Write are exceptions to Hide: their rules come on top.
	for _, w := range p.Read {
		if err := b.rule(grant{dirfd: -1, name: w, rights: readFile | readDir}, attr.HandledAccessFS); err != nil {
			return nil, err
		}
	}
	for _, w := range p.Write {
		if err := b.rule(grant{dirfd: -1, name: w, rights: readFile | readDir | writeFile}, attr.HandledAccessFS); err != nil {
			return nil, err
		}
	}
	for _, w := range p.Writable {
		if err := b.rule(grant{dirfd: -1, name: w, rights: writeTree}, attr.HandledAccessFS); err != nil {
			return nil, err
		}
	}
	ok = true
	return b, nil
}

func (n *node) isHidden() bool { return n != nil && n.hidden }

// walk plans the rules of dir (a partly granted directory, open as
// parent's entry name, or "/"): listing it (and, Landlock being
// hierarchical, the directories beneath), and reading each entry but the
// hidden ones; it walks into entries with hidden paths beneath.
func (pl *planner) walk(parent int, name, abs string, n *node) {
	var fd int
	var err error
	if parent < 0 {
		fd, err = unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	} else {
		fd, err = unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		// gone, or not a directory any more: nothing under it is granted,
		// and its absence is what the cache checks
		pl.dirs = append(pl.dirs, stamp{path: abs, missing: true})
		return
	}
	pl.fds = append(pl.fds, fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return
	}
	pl.dirs = append(pl.dirs, stamp{abs, st.Dev, st.Ino, st.Mtim, st.Ctim, false})
	pl.grants = append(pl.grants, grant{dirfd: fd, name: ".", rights: readDir, dir: true})
	ents, err := listDir(fd, n.procs)
	if err != nil {
		return
	}
	for _, e := range ents {
		k, hidden := n.matchAt(fd, e.name)
		if e.typ == unix.DT_LNK {
			if hidden || k != nil {
				pl.links = append(pl.links, path.Join(abs, e.name))
			}
			continue // what it points to is granted, or not, where it is
		}
		switch {
		case hidden:
		case k != nil:
			pl.walk(fd, e.name, path.Join(abs, e.name), k)
		default:
			pl.grants = append(pl.grants, grant{dirfd: fd, name: e.name, rights: readFile | readDir, dir: e.typ == unix.DT_DIR})
		}
	}
}

// search plans the directory dir: a node that hides every entry at any
// depth beneath that a Leak row covers, and what the budget of names did
// not reach. It goes breadth first, so that a budget spent leaves the
// deepest directories unsearched (hidden), not a whole sibling of a large
// one; it does not go into .git directories nor follow symlinks
// (RESOLVE_NO_SYMLINKS: a directory swapped for a link since it was
// listed is not searched, and so hidden); it stamps each directory it
// lists, for the cache.
func search(dir string, budget *int, stamps *[]stamp) *node {
	root := &node{}
	rootFd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		*stamps = append(*stamps, stampOf(dir))
		return root // a file, or gone: the walk grants it as it finds it
	}
	defer unix.Close(rootFd)
	type item struct {
		n   *node
		rel string   // beneath dir, "." for dir itself
		cs  []string // the absolute path's components
	}
	queue := []item{{root, ".", comps(dir)}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if *budget <= 0 {
			it.n.hidden = true // not searched: not read
			continue
		}
		fd := rootFd
		if it.rel != "." {
			fd, err = unix.Openat2(rootFd, it.rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
			if err != nil {
				it.n.hidden = true // swapped or gone since it was listed
				continue
			}
		}
		ents, err := stampAndList(fd, path.Join(dir, it.rel), stamps)
		if fd != rootFd {
			unix.Close(fd)
		}
		if err != nil {
			it.n.hidden = true
			continue
		}
		*budget -= len(ents)
		for _, e := range ents {
			kcs := append(it.cs[:len(it.cs):len(it.cs)], e.name)
			switch {
			case sensitive.FirstComps(kcs, false) >= 0:
				it.n.child(e.name).hidden = true
			case e.typ == unix.DT_DIR && !sensitive.IsGit(e.name):
				queue = append(queue, item{it.n.child(e.name), path.Join(it.rel, e.name), kcs})
			}
		}
	}
	root.prune()
	return root
}

// stampAndList stamps the directory open as fd (at abs) and lists it.
func stampAndList(fd int, abs string, stamps *[]stamp) ([]dirent, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	*stamps = append(*stamps, stamp{abs, st.Dev, st.Ino, st.Mtim, st.Ctim, false})
	return listDir(fd, false)
}

// prune drops the kids that hide nothing, bottom up: granted whole by
// their parent's walk, as they would be, with no walk of their own. A
// private directory keeps them (what it does not name, it hides).
func (n *node) prune() {
	for k, v := range n.kids {
		v.prune()
		if v.plain() && !n.rest {
			delete(n.kids, k)
		}
	}
}

func (pl *planner) close() {
	for _, fd := range pl.fds {
		unix.Close(fd)
	}
	pl.fds = nil
}

type dirent struct {
	name string
	typ  uint8
}

// listDir lists the directory open as fd, with each entry's type
// (DT_UNKNOWN resolved with fstatat). With untilPID (/proc under
// HideProcesses) it stops at the first process entry: /proc lists its
// other entries first, then self, thread-self and the processes, and each
// process listed costs the kernel a lookup. Should another kernel mix
// them, what is not listed is only refused.
// dirBufs are listDir's buffers: a search lists thousands of directories.
var dirBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func listDir(fd int, untilPID bool) ([]dirent, error) {
	var out []dirent
	bp := dirBufs.Get().(*[]byte)
	defer dirBufs.Put(bp)
	buf := *bp
	if untilPID {
		buf = buf[:2<<10] // /proc's other entries, a little more
	}
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name
			reclen := int(b[16]) | int(b[17])<<8
			typ := b[18]
			nm := b[19:reclen]
			if i := bytes.IndexByte(nm, 0); i >= 0 {
				nm = nm[:i]
			}
			b = b[reclen:]
			name := string(nm)
			if name == "." || name == ".." {
				continue
			}
			if untilPID && isPID(name) {
				return out, nil
			}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					switch st.Mode & unix.S_IFMT {
					case unix.S_IFDIR:
						typ = unix.DT_DIR
					case unix.S_IFLNK:
						typ = unix.DT_LNK
					default:
						typ = unix.DT_REG
					}
				}
			}
			out = append(out, dirent{name, typ})
		}
	}
	return out, nil
}

// addRules adds the rules of grants, split among up to GOMAXPROCS threads:
// each is an open, a landlock_add_rule and a close, and the kernel takes
// them from several threads at once (the ruleset's own lock is held only
// to insert the rule). Built beside a run's other work, the ruleset is
// then ready sooner where a core is free.
func (b *built) addRules(grants []grant, mask uint64) error {
	n := min(runtime.GOMAXPROCS(0), len(grants)/minGrantsPerThread, maxBuildThreads)
	if n <= 1 {
		for _, g := range grants {
			if err := b.rule(g, mask); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		part := grants[i*len(grants)/n : (i+1)*len(grants)/n]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, g := range part {
				if err := b.rule(g, mask); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// The threads addRules uses: one per this many grants, this many at most.
const (
	minGrantsPerThread = 64
	maxBuildThreads    = 4
)

// rule adds g (only the file rights when it is not a directory). A path
// that is gone, or a symlink, gets nothing.
func (b *built) rule(g grant, mask uint64) error {
	var fd int
	var err error
	if g.dirfd < 0 {
		fd, err = unix.Open(g.name, unix.O_PATH|unix.O_CLOEXEC, 0) // Read and Write: symlinks followed
	} else {
		fd, err = unix.Openat(g.dirfd, g.name, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	rights := g.rights
	if !g.dir && g.dirfd >= 0 {
		// listed as a non-directory: file rights, which Landlock accepts
		// on a directory too, should it have been replaced by one since
		rights &^= dirOnly
	} else if !g.dir {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return nil
		case unix.S_IFDIR:
		default:
			rights &^= dirOnly
		}
	}
	rights &= mask
	if rights == 0 {
		return nil
	}
	attr := ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: fd}
	if err := ll.LandlockAddPathBeneathRule(b.fd, &attr, 0); err != nil {
		if err == unix.EINVAL && g.dir {
			// replaced by a non-directory since it was listed: grant it
			// as a file, or not at all
			return b.rule(grant{dirfd: g.dirfd, name: g.name, rights: g.rights}, mask)
		}
		return fmt.Errorf("confine: rule on %s: %w: %w", g.name, ErrUnavailable, err)
	}
	b.rules.Add(1)
	return nil
}

// dirOnly are the rights Landlock accepts on directories only.
const dirOnly = ll.AccessFSReadDir | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
	ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
	ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer

// isPID reports whether a /proc entry names a process.
func isPID(name string) bool {
	for _, c := range name {
		if c < '0' || c > '9' {
			return false
		}
	}
	return name != ""
}

// findRows walks dir as search does (breadth first, no symlink followed,
// at most limit names) and returns the paths beneath it that a Leak row
// covers, and those an Implant row covers or git's view of the tree
// makes one (implantAt); in a .git directory it goes only where a row may
// lie beneath (its config, hooks, objects/info: not the objects
// themselves).
// Past limit names it stops, with complete false: breadth first, what is
// left unsearched is the deepest part of the tree. A directory that
// changed while it was searched, or cannot be listed, is an error.
func findRows(dir string, limit int) (leaks, implants []string, complete bool, err error) {
	return walkRows(dir, limit, nil)
}

// Sweep removes from the tree dir what a workspace run may have made
// where no bind could be put: each path an Implant row covers, or git's
// view of the tree makes one (a .git that is not a directory, a config
// or hooks/ in a directory git takes for a repository under any name),
// symbolic links included, but for those keep names (the paths the run's
// binds held: they were there before it). Each is removed from the
// directory the walk opened, not by its path (a directory swapped for a
// link meanwhile redirects nothing). The walk goes on past what it cannot
// open or remove; err says what it could not look at or remove, and
// complete is false past SearchLimit names: either way what it found is
// removed, and the caller fails the run.
func Sweep(dir string, keep []string) (removed []string, complete bool, err error) {
	sw := &sweeper{keep: keep}
	_, _, complete, err = walkRows(dir, searchLimit, sw)
	return sw.removed, complete, errors.Join(append(sw.problems, err)...)
}

// sweeper is what Sweep keeps and has done as walkRows goes.
type sweeper struct {
	keep     []string
	removed  []string
	problems []error
	rootFd   int
}

// remove removes the entry name of the directory open as fd (abs, rel
// beneath the swept tree), a directory with all it holds: moved to a
// name of its own in the tree's top first, from this very directory, then
// removed beneath the top with no symbolic link followed (os.Root).
func (sw *sweeper) remove(dir string, fd int, name, rel string, isDir bool) {
	if !isDir {
		err := unix.Unlinkat(fd, name, 0)
		if err == nil || err == unix.ENOENT {
			sw.removed = append(sw.removed, rel)
			return
		}
		if err != unix.EISDIR && err != unix.EPERM {
			sw.problems = append(sw.problems, fmt.Errorf("remove %s: %w", rel, err))
			return
		}
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := ".ccrun-swept-" + hex.EncodeToString(b[:])
	if err := unix.Renameat2(fd, name, sw.rootFd, tmp, unix.RENAME_NOREPLACE); err != nil {
		sw.problems = append(sw.problems, fmt.Errorf("remove %s: %w", rel, err))
		return
	}
	root, err := os.OpenRoot(dir)
	if err == nil {
		err = root.RemoveAll(tmp)
		root.Close()
	}
	if err != nil {
		sw.problems = append(sw.problems, fmt.Errorf("remove %s (moved to %s): %w", rel, tmp, err))
		return
	}
	sw.removed = append(sw.removed, rel)
}

// implantAt reports whether the entry name (of type typ) of a directory
// whose path's components are cs is one a workspace run may not make or
// change: a row of the table covers it (Implant: implant true), or git's
// view of the tree makes it one — a .git that is not a directory (a
// gitfile names any directory as the repository), or, beneath a
// directory git takes for a repository under another name than .git (gitAt
// its components' count, -1 for none), a path a row under .git/ covers
// there (config, hooks/, commondir...).
func implantAt(cs []string, name string, typ uint8, gitAt int) (row int, implant, ok bool) {
	kcs := append(cs[:len(cs):len(cs)], name)
	if i := sensitive.FirstComps(kcs, true); i >= 0 {
		return i, sensitive.Table()[i].Kind == sensitive.Implant, true
	}
	if sensitive.IsGit(name) && typ != unix.DT_DIR {
		return -1, true, true
	}
	if gitAt >= 0 && gitAt < len(kcs) {
		if _, ok := sensitive.GitRow(kcs[gitAt:]); ok {
			return -1, true, true
		}
	}
	return -1, false, false
}

// gitLike reports whether a directory holding ents is one git takes for
// a repository (sensitive.GitLike), in any case.
func gitLike(ents []dirent) bool {
	return sensitive.GitLike(func(n string) bool {
		for _, e := range ents {
			if strings.EqualFold(e.name, n) {
				return true
			}
		}
		return false
	})
}

// queueHook, when set (tests), is called before walkRows opens each
// directory it listed: where a racing writer would swap it.
var queueHook func(rel string)

func walkRows(dir string, limit int, sw *sweeper) (leaks, implants []string, complete bool, err error) {
	rootFd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, false, fmt.Errorf("confine: search %s: %w", dir, err)
	}
	defer unix.Close(rootFd)
	if sw != nil {
		sw.rootFd = rootFd
	}
	type item struct {
		rel   string
		cs    []string
		inGit bool
		gitAt int // the components' count of the repository it lies in under another name; -1: none
	}
	queue := []item{{".", comps(dir), false, -1}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		fd := rootFd
		if it.rel != "." {
			if queueHook != nil {
				queueHook(it.rel)
			}
			fd, err = unix.Openat2(rootFd, it.rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
			if err != nil {
				err = fmt.Errorf("confine: search %s: %s changed while it was searched: %w", dir, it.rel, err)
				if sw == nil {
					return nil, nil, false, err
				}
				sw.problems = append(sw.problems, err)
				continue
			}
		}
		ents, err := listDir(fd, false)
		if err != nil {
			if fd != rootFd {
				unix.Close(fd)
			}
			err = fmt.Errorf("confine: search %s: %s: %w", dir, it.rel, err)
			if sw == nil {
				return nil, nil, false, err
			}
			sw.problems = append(sw.problems, err)
			continue
		}
		if limit -= len(ents); limit < 0 {
			if fd != rootFd {
				unix.Close(fd)
			}
			return leaks, implants, false, nil
		}
		gitAt := it.gitAt
		if !it.inGit && gitLike(ents) {
			gitAt = len(it.cs) // a repository under this name: the rows under .git/ apply beneath
		}
		for _, e := range ents {
			abs := path.Join(dir, it.rel, e.name)
			rel := path.Join(it.rel, e.name)
			if _, implant, ok := implantAt(it.cs, e.name, e.typ, gitAt); ok {
				switch {
				case e.typ == unix.DT_LNK && !implant:
					// what it points to is judged where it is
				case sw != nil && implant && !slices.Contains(sw.keep, abs):
					sw.remove(dir, fd, e.name, rel, e.typ == unix.DT_DIR)
				case sw != nil:
				case e.typ == unix.DT_LNK:
					unix.Close(fd)
					return nil, nil, false, fmt.Errorf("confine: %s is protected, and a symbolic link, which a bind cannot keep in place: %w", abs, ErrInvalidPolicy)
				case !implant:
					leaks = append(leaks, abs)
				default:
					implants = append(implants, abs)
				}
				continue
			}
			// in a .git directory, only where a row may lie beneath
			// (.git/objects/info/alternates), not the objects themselves
			if e.typ == unix.DT_DIR && (!it.inGit || sensitive.Above(rel)) {
				queue = append(queue, item{rel, append(it.cs[:len(it.cs):len(it.cs)], e.name), it.inGit || sensitive.IsGit(e.name), gitAt})
			}
		}
		if fd != rootFd {
			unix.Close(fd)
		}
	}
	return leaks, implants, true, nil
}
