package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ccrun/ccrun/internal/sensitive"
	"github.com/ccrun/ccrun/runtime/job"
	utilexec "k8s.io/client-go/util/exec"
)

// A mount on a cluster is a copy: the host directory does not exist on the
// node. Before the program starts, each mount's tree is sent as a tar
// stream over exec into an emptyDir of the pod (read-only for the program
// unless the mount is writable); after it ends, a writable mount's tree
// comes back the same way and is applied to the host directory:
//
//   - through an os.Root of the host directory: nothing is written outside
//     it, and nothing through a symbolic link (an entry under a link is
//     skipped, an entry at a link replaces the link itself);
//   - never at a protected path (job.Mount.ProtectedIn, the implant table
//     of internal/sensitive and git's view of the tree as the copy will
//     leave it, less the mount's named Implants): those stay as they were
//     and are named in the Result's Detail. Nor a .git the host did not
//     have, nor, in a directory the program made a repository, the entries
//     among HEAD, objects, refs, commondir the host did not have
//     (sensitive.GitMade);
//   - only regular files, directories and symbolic links (kept as links,
//     never followed); permissions without setuid, setgid or sticky bits;
//   - files that were copied in and did not come back are removed (the
//     program deleted them); files the host gained meanwhile are left;
//   - at most WithMountSize bytes each way: a larger host tree is refused
//     before any pod exists, a larger copy-back changes nothing.
//
// Copying in walks the host tree without following links (a link is sent
// as a link). The image needs tar (tar, else /bin/busybox tar).

// mountSet is the prepared copy of a call's mounts.
type mountSet struct {
	image  string // the call's image: which tar it has is remembered by it
	mounts []mountCopy
	notes  []string
}

type mountCopy struct {
	m       job.Mount
	root    string          // the host directory, links resolved
	archive *os.File        // the tar stream to copy in
	sent    map[string]bool // relative paths sent (for deletions)
}

func (ms *mountSet) close() {
	for _, mc := range ms.mounts {
		if mc.archive != nil {
			mc.archive.Close()
			os.Remove(mc.archive.Name())
		}
	}
}

func (ms *mountSet) note() string { return strings.Join(ms.notes, "; ") }

// prepareMounts archives each mount's host tree, refusing one past the
// size limit (ErrInvalidArgument).
func (e *Executor) prepareMounts(s Spec) (*mountSet, error) {
	uid, gid, _ := s.user()
	ms := &mountSet{image: s.Image}
	for _, m := range s.Mounts {
		root, err := m.Resolved()
		if err != nil {
			ms.close()
			return nil, newError(ErrInvalidArgument, err, "kube: mount %s", m)
		}
		f, err := os.CreateTemp("", "ccrun-kube-mount-*.tar")
		if err != nil {
			ms.close()
			return nil, err
		}
		mc := mountCopy{m: m, root: root, archive: f, sent: map[string]bool{}}
		ms.mounts = append(ms.mounts, mc)
		if err := archive(f, root, e.mountMax, int(uid), int(gid), mc.sent); err != nil {
			ms.close()
			return nil, newError(ErrInvalidArgument, err, "kube: mount %s", m)
		}
	}
	return ms, nil
}

var errTooBig = errors.New("past the mount size limit")

// archive writes root's tree to w as tar, links as links, owned by
// uid:gid, at most max bytes of file content.
func archive(w io.Writer, root string, max int64, uid, gid int, sent map[string]bool) error {
	tw := tar.NewWriter(w)
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h := &tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), Uid: uid, Gid: gid, ModTime: info.ModTime(), Format: tar.FormatPAX}
		switch {
		case info.Mode().IsDir():
			h.Typeflag, h.Name = tar.TypeDir, rel+"/"
		case info.Mode().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, info.Size()
			if total += info.Size(); total > max {
				return fmt.Errorf("%s: %w (%d bytes)", root, errTooBig, max)
			}
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
		default:
			return nil // devices, sockets, fifos: not copied
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		sent[rel] = true
		if h.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, h.Size)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// tarPrograms are the tar commands tried in the copy container, first
// found first. The one that worked for an image is remembered.
var (
	tarPrograms = [][]string{{"tar"}, {"/bin/busybox", "tar"}}
	tarOf       sync.Map // image -> index in tarPrograms
)

// tarExec runs tar with args in the copy container, trying each known tar
// program until one starts.
func (e *Executor) tarExec(ctx context.Context, pod, image string, args []string, stdin io.ReadSeeker, stdout io.Writer) error {
	start := 0
	if v, ok := tarOf.Load(image); ok {
		start = v.(int)
	}
	var last error
	for i := start; i < len(tarPrograms); i++ {
		if stdin != nil {
			if _, err := stdin.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
		var stderr bytes.Buffer
		argv := append(append([]string(nil), tarPrograms[i]...), args...)
		var in io.Reader
		if stdin != nil {
			in = stdin
		}
		err := e.execIn(ctx, pod, containerCopy, argv, in, stdout, &stderr)
		var ce utilexec.ExitError
		if err == nil {
			tarOf.Store(image, i)
			return nil
		}
		if errors.As(err, &ce) {
			return fmt.Errorf("%s exited %d: %s", strings.Join(argv, " "), ce.ExitStatus(), strings.TrimSpace(stderr.String()))
		}
		if ctx.Err() != nil {
			return err
		}
		last = err
	}
	return newError(ErrInvalidArgument, last, "kube: the image %s has no tar program (tar, /bin/busybox tar): a call with mounts needs one", image)
}

// copyIn sends each mount's archive into its emptyDir.
func (e *Executor) copyIn(ctx context.Context, pod string, ms *mountSet) error {
	for i, mc := range ms.mounts {
		err := e.tarExec(ctx, pod, ms.image, []string{"-x", "-o", "-f", "-", "-C", copyDir(i)}, mc.archive, io.Discard)
		if err != nil {
			return fmt.Errorf("kube: copy mount %s into pod %s: %w", mc.m, pod, err)
		}
	}
	return nil
}

// limitWriter fails past n bytes.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, errTooBig
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// copyOut brings each writable mount's tree back and applies it.
func (e *Executor) copyOut(ctx context.Context, pod string, ms *mountSet) error {
	for i, mc := range ms.mounts {
		if !mc.m.Writable {
			continue
		}
		f, err := os.CreateTemp("", "ccrun-kube-back-*.tar")
		if err != nil {
			return err
		}
		err = e.tarExec(ctx, pod, ms.image, []string{"-c", "-f", "-", "-C", copyDir(i), "."}, nil, &limitWriter{w: f, n: e.mountMax})
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err == nil {
			err = ms.apply(mc, f)
		} else if errors.Is(err, errTooBig) {
			ms.notes = append(ms.notes, fmt.Sprintf("mount %s: the copy back went past %d bytes: nothing written to the host", mc.m, e.mountMax))
			err = nil
		}
		f.Close()
		os.Remove(f.Name())
		if err != nil {
			return fmt.Errorf("kube: copy mount %s back from pod %s: %w", mc.m, pod, err)
		}
	}
	return nil
}

// throughLink says whether a parent of rel under root is a symbolic link
// (or not a directory): an entry there would be written elsewhere than
// its name says.
func throughLink(root *os.Root, rel string) bool {
	dir := path.Dir(rel)
	if dir == "." {
		return false
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		fi, err := root.Lstat(strings.Join(parts[:i+1], "/"))
		if errors.Is(err, fs.ErrNotExist) {
			return false // made as a directory below
		}
		if err != nil || !fi.IsDir() {
			return true
		}
	}
	return false
}

// apply writes the tar stream r into mc's host directory, as the package
// comment says. It reads r twice: first for what the tree will hold.
func (ms *mountSet) apply(mc mountCopy, r io.ReadSeeker) error {
	root, err := os.OpenRoot(mc.root)
	if err != nil {
		return err
	}
	defer root.Close()
	view, err := viewOf(root, r, mc)
	if err != nil {
		return err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var kept, skipped []string
	back := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rel := strings.Trim(path.Clean("/"+h.Name), "/")
		if rel == "" {
			continue
		}
		back[rel] = true
		if hid, top := view.hiddenAt(rel); hid {
			if top {
				kept = append(kept, rel)
			}
			continue
		}
		if _, ok := mc.m.ProtectedIn(view, rel); ok {
			if changed(root, rel, h) {
				kept = append(kept, rel)
			}
			continue
		}
		if throughLink(root, rel) {
			skipped = append(skipped, rel+" (under a symbolic link)")
			continue
		}
		perm := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if fi, err := root.Lstat(rel); err == nil && !fi.IsDir() {
				if err := root.Remove(rel); err != nil {
					return err
				}
			}
			if err := root.MkdirAll(rel, 0o755); err != nil {
				return err
			}
			if err := root.Chmod(rel, perm|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if fi, err := root.Lstat(rel); err == nil && (!fi.Mode().IsRegular()) {
				if err := root.RemoveAll(rel); err != nil {
					return err
				}
			}
			f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := root.Chmod(rel, perm); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if fi, err := root.Lstat(rel); err == nil {
				if fi.Mode()&fs.ModeSymlink != 0 {
					if t, _ := root.Readlink(rel); t == h.Linkname {
						continue
					}
				}
				if err := root.RemoveAll(rel); err != nil {
					return err
				}
			}
			if err := root.Symlink(h.Linkname, rel); err != nil {
				return err
			}
		default:
			skipped = append(skipped, rel+" (not a file, directory or link)")
		}
	}
	// What was sent and did not come back was deleted by the program.
	var gone []string
	for rel := range mc.sent {
		if !back[rel] {
			gone = append(gone, rel)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(gone))) // children before parents
	for _, rel := range gone {
		if _, ok := mc.m.ProtectedIn(view, rel); ok {
			kept = append(kept, rel)
			continue
		}
		if throughLink(root, rel) {
			continue
		}
		if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			skipped = append(skipped, rel+" (not removed: "+err.Error()+")")
		}
	}
	if len(kept) > 0 {
		sort.Strings(kept)
		ms.notes = append(ms.notes, fmt.Sprintf("mount %s: protected paths left as they were: %s", mc.m.Guest, strings.Join(kept, ", ")))
	}
	if len(skipped) > 0 {
		ms.notes = append(ms.notes, fmt.Sprintf("mount %s: not copied back: %s", mc.m.Guest, strings.Join(skipped, ", ")))
	}
	return nil
}

// backView is the host directory as the copy-back will leave it: the
// entries of the tar stream, less those sent and not back (the program
// deleted them), less what will not be written for git's sake (hidden),
// and beside them what the host gained meanwhile. Git's view of the tree
// (job.Mount.ProtectedIn) is judged on it, so that the order of the
// stream does not matter.
type backView struct {
	root    *os.Root
	entries map[string]fs.FileMode // the stream's, by clean relative path
	sent    map[string]bool
	hidden  map[string]bool
}

// viewOf reads the tar stream r for the backView of mc: in each directory
// of the stream, what sensitive.GitMade names against what was sent (a
// new .git, the new entries that make a directory a repository) is
// hidden.
func viewOf(root *os.Root, r io.Reader, mc mountCopy) (*backView, error) {
	v := &backView{root: root, entries: map[string]fs.FileMode{}, sent: mc.sent, hidden: map[string]bool{}}
	git := map[string][]string{} // directory -> its .git, HEAD, objects, refs, commondir
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		rel := strings.Trim(path.Clean("/"+h.Name), "/")
		if rel == "" {
			continue
		}
		mode := fs.ModeIrregular
		switch h.Typeflag {
		case tar.TypeDir:
			mode = fs.ModeDir
		case tar.TypeReg:
			mode = 0
		case tar.TypeSymlink:
			mode = fs.ModeSymlink
		}
		v.entries[rel] = mode
		if name := path.Base(rel); name == ".git" || sensitive.GitMark(name) {
			git[path.Dir(rel)] = append(git[path.Dir(rel)], name)
		}
	}
	for dir, names := range git {
		for _, name := range sensitive.GitMade(names, func(name string) bool { return mc.sent[path.Join(dir, name)] }) {
			v.hidden[path.Join(dir, name)] = true
		}
	}
	return v, nil
}

// hiddenAt reports whether rel is hidden, or lies under a hidden path
// (top: rel is the hidden path itself).
func (v *backView) hiddenAt(rel string) (hidden, top bool) {
	if len(v.hidden) == 0 {
		return false, false
	}
	for p := path.Dir(rel); p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if v.hidden[p] {
			return true, false
		}
	}
	return v.hidden[rel], v.hidden[rel]
}

// Lstat is the entry at name as the copy-back will leave it.
func (v *backView) Lstat(name string) (fs.FileInfo, error) {
	name = strings.Trim(path.Clean("/"+name), "/")
	if name == "" {
		return v.root.Lstat(".")
	}
	if hid, _ := v.hiddenAt(name); hid {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	if mode, ok := v.entries[name]; ok {
		return viewInfo{name: path.Base(name), mode: mode}, nil
	}
	if v.sent[name] {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	}
	return v.root.Lstat(name)
}

// viewInfo is a stream entry's fs.FileInfo: its name and kind.
type viewInfo struct {
	name string
	mode fs.FileMode
}

func (i viewInfo) Name() string       { return i.name }
func (i viewInfo) Size() int64        { return 0 }
func (i viewInfo) Mode() fs.FileMode  { return i.mode }
func (i viewInfo) ModTime() time.Time { return time.Time{} }
func (i viewInfo) IsDir() bool        { return i.mode.IsDir() }
func (i viewInfo) Sys() any           { return nil }

// changed says whether the entry h differs from what the host has at rel
// (so that a protected path the program did not touch is not reported).
func changed(root *os.Root, rel string, h *tar.Header) bool {
	fi, err := root.Lstat(rel)
	if err != nil {
		return true
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return !fi.IsDir()
	case tar.TypeSymlink:
		t, err := root.Readlink(rel)
		return err != nil || t != h.Linkname
	case tar.TypeReg:
		return !fi.Mode().IsRegular() || fi.Size() != h.Size || !fi.ModTime().Truncate(1e9).Equal(h.ModTime.Truncate(1e9))
	}
	return true
}
