// Package trust keeps the records of the projects a person trusted with
// `ccrun trust`: for each project, its real path and the digest of what its
// own files loosen (permission.Loosening). The records live in the user's
// state directory, never in the project, so that nothing a repository
// commits, and nothing a sandbox writes into the project, can grant trust.
//
// # On disk
//
// One file per project, DIR/<hex>.json (hex: the SHA-256 of the project's
// path), mode 0600, in a directory of mode 0700
// owned by the current user. Files are opened through an os.Root without
// following symbolic links, written to a temporary file in the same
// directory, synced and renamed over the record: a crash leaves the old
// record or the new one. Changes take an exclusive flock(2) on DIR/.lock,
// so concurrent writers in any number of processes lose nothing.
//
// A *Store is safe for concurrent use.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
)

// ErrUnsafe is the class of the error of a store whose directory or files
// someone else than the current user could have written: a symbolic link,
// another owner, group or other write permission. It is of class
// errdefs.ErrPermissionDenied (ccrun.ErrPermissionDenied), as an unsafe
// session store is: ccrun refuses to trust what it read there, and the
// CLI exits 77.
var ErrUnsafe = errdefs.ErrPermissionDenied.WithMessage("unsafe trust storage")

// Record is one trusted project.
type Record struct {
	// Path is the project's real path (symbolic links resolved).
	Path string `json:"path"`
	// Digest is what the project's files loosened when the person trusted
	// them ("sha256:…", permission.Loosening.Digest).
	Digest string `json:"digest"`
	// Time is when the record was written.
	Time time.Time `json:"time"`
	// Shown is what the person was shown: one line per loosening.
	Shown []string `json:"shown,omitempty"`
}

// Store is a directory of records.
type Store struct {
	dir string
	mu  sync.Mutex // serializes this process's writers; flock serializes processes
}

// DefaultDir is where records are kept: $XDG_STATE_HOME/ccrun/trust, else
// ~/.local/state/ccrun/trust. It is "" when neither can be found.
func DefaultDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ccrun", "trust")
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "ccrun", "trust")
	}
	return ""
}

// Open returns the store in dir. Nothing is read or created until used.
func Open(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// File is the file that holds the record of the project at path (its
// real path), whether or not it exists: what a long-lived process watches
// to notice `ccrun trust`.
func (s *Store) File(path string) string {
	if s.dir == "" {
		return ""
	}
	return filepath.Join(s.dir, fileName(path))
}

func fileName(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:]) + ".json"
}

// root opens the store's directory, creating it (0700) when create is set.
// A directory that is missing is (nil, nil) when create is not set.
func (s *Store) root(create bool) (*os.Root, error) {
	if s.dir == "" || !filepath.IsAbs(s.dir) {
		return nil, fmt.Errorf("trust store %q: want an absolute directory (set XDG_STATE_HOME)", s.dir)
	}
	if create {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return nil, fmt.Errorf("trust store: %w", err)
		}
	}
	fi, err := os.Lstat(s.dir)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	if err := safe(s.dir, fi, true); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	// The directory may have been swapped between Lstat and OpenRoot.
	if fi2, err := r.Stat("."); err != nil || !os.SameFile(fi, fi2) {
		r.Close()
		return nil, fmt.Errorf("trust store %s: replaced while opened: %w", s.dir, ErrUnsafe)
	}
	return r, nil
}

// safe checks that fi (of name) is a directory (dir) or a regular file
// owned by the current user that nobody else may write.
func safe(name string, fi fs.FileInfo, dir bool) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("trust store %s: a symbolic link: %w", name, ErrUnsafe)
	case dir && !fi.IsDir():
		return fmt.Errorf("trust store %s: not a directory: %w", name, ErrUnsafe)
	case !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("trust store %s: not a regular file: %w", name, ErrUnsafe)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("trust store %s: writable by others (mode %04o): %w", name, fi.Mode().Perm(), ErrUnsafe)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("trust store %s: owned by uid %d, not you (uid %d): %w", name, st.Uid, os.Geteuid(), ErrUnsafe)
	}
	return nil
}

// read reads the record file name in r; a missing one is (nil, nil).
func read(r *os.Root, name string) (*Record, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		if fi, lerr := r.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("trust record %s: a symbolic link: %w", filepath.Join(r.Name(), name), ErrUnsafe)
		}
		return nil, fmt.Errorf("trust record %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("trust record %s: %w", name, err)
	}
	if err := safe(filepath.Join(r.Name(), name), fi, false); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("trust record %s: %w", name, err)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("trust record %s: %v: %w", filepath.Join(r.Name(), name), err, ErrUnsafe)
	}
	return &rec, nil
}

// Get returns the record of the project at path (its real path), or nil
// when there is none.
func (s *Store) Get(path string) (*Record, error) {
	r, err := s.root(false)
	if err != nil || r == nil {
		return nil, err
	}
	defer r.Close()
	rec, err := read(r, fileName(path))
	if err != nil || rec == nil {
		return nil, err
	}
	if rec.Path != path {
		return nil, nil // not this project's (a hash collision cannot happen; a hand-made file can)
	}
	return rec, nil
}

// Update changes the record of the project at path under the store's
// lock: change gets the current record (nil for none) and returns the one
// to keep (nil removes it). When change returns an error, nothing is
// written and Update returns it. The record's Path is set to path and a
// zero Time to now.
func (s *Store) Update(path string, change func(cur *Record) (*Record, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.root(true)
	if err != nil {
		return err
	}
	defer r.Close()
	lock, err := r.OpenFile(".lock", os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("trust store lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("trust store lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	name := fileName(path)
	cur, err := read(r, name)
	if err != nil {
		return err
	}
	if cur != nil && cur.Path != path {
		cur = nil
	}
	next, err := change(cur)
	if err != nil {
		return err
	}
	if next == nil {
		if cur == nil {
			return nil
		}
		if err := r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("trust record: %w", err)
		}
		return nil
	}
	rec := *next
	rec.Path = path
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	return writeAtomic(r, name, append(data, '\n'))
}

// writeAtomic writes data to name in r through a temporary file.
func writeAtomic(r *os.Root, name string, data []byte) (err error) {
	var tmp string
	var f *os.File
	for i := 0; ; i++ {
		tmp = fmt.Sprintf(".%s.tmp-%d-%d", name, os.Getpid(), time.Now().UnixNano()+int64(i))
		f, err = r.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err == nil || !errors.Is(err, fs.ErrExist) || i > 10 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			r.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	if err = r.Rename(tmp, name); err != nil {
		return fmt.Errorf("trust record: %w", err)
	}
	return nil
}

// List returns every record, sorted by path. Files that are not records
// (the lock, a stray temporary file) are skipped; an unsafe record is an
// error.
func (s *Store) List() ([]Record, error) {
	r, err := s.root(false)
	if err != nil || r == nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.Open(".")
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	var out []Record
	for _, n := range names {
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		rec, err := read(r, n)
		if err != nil {
			return nil, err
		}
		if rec != nil && fileName(rec.Path) == n {
			out = append(out, *rec)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}
