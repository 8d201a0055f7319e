package sensitive

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"
)

// Git's view of a tree. The table's rows name paths; git also reads a tree
// by what it holds (gitrepository-layout(5), and how git finds a
// repository: in each directory from the working one up, a .git entry, or
// the directory itself):
//
//   - a directory holding HEAD and objects and refs, or HEAD and commondir
//     (which names where objects and refs are), is a repository under any
//     name: git reads its config, runs its hooks, follows its commondir;
//   - a .git that is a file ("gitdir: PATH", a gitfile) makes PATH the
//     repository of the directory it is in.
//
// Git reports what a sandbox may not make or change for that reason; the
// rows under .git/ (config, hooks/, commondir, ...) say what in such a
// directory git reads as configuration or code. HEAD, refs/, packed-refs,
// objects/ (but objects/info/alternates), the index and the logs stay
// writable in a repository that exists: they are history and content, and
// a person who mounts a repository rw may want commits.

// FS is what the checks of git's view read of a tree: the entry at a
// slash-separated path relative to the tree's top, a final symbolic link
// not followed. *os.Root is one.
type FS interface {
	Lstat(name string) (fs.FileInfo, error)
}

// The rows of git's view that are shapes, not names: what Git returns
// when no row of the table covers the path.
var (
	gitFileRow = Row{Seq: []string{".git"}, Kind: Implant,
		What: "a .git that is not a directory (a gitfile: git takes the directory it names for the repository)"}
	gitDirRow = Row{Seq: []string{"HEAD"}, Kind: Implant,
		What: "what makes a directory a repository to git (HEAD beside objects/ and refs/, or beside commondir)"}
)

// GitShapes returns the rows Git reports by what a tree holds rather than
// by name: a .git that is not a directory, and the entries that make a
// directory a repository. docs/policy.md lists them.
func GitShapes() []Row { return []Row{gitFileRow, gitDirRow} }

// GitMark reports whether name is one of the entries that make a
// directory a repository to git: HEAD, objects, refs, commondir.
func GitMark(name string) bool {
	switch strings.ToLower(name) {
	case "head", "objects", "refs", "commondir":
		return true
	}
	return false
}

// IsGit reports whether name is .git, in any case: on a file system that
// folds case (macOS's, Windows', a vfat or casefold mount) git finds a
// .GIT as its .git. Every name of the table matches in any case, for the
// same reason: the check errs towards protection where case matters.
func IsGit(name string) bool { return strings.EqualFold(name, ".git") }

// GitLike reports whether git takes a directory for a repository, given
// has, which says whether the directory holds an entry of a name: it
// holds HEAD, and objects and refs or commondir. Entries of any kind
// count (git itself wants HEAD a file or a link and objects and refs
// searchable): the check errs towards a repository.
func GitLike(has func(name string) bool) bool {
	return has("HEAD") && (has("commondir") || has("objects") && has("refs"))
}

// GitMade returns, of the entries a directory holds after a sandbox ran
// (names; had reports whether one of a name was there before), those to
// remove so that git reads nothing new there: a .git that was not there,
// and, when the directory is now a repository (GitLike) and was not, the
// entries among HEAD, objects, refs and commondir it did not have (so
// that nothing that was there goes, and the directory is no repository
// again). What the @docker sweep and the Kubernetes copy-back, which see
// a tree after the fact, ask of each directory; the @wasm guard asks Git
// at each write instead.
func GitMade(names []string, had func(name string) bool) []string {
	var out []string
	var marks [4]string
	n := 0
	for _, name := range names {
		switch {
		case IsGit(name) && !had(name):
			out = append(out, name)
		case GitMark(name) && n < len(marks):
			marks[n] = name
			n++
		}
	}
	has := func(name string) bool {
		for _, m := range marks[:n] {
			if strings.EqualFold(m, name) {
				return true
			}
		}
		return false
	}
	if GitLike(has) {
		for _, m := range marks[:n] {
			if !had(m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// GitDir reports whether git takes dir, a directory of fsys ("." for its
// top), for a repository (GitLike).
func GitDir(fsys FS, dir string) bool {
	return GitLike(func(name string) bool { return exists(fsys, join(dir, name)) })
}

// Git reports whether rel, a slash-separated path of fsys, is one git
// reads as configuration or code by what the tree holds, and may not be
// made, changed or removed by a sandbox:
//
//   - a .git that is not a directory, or one not there yet in a directory
//     that is (a sandbox makes no new .git: a gitfile would name any
//     directory as the repository);
//   - in a directory git takes for a repository (GitDir), whatever its
//     name, a path a row under .git/ covers there (config, hooks/,
//     commondir, worktrees/...): the row is returned;
//   - HEAD, objects, refs or commondir not there yet whose making would
//     make its directory a repository.
//
// The table's rows by name (Under) are not asked: job.Mount.ProtectedIn
// asks both. An entry whose state cannot be read counts as there.
func Git(fsys FS, rel string) (Row, bool) {
	rel = strings.Trim(path.Clean("/"+rel), "/")
	if rel == "" {
		return Row{}, false
	}
	comps := strings.Split(rel, "/")
	last := comps[len(comps)-1]
	parent := join(comps[:len(comps)-1]...)
	lc := lower(comps)
	if IsGit(last) {
		st, err := fsys.Lstat(rel)
		switch {
		case err == nil:
			if !st.IsDir() {
				return gitFileRow, true
			}
		case !absent(err) || isDir(fsys, parent):
			return gitFileRow, true
		}
	}
	t := built()
	for i, c := range lc {
		if _, ok := t.gitFirst[c]; !ok {
			continue
		}
		if r, ok := t.gitRow(lc[i:]); ok && GitDir(fsys, join(comps[:i]...)) {
			return r, true
		}
	}
	if GitMark(last) && !exists(fsys, rel) {
		has := func(name string) bool { return strings.EqualFold(name, last) || exists(fsys, join(parent, name)) }
		if GitLike(has) {
			return gitDirRow, true
		}
	}
	return Row{}, false
}

// GitRow returns the row under .git/ (config, hooks/, commondir...) that
// covers comps, a path cut into its components relative to a directory
// git takes for a repository (GitLike) whatever its name, in any case:
// what a walk that has listed such a directory asks of what lies beneath.
func GitRow(comps []string) (Row, bool) {
	if len(comps) == 0 {
		return Row{}, false
	}
	return built().gitRow(lower(comps))
}

// gitRow returns the row under .git/ that covers comps, a path relative
// to a repository's directory, in lower case.
func (t *table) gitRow(comps []string) (Row, bool) {
	for _, i := range t.gitFirst[comps[0]] {
		r := t.rows[i]
		n := len(r.Seq) - 1
		if len(comps) < n || (!r.Dir && len(comps) != n) {
			continue
		}
		ok := true
		for j := range n {
			if !r.names[j+1].match(comps[j]) {
				ok = false
				break
			}
		}
		if ok {
			return r, true
		}
	}
	return Row{}, false
}

// join joins slash-separated components into a path of an FS: "." for
// none.
func join(comps ...string) string {
	p := path.Join(comps...)
	if p == "" {
		return "."
	}
	return p
}

// absent reports whether err says an entry is not there (or a component
// of its path is not a directory).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// exists reports whether fsys has an entry at p: an error other than
// absence counts as one.
func exists(fsys FS, p string) bool {
	_, err := fsys.Lstat(p)
	return err == nil || !absent(err)
}

// isDir reports whether p is a directory of fsys ("." always is).
func isDir(fsys FS, p string) bool {
	if p == "." {
		return true
	}
	st, err := fsys.Lstat(p)
	return err == nil && st.IsDir()
}

// GitNamed reports whether rel, a slash-separated path a writer is about
// to make, names by its names alone something git reads as a repository's
// parts, in any case: a .git at any depth (a directory, or a gitfile
// "gitdir: ..."), or a last component git reads in a directory it takes
// for a repository (HEAD, commondir, gitdir, config.worktree,
// packed-refs). For a writer that sees no tree, only names (a file a
// person did not review, written by ccrun itself); Git answers for one
// that can look.
func GitNamed(rel string) (Row, bool) {
	comps := strings.Split(strings.Trim(path.Clean("/"+rel), "/"), "/")
	for _, c := range comps {
		if IsGit(c) {
			return gitFileRow, true
		}
	}
	switch strings.ToLower(comps[len(comps)-1]) {
	case "head", "commondir", "gitdir", "config.worktree", "packed-refs":
		return gitDirRow, true
	}
	return Row{}, false
}
