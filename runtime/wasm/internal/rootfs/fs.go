// Package rootfs is the file system a @wasm guest sees at each of its
// mounts: a host directory reached only through an *os.Root, so that no
// path, symbolic link or hard link leads outside it, with a writable
// mount's protected paths (job.Mount.Protected) kept read-only by a guard.
// It implements wazero's experimental sys.FS, and Instantiate wraps a few
// of wazero's WASI preview 1 host functions where their answers differ
// from the specification (see docs/wasm.md, "WASI conformance").
package rootfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"sync/atomic"
	"syscall"
	"time"

	esys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/ccrun/ccrun/runtime/job"
)

// New returns the file system of mount m, whose host directory r is: read
// only unless m.Writable, and with m's protected paths guarded when it is
// writable. open counts the files the run holds open, all its mounts
// together, against MaxOpen. An error (a bad implant list, a mount too big
// to check) is the caller's to class.
func New(r *os.Root, m job.Mount, open *atomic.Int64) (esys.FS, error) {
	fs := &rootFS{root: r, writable: m.Writable, open: (*budget)(open)}
	if m.Writable {
		g, err := newGuard(r, m)
		if err != nil {
			return nil, err
		}
		fs.guard = g
	}
	return fs, nil
}

// rootFS is the file system a guest sees at one mount. Every lookup goes
// through an *os.Root, which resolves each path component itself and
// refuses to leave the mounted directory, whether by "..", by an absolute
// path, or by a symbolic link (one that was already there, or one the guest
// made) pointing out. wazero's own directory mounts (sysfs.DirFS) join the
// guest path onto the host path and let the kernel follow symbolic links,
// which leaves the tree; see docs/wasm.md.
//
// A read-only rootFS refuses every change with EROFS before touching the
// host. A writable one still refuses to create a symbolic link whose target
// is absolute or climbs out of the mount, so that nothing the guest leaves
// behind points the host (or a later run) outside the mount; and its guard
// refuses, with EACCES, every change to a protected path (.git/config,
// .envrc, ccrun.local.json...: see implantGuard).
//
// A rootFS is used by one module instance; os.Root is safe for concurrent
// use, so instances never share state through it beyond the host directory.
type rootFS struct {
	esys.UnimplementedFS
	root     *os.Root
	writable bool
	open     *budget       // shared by the run's mounts
	guard    *implantGuard // set on a writable mount
}

// check runs the guard's check, when there is one, under the mount's
// lock; the caller makes its change and then calls unlock, which is never
// nil.
func (r *rootFS) check(f func(*implantGuard) esys.Errno) (unlock func(), e esys.Errno) {
	if r.guard == nil {
		return func() {}, 0
	}
	unlock = r.guard.hold()
	if e := f(r.guard); e != 0 {
		unlock()
		return func() {}, e
	}
	return unlock, 0
}

// MaxOpen is the most files and directories one run may hold open at
// once, all its mounts together. Each is a descriptor of the host process:
// a guest opening without end would take all of the process's (the CLI's,
// the warm server's, an agent's) and then the system's.
const MaxOpen = 1024

// budget counts a run's open files against MaxOpen.
type budget atomic.Int64

func (b *budget) take() bool {
	n := (*atomic.Int64)(b)
	if n.Add(1) > MaxOpen {
		n.Add(-1)
		return false
	}
	return true
}

func (b *budget) give() { (*atomic.Int64)(b).Add(-1) }

// rel turns the path wazero hands over (already cleaned and relative to
// the mount, possibly with a trailing slash) into a name for os.Root.
func rel(p string) string {
	switch p {
	case "", ".", "/":
		return "."
	}
	if p[0] == '/' {
		p = p[1:]
	}
	return p
}

// errno maps a host error to the errno the guest sees. An escape refused
// by os.Root (not a system error) becomes EPERM.
func errno(err error) esys.Errno {
	if err == nil {
		return 0
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return esys.UnwrapOSError(se)
	}
	e := esys.UnwrapOSError(err)
	if e == esys.EIO {
		return esys.EPERM
	}
	return e
}

const writeFlags = esys.O_WRONLY | esys.O_RDWR | esys.O_APPEND | esys.O_CREAT | esys.O_TRUNC

func (r *rootFS) OpenFile(p string, flag esys.Oflag, perm fs.FileMode) (esys.File, esys.Errno) {
	name := rel(p)
	if !r.writable && flag&writeFlags != 0 {
		return nil, esys.EROFS
	}
	if flag&esys.O_DIRECTORY != 0 && flag&(esys.O_WRONLY|esys.O_RDWR) != 0 {
		return nil, esys.EISDIR
	}
	if flag&esys.O_NOFOLLOW != 0 {
		if st, err := r.root.Lstat(name); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, esys.ELOOP
		}
	}
	// Past the budget the guest gets EAGAIN: wazero's errors have no
	// EMFILE.
	unlock := func() {}
	if flag&writeFlags != 0 {
		var e esys.Errno
		unlock, e = r.check(func(g *implantGuard) esys.Errno { return g.refuse(name, flag&esys.O_NOFOLLOW == 0) })
		if e != 0 {
			return nil, e
		}
	}
	defer unlock()
	if !r.open.take() {
		return nil, esys.EAGAIN
	}
	f, e := r.openFile(name, flag, perm)
	if e != 0 {
		r.open.give()
		return nil, e
	}
	f.open = r.open
	if flag&writeFlags == 0 && r.guard != nil {
		f.guard, f.name = r.guard, name
	}
	return f, 0
}

func (r *rootFS) openFile(name string, flag esys.Oflag, perm fs.FileMode) (*rootFile, esys.Errno) {
	var of int
	switch {
	case flag&esys.O_RDWR != 0:
		of = os.O_RDWR
	case flag&esys.O_WRONLY != 0:
		of = os.O_WRONLY
	default:
		of = os.O_RDONLY
	}
	if flag&esys.O_APPEND != 0 {
		of |= os.O_APPEND
	}
	if flag&esys.O_CREAT != 0 {
		of |= os.O_CREATE
	}
	if flag&esys.O_EXCL != 0 {
		of |= os.O_EXCL
	}
	if flag&esys.O_TRUNC != 0 {
		of |= os.O_TRUNC
	}
	if flag&(esys.O_SYNC|esys.O_DSYNC|esys.O_RSYNC) != 0 {
		of |= os.O_SYNC
	}
	f, err := r.root.OpenFile(name, of, perm)
	if err != nil {
		e := errno(err)
		if e == esys.ENOTDIR && flag&esys.O_DIRECTORY == 0 {
			e = esys.ENOENT
		}
		return nil, e
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, errno(err)
	}
	if flag&esys.O_DIRECTORY != 0 && !st.IsDir() {
		_ = f.Close()
		return nil, esys.ENOTDIR
	}
	return &rootFile{seeker: seeker[int64]{sf: f, dir: st.IsDir()}, f: f, st: st, append: of&os.O_APPEND != 0, ro: !r.writable,
		writes: of&(os.O_WRONLY|os.O_RDWR) != 0}, 0
}

func (r *rootFS) Lstat(p string) (sys.Stat_t, esys.Errno) {
	st, err := r.root.Lstat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(st), 0
}

func (r *rootFS) Stat(p string) (sys.Stat_t, esys.Errno) {
	st, err := r.root.Stat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(st), 0
}

func (r *rootFS) Mkdir(p string, perm fs.FileMode) esys.Errno {
	if !r.writable {
		return esys.EROFS
	}
	unlock, e := r.check(func(g *implantGuard) esys.Errno { return g.refuse(p, false) })
	if e != 0 {
		return e
	}
	defer unlock()
	e = errno(r.root.Mkdir(rel(p), perm))
	if e == esys.ENOTDIR {
		e = esys.ENOENT
	}
	return e
}

func (r *rootFS) Chmod(p string, perm fs.FileMode) esys.Errno {
	if !r.writable {
		return esys.EROFS
	}
	unlock, e := r.check(func(g *implantGuard) esys.Errno { return g.refuse(p, true) })
	if e != 0 {
		return e
	}
	defer unlock()
	return errno(r.root.Chmod(rel(p), perm))
}

func (r *rootFS) Rename(from, to string) esys.Errno {
	if !r.writable {
		return esys.EROFS
	}
	from, to = rel(from), rel(to)
	unlock, e := r.check(func(g *implantGuard) esys.Errno { return g.refuseRename(from, to) })
	if e != 0 {
		return e
	}
	defer unlock()
	err := r.root.Rename(from, to)
	if errors.Is(err, syscall.EEXIST) {
		// os.Root, like os.Rename, will not replace a directory, which
		// rename(2) does when it is empty. Do it in two steps.
		src, e1 := r.root.Lstat(from)
		dst, e2 := r.root.Lstat(to)
		if e1 == nil && e2 == nil && dst.IsDir() {
			if !src.IsDir() {
				return esys.EISDIR
			}
			if err := r.root.Remove(to); err != nil { // fails unless empty
				return errno(err)
			}
			err = r.root.Rename(from, to)
		}
	}
	return errno(err)
}

func (r *rootFS) Rmdir(p string) esys.Errno { return r.remove(p, true) }

func (r *rootFS) Unlink(p string) esys.Errno { return r.remove(p, false) }

// remove removes p, a directory (Rmdir) or not (Unlink), through the
// implant guard: ENOTDIR or EISDIR when it is the other kind.
func (r *rootFS) remove(p string, dir bool) esys.Errno {
	if !r.writable {
		return esys.EROFS
	}
	name := rel(p)
	unlock, e := r.check(func(g *implantGuard) esys.Errno { return g.refuse(name, false) })
	if e != 0 {
		return e
	}
	defer unlock()
	st, err := r.root.Lstat(name)
	if err != nil {
		return errno(err)
	}
	switch {
	case dir && !st.IsDir():
		return esys.ENOTDIR
	case !dir && st.IsDir():
		return esys.EISDIR
	}
	return errno(r.root.Remove(name))
}

func (r *rootFS) Link(oldPath, newPath string) esys.Errno {
	if !r.writable {
		return esys.EROFS
	}
	unlock, e := r.check(func(g *implantGuard) esys.Errno { return g.refuseLink(rel(oldPath), rel(newPath)) })
	if e != 0 {
		return e
	}
	defer unlock()
	return errno(r.root.Link(rel(oldPath), rel(newPath)))
}

// Symlink refuses a target that is absolute or that, read from the link's
// directory, climbs out of the mount: such a link could only be followed
// outside the sandbox, by the host.
func (r *rootFS) Symlink(target, link string) esys.Errno {
	if !r.writable {
		return esys.EROFS
	}
	if path.IsAbs(target) || target == "" {
		return esys.EPERM
	}
	if !fs.ValidPath(path.Join(path.Dir(rel(link)), target)) {
		return esys.EPERM
	}
	unlock, e := r.check(func(g *implantGuard) esys.Errno { return g.refuseSymlink(target, rel(link)) })
	if e != 0 {
		return e
	}
	defer unlock()
	return errno(r.root.Symlink(target, rel(link)))
}

func (r *rootFS) Readlink(p string) (string, esys.Errno) {
	s, err := r.root.Readlink(rel(p))
	if err != nil {
		return "", errno(err)
	}
	return s, 0
}

func (r *rootFS) Utimens(p string, atim, mtim int64) esys.Errno {
	if !r.writable {
		return esys.EROFS
	}
	name := rel(p)
	unlock, e := r.check(func(g *implantGuard) esys.Errno { return g.refuse(name, true) })
	if e != 0 {
		return e
	}
	defer unlock()
	st, err := r.root.Stat(name)
	if err != nil {
		return errno(err)
	}
	cur := sys.NewStat_t(st)
	return errno(r.root.Chtimes(name, utime(atim, cur.Atim), utime(mtim, cur.Mtim)))
}

func utime(t, cur int64) time.Time {
	if t == esys.UTIME_OMIT {
		t = cur
	}
	return time.Unix(0, t)
}

// rootFile is an open file or directory of a rootFS. It only ever acts on
// its descriptor, never on a path, so it cannot be steered elsewhere.
var _ esys.File = (*rootFile)(nil)

type rootFile struct {
	seeker[int64]
	open   *budget // given back to at Close
	closed atomic.Bool
	f      *os.File
	st     fs.FileInfo // at open: device, inode and type do not change
	append bool
	ro     bool // opened from a read-only mount: no change, not even metadata
	writes bool // opened for writing
	// guard and name are set on a file of a writable mount opened for
	// reading only: its times and size change only when name is not
	// protected. (Opening a protected path for writing is refused.)
	guard *implantGuard
	name  string
}

// refuse returns EACCES when f was opened for reading from a protected
// path of a writable mount.
func (f *rootFile) refuse() esys.Errno {
	if f.guard == nil {
		return 0
	}
	unlock := f.guard.hold()
	defer unlock()
	return f.guard.refuse(f.name, true)
}

func (f *rootFile) Dev() (uint64, esys.Errno) { return sys.NewStat_t(f.st).Dev, 0 }

func (f *rootFile) Ino() (sys.Inode, esys.Errno) { return sys.NewStat_t(f.st).Ino, 0 }

func (f *rootFile) IsDir() (bool, esys.Errno) { return f.st.IsDir(), 0 }

func (f *rootFile) IsAppend() bool { return f.append }

func (f *rootFile) SetAppend(enable bool) esys.Errno {
	if f.ro {
		return esys.EROFS
	}
	if e := setAppend(f.f, enable); e != 0 {
		return e
	}
	f.append = enable
	return 0
}

func (f *rootFile) Stat() (sys.Stat_t, esys.Errno) {
	st, err := f.f.Stat()
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(st), 0
}

func (f *rootFile) Read(buf []byte) (int, esys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	if f.st.IsDir() {
		return 0, esys.EISDIR
	}
	n, err := f.f.Read(buf)
	return n, errno(eofOK(err))
}

func (f *rootFile) Pread(buf []byte, off int64) (int, esys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	if f.st.IsDir() {
		return 0, esys.EISDIR
	}
	n, err := f.f.ReadAt(buf, off)
	return n, errno(eofOK(err))
}

func eofOK(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// seeker gives rootFile the Seek that sys.File wants. It is generic only
// because go vet's stdmethods check reports any non-generic method named
// Seek that does not return error, as sys.File's must.
type seeker[T ~int64] struct {
	sf  *os.File
	dir bool
}

func (s *seeker[T]) Seek(offset T, whence int) (int64, esys.Errno) {
	if s.dir && (offset != 0 || whence != io.SeekStart) {
		return 0, esys.EISDIR
	}
	n, err := s.sf.Seek(int64(offset), whence)
	return n, errno(err)
}

func (f *rootFile) Readdir(n int) ([]esys.Dirent, esys.Errno) {
	if !f.st.IsDir() {
		return nil, esys.EBADF
	}
	ents, err := f.f.ReadDir(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errno(err)
	}
	out := make([]esys.Dirent, 0, len(ents))
	for _, e := range ents {
		d := esys.Dirent{Name: e.Name(), Type: e.Type()}
		if info, err := e.Info(); err == nil {
			d.Ino = sys.NewStat_t(info).Ino
		}
		out = append(out, d)
	}
	return out, 0
}

func (f *rootFile) Write(buf []byte) (int, esys.Errno) {
	if f.ro {
		return 0, esys.EBADF
	}
	if f.st.IsDir() {
		return 0, esys.EBADF
	}
	if len(buf) == 0 {
		// As write(2) of no bytes: EBADF when not open for writing.
		if !f.writes {
			return 0, esys.EBADF
		}
		return 0, 0
	}
	n, err := f.f.Write(buf)
	return n, errno(err)
}

func (f *rootFile) Pwrite(buf []byte, off int64) (int, esys.Errno) {
	if f.ro {
		return 0, esys.EBADF
	}
	if f.st.IsDir() {
		return 0, esys.EBADF
	}
	if len(buf) == 0 {
		if !f.writes {
			return 0, esys.EBADF
		}
		return 0, 0
	}
	if off < 0 {
		return 0, esys.EINVAL
	}
	// os.File.WriteAt refuses a file opened with O_APPEND; pwrite(2) on
	// Linux writes at the end then, which WASI allows.
	return pwrite(f.f, buf, off)
}

func (f *rootFile) Truncate(size int64) esys.Errno {
	if f.ro {
		return esys.EBADF
	}
	if f.st.IsDir() {
		return esys.EISDIR
	}
	if size < 0 {
		return esys.EINVAL
	}
	if e := f.refuse(); e == esys.EACCES {
		return e
	}
	return errno(f.f.Truncate(size))
}

func (f *rootFile) Sync() esys.Errno {
	err := f.f.Sync()
	if f.st.IsDir() && errors.Is(err, syscall.EINVAL) {
		return 0
	}
	return errno(err)
}

func (f *rootFile) Datasync() esys.Errno { return f.Sync() }

func (f *rootFile) Utimens(atim, mtim int64) esys.Errno {
	if f.ro {
		return esys.EROFS
	}
	if e := f.refuse(); e == esys.EACCES {
		return e
	}
	return futimens(f.f, atim, mtim)
}

func (f *rootFile) Close() esys.Errno {
	if f.closed.Swap(true) {
		return esys.EBADF
	}
	f.open.give()
	return errno(f.f.Close())
}
