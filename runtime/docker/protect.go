package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/ccrun/ccrun/internal/sensitive"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/docker/docker/api/types/mount"
)

// The bound of the walks of a writable mount's source, before and after a
// run (entries; there is no bound on depth, which a container chooses).
// Past it the run is refused (before), or fails after what was found is
// removed (after).
const maxWalkEntries = 200_000

// protection keeps the protected paths (job.Mount.Protected) under a run's
// writable mounts read-only inside the container:
//
//   - each that exists is bound read-only over itself (non-recursive, so
//     that no host mount beneath it comes along writable);
//   - each top-level implant name that does not exist (.envrc,
//     ccrun.local.json, .vscode, and .git/hooks, .git/config... when .git
//     exists) gets a read-only bind of an empty placeholder from a private
//     temporary directory; the engine creates the mountpoint, an empty file
//     or directory, in the host directory, and finish removes it;
//   - a protected path a container still makes deeper (git init sub) is
//     found by finish, after the run, and removed.
//
// A protected path, or one a protected path could lie under (.git,
// .config), that is a symbolic link cannot be protected by a bind (the
// container could replace the link): the run is refused.
type protection struct {
	binds  []mount.Mount
	tmp    string // the placeholders' directory; "" when none
	mounts []protectedMount
}

type protectedMount struct {
	m      job.Mount
	src    string              // the resolved source
	before map[string]entryID  // the protected paths found before the run
	git    map[string]bool     // the .git, HEAD, objects, refs, commondir entries before the run
	made   map[string]struct{} // the placeholders' mountpoints, relative to src
}

// entryID tells a path's object apart from another one put in its place.
type entryID struct {
	mode fs.FileMode
	dev  uint64
	ino  uint64
}

func idOf(st fs.FileInfo) entryID {
	id := entryID{mode: st.Mode().Type()}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(s.Dev), s.Ino
	}
	return id
}

// protect prepares the protection of s's writable mounts. Errors are
// ErrInvalidArgument: a mount too big to check, a protected symbolic link,
// a bad Implants entry.
func protect(s Spec) (*protection, error) {
	p := &protection{}
	for _, m := range s.Mounts {
		if !m.Writable {
			continue
		}
		if err := m.CheckImplants(); err != nil {
			p.cleanup()
			return nil, newError(ErrInvalidArgument, err, "docker: mount %s", m)
		}
		src, err := filepath.EvalSymlinks(m.Host)
		if err != nil {
			p.cleanup()
			return nil, newError(ErrInvalidArgument, err, "docker: mount %s", m)
		}
		pm := protectedMount{m: m, src: src, made: map[string]struct{}{}}
		found, git, err := walkProtected(m, src)
		if err != nil {
			p.cleanup()
			return nil, newError(ErrInvalidArgument, err, "docker: mount %s: protected paths cannot be kept read-only", m)
		}
		pm.before, pm.git = found, git
		for _, rel := range sortedKeys(found) {
			p.binds = append(p.binds, roBind(filepath.Join(src, filepath.FromSlash(rel)), path.Join(m.Guest, rel)))
		}
		for _, ph := range placeholders(m, src) {
			if p.tmp == "" {
				if p.tmp, err = os.MkdirTemp("", "ccrun-protect-"); err != nil {
					return nil, newError(ErrInvalidArgument, err, "docker: mount %s: placeholders", m)
				}
			}
			host, err := placeholder(p.tmp, len(p.binds), ph.dir)
			if err != nil {
				p.cleanup()
				return nil, newError(ErrInvalidArgument, err, "docker: mount %s: placeholder for %s", m, ph.rel)
			}
			p.binds = append(p.binds, roBind(host, path.Join(m.Guest, ph.rel)))
			pm.made[ph.rel] = struct{}{}
		}
		p.mounts = append(p.mounts, pm)
	}
	return p, nil
}

func roBind(src, target string) mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: src, Target: target, ReadOnly: true,
		BindOptions: &mount.BindOptions{NonRecursive: true}}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// walkProtected walks src (never following a symbolic link) and returns
// the topmost protected paths under it (job.Mount.ProtectedIn: by name and
// as git sees the tree), relative and slash-separated, and the entries
// git's view of a directory depends on (.git, HEAD, objects, refs,
// commondir: see walkAfter). A protected directory is not entered, unless
// Implants names something in it. A symbolic link at a protected path or
// above one (.git, .config) is an error, and so is a tree past the walk's
// bounds.
func walkProtected(m job.Mount, src string) (map[string]entryID, map[string]bool, error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	found := map[string]entryID{}
	git := map[string]bool{}
	n := 0
	stack := []string{"."}
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, err := root.Open(dir)
		if err != nil {
			continue // unreadable here: the container (not root) cannot read it either
		}
		ents, err := f.ReadDir(-1)
		_ = f.Close()
		if err != nil {
			continue
		}
		for _, e := range ents {
			if n++; n > maxWalkEntries {
				return nil, nil, fmt.Errorf("more than %d entries", maxWalkEntries)
			}
			rel := path.Join(dir, e.Name())
			if gitEntry(e.Name()) {
				git[rel] = true
			}
			_, prot := m.ProtectedIn(root, rel)
			if e.Type()&fs.ModeSymlink != 0 {
				if prot || (sensitive.Above(rel) && !namesUnder(m, rel)) {
					return nil, nil, fmt.Errorf("%s is a symbolic link, which a container could replace: mount it read-only, or name it in the mount's implants", rel)
				}
				continue
			}
			if prot && !namesUnder(m, rel) {
				st, err := root.Lstat(rel)
				if err != nil {
					continue
				}
				found[rel] = idOf(st)
				continue
			}
			if e.IsDir() {
				stack = append(stack, rel)
			}
		}
	}
	return found, git, nil
}

// gitEntry reports whether name is one of the entries git's view of a
// directory depends on: .git, and those that make it a repository.
func gitEntry(name string) bool { return name == ".git" || sensitive.GitMark(name) }

// hiding is a tree without some of its entries (and what is under them):
// the tree as the sweep will leave it, for judging the rest.
type hiding struct {
	root   *os.Root
	hidden map[string]bool
}

func (h hiding) Lstat(name string) (fs.FileInfo, error) {
	for p := name; len(h.hidden) > 0 && p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if h.hidden[p] {
			return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
		}
	}
	return h.root.Lstat(name)
}

// namesUnder reports whether m's Implants name rel or a path under it.
func namesUnder(m job.Mount, rel string) bool {
	for _, p := range m.Implants {
		if p == rel || strings.HasPrefix(p, rel+"/") || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

type placeholderPath struct {
	rel string
	dir bool
}

// placeholders lists the implant rows of literal names that do not exist
// under src and whose directory does (.envrc; .git/hooks when .git is a
// directory): each gets an empty read-only placeholder.
func placeholders(m job.Mount, src string) []placeholderPath {
	var out []placeholderPath
	seen := map[string]bool{}
	for _, r := range sensitive.Table() {
		if r.Abs || r.Kind != sensitive.Implant || strings.ContainsAny(strings.Join(r.Seq, "/"), "*?[\\") {
			continue
		}
		rel := strings.Join(r.Seq, "/")
		if seen[rel] {
			continue
		}
		seen[rel] = true
		if _, prot := m.Protected(rel); !prot || namesUnder(m, rel) || r.EmptyMatters() {
			continue // EmptyMatters: an empty file or directory there is not nothing to git
		}
		full := filepath.Join(src, filepath.FromSlash(rel))
		if _, err := os.Lstat(full); err == nil || !os.IsNotExist(err) {
			continue
		}
		if parent := path.Dir(rel); parent != "." {
			st, err := os.Lstat(filepath.Join(src, filepath.FromSlash(parent)))
			if err != nil || !st.IsDir() {
				continue
			}
			if _, prot := m.Protected(parent); prot {
				continue // inside a protected directory, bound already
			}
		}
		out = append(out, placeholderPath{rel: rel, dir: r.Dir})
	}
	return out
}

// placeholder makes the i-th empty placeholder in tmp: a directory (0555)
// or a file (0444).
func placeholder(tmp string, i int, dir bool) (string, error) {
	p := filepath.Join(tmp, fmt.Sprintf("p%d", i))
	if dir {
		if err := os.Mkdir(p, 0o755); err != nil {
			return "", err
		}
		return p, os.Chmod(p, 0o555)
	}
	return p, os.WriteFile(p, nil, 0o444)
}

// cleanup removes the placeholders' directory.
func (p *protection) cleanup() {
	if p.tmp != "" {
		_ = os.Chmod(p.tmp, 0o700)
		ents, _ := os.ReadDir(p.tmp)
		for _, e := range ents {
			_ = os.Chmod(filepath.Join(p.tmp, e.Name()), 0o700)
		}
		_ = os.RemoveAll(p.tmp)
		p.tmp = ""
	}
}

// finish runs once the container is gone. It removes the placeholders'
// mountpoints the engine made (when still empty), then walks each
// writable mount again: a protected path that appeared is removed, one
// that disappeared or was replaced is reported. It returns what it did,
// for the Result's Detail ("" when nothing happened), and an error when a
// mount could not be checked everywhere or what was planted could not all
// be removed: the run then fails (what was found is removed first).
func (p *protection) finish() (string, error) {
	defer p.cleanup()
	var notes []string
	var fails []string
	for _, pm := range p.mounts {
		root, err := os.OpenRoot(pm.src)
		if err != nil {
			fails = append(fails, fmt.Sprintf("mount %s: cannot check protected paths after the run: %v", pm.m, err))
			continue
		}
		for _, rel := range sortedKeys(pm.made) {
			removeEmpty(root, rel)
		}
		after, err := walkAfter(pm.m, root, pm.git)
		if err != nil {
			fails = append(fails, fmt.Sprintf("mount %s: protected paths not all checked after the run: %v", pm.m, err))
		}
		var removed, gone, replaced []string
		for _, rel := range sortedKeys(after) {
			if id, ok := pm.before[rel]; !ok {
				if err := root.RemoveAll(rel); err == nil {
					removed = append(removed, rel)
				} else {
					fails = append(fails, fmt.Sprintf("mount %s: cannot remove %s, which the container created: %v", pm.m, rel, err))
				}
			} else if id != after[rel] {
				replaced = append(replaced, rel)
			}
		}
		for _, rel := range sortedKeys(pm.before) {
			if _, ok := after[rel]; !ok {
				// Still there, the same, yet no longer protected: its
				// directory is no repository now (the container removed
				// its HEAD). Not gone.
				if st, err := root.Lstat(rel); err == nil && idOf(st) == pm.before[rel] {
					continue
				}
				gone = append(gone, rel)
			}
		}
		_ = root.Close()
		if len(removed) > 0 {
			notes = append(notes, fmt.Sprintf("mount %s: removed protected paths the container created: %s", pm.m, strings.Join(removed, ", ")))
		}
		if len(gone) > 0 {
			notes = append(notes, fmt.Sprintf("mount %s: protected paths moved or removed by the container: %s", pm.m, strings.Join(gone, ", ")))
		}
		if len(replaced) > 0 {
			notes = append(notes, fmt.Sprintf("mount %s: protected paths replaced by the container: %s", pm.m, strings.Join(replaced, ", ")))
		}
	}
	if len(fails) > 0 {
		return strings.Join(notes, "; "), errors.New(strings.Join(fails, "; "))
	}
	return strings.Join(notes, "; "), nil
}

// removeEmpty removes rel when it is an empty file or directory (what the
// engine makes as a mountpoint).
func removeEmpty(root *os.Root, rel string) {
	st, err := root.Lstat(rel)
	if err != nil {
		return
	}
	if (st.Mode().IsRegular() && st.Size() == 0) || st.IsDir() {
		_ = root.Remove(rel) // a directory only goes when empty
	}
}

// walkAfter is walkProtected on the tree a container left: a symbolic
// link at a protected path, or above one, is found like any other entry
// (to be removed, being new). In each directory, what sensitive.GitMade
// names against git (the entries of those kinds before the run) is found
// too: a new .git, and the new HEAD, objects, refs or commondir of a
// directory the container made a repository; the rest of the tree is
// judged as it will be without them. It walks with a stack, not by
// recursion, and has no depth bound: a container that makes a tree deeper
// than any bound would keep what it planted below it. It stops only past
// 4*maxWalkEntries entries, returning what it found so far and an error
// (the run then fails: see finish).
func walkAfter(m job.Mount, root *os.Root, git map[string]bool) (map[string]entryID, error) {
	found := map[string]entryID{}
	view := hiding{root: root, hidden: map[string]bool{}}
	n := 0
	stack := []string{"."}
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, err := root.Open(dir)
		if err != nil {
			continue // unreadable here: the container (not root) could not have written under it either
		}
		ents, err := f.ReadDir(-1)
		_ = f.Close()
		if err != nil {
			continue
		}
		var names []string
		for _, e := range ents {
			if gitEntry(e.Name()) {
				names = append(names, e.Name())
			}
		}
		for _, name := range sensitive.GitMade(names, func(name string) bool { return git[path.Join(dir, name)] }) {
			rel := path.Join(dir, name)
			if namesUnder(m, rel) {
				continue
			}
			if st, err := root.Lstat(rel); err == nil {
				found[rel] = idOf(st)
			}
			view.hidden[rel] = true
		}
		for _, e := range ents {
			if n++; n > 4*maxWalkEntries {
				return found, fmt.Errorf("more than %d entries", 4*maxWalkEntries)
			}
			rel := path.Join(dir, e.Name())
			if view.hidden[rel] {
				continue
			}
			_, prot := m.ProtectedIn(view, rel)
			// A link at .git or .config is new (protect refused the
			// run when there was one): it names what it points at.
			link := e.Type()&fs.ModeSymlink != 0 && sensitive.Above(rel)
			if (prot || link) && !namesUnder(m, rel) {
				if st, err := root.Lstat(rel); err == nil {
					found[rel] = idOf(st)
				}
				continue
			}
			if e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
				stack = append(stack, rel)
			}
		}
	}
	return found, nil
}
