// Package audit appends one JSON line per gate decision and per execution to
// a project's .ccrun/audit.jsonl.
//
// Each record is written with a single write(2) on a file opened O_APPEND, so
// lines from concurrent processes do not interleave. A *Log is safe for
// concurrent use.
//
// The log's directory must be a real directory (not a symbolic link) owned
// by the current user; it is created 0700 when missing. The file is opened
// through an os.Root of that directory without following a symbolic link
// (O_NOFOLLOW), and only when it is a regular file of the current user with
// no other hard link: a committed .ccrun/audit.jsonl → ~/.bashrc makes
// Write fail, and nothing is appended to the link's target. Once the file
// reaches its size limit (DefaultMaxSize) it is renamed to audit.jsonl.1,
// replacing the previous one, and a new file is started.
package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/dotccrun"
)

// Record is one line of the audit log. Fields that do not apply are left out.
type Record struct {
	Time        time.Time `json:"time"`
	Kind        string    `json:"kind"` // "decision", "execution" or "capability" (one written into the project)
	Call        string    `json:"call,omitempty"`
	Tool        string    `json:"tool"`
	Key         string    `json:"key,omitempty"`
	Environment string    `json:"environment,omitempty"`
	Decision    string    `json:"decision,omitempty"` // allow, ask, deny
	Layer       string    `json:"layer,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Grant       string    `json:"grant,omitempty"`
	// Unconfined: the person asked chose to run this call once outside
	// the sandbox of approved commands (decisions; Grant is Once).
	Unconfined  bool     `json:"unconfined,omitempty"`
	Diagnostics []string `json:"diagnostics,omitempty"`
	// What the call carried beside its key (decisions): the command or
	// what runs, its positional arguments, the variables it added, its
	// working directory and where its stdin came from.
	Display string   `json:"display,omitempty"`
	Args    []string `json:"args,omitempty"`
	Env     []string `json:"env,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Stdin   string   `json:"stdin,omitempty"`
	// Loosens are what the call loosens past its environment's defaults
	// (a network, a writable mount), one line each, as the person asked
	// is shown them (decisions).
	Loosens []string `json:"loosens,omitempty"`
	// For executions.
	Outcome    string `json:"outcome,omitempty"` // success, error, cancelled
	EndReason  string `json:"end_reason,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMS *int64 `json:"duration_ms,omitempty"`
	Error      string `json:"error,omitempty"`
	// Detail is the Result's: what the engine had to say about the run
	// (a trap, protected paths removed, a wait for another run's mount, a
	// mount changed from outside).
	Detail string `json:"detail,omitempty"`
}

// DefaultMaxSize is the size at which the log is rotated.
const DefaultMaxSize int64 = 8 << 20

// ErrUnsafe is the class of the error of a log whose directory or file is a
// symbolic link, another user's, or hard-linked elsewhere. It is of class
// errdefs.ErrPermissionDenied (ccrun.ErrPermissionDenied), as an unsafe
// session store is: ccrun refuses to write there, and the CLI exits 77.
var ErrUnsafe = errdefs.ErrPermissionDenied.WithMessage("unsafe audit log")

// Log appends records to one file.
type Log struct {
	mu   sync.Mutex
	path string
	max  int64
	root *os.Root
	f    *os.File
}

// Option configures a Log.
type Option func(*Log)

// MaxSize sets the size at which the log is rotated. Default:
// DefaultMaxSize; n <= 0 keeps the default.
func MaxSize(n int64) Option {
	return func(l *Log) {
		if n > 0 {
			l.max = n
		}
	}
}

// Open returns the log at path. The file (and its directory, mode
// 0600/0700) is created lazily on the first Write, so a run that decides
// nothing leaves no trace on disk.
func Open(path string, opts ...Option) *Log {
	l := &Log{path: path, max: DefaultMaxSize}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// Write appends r as one line. A nil *Log discards r.
func (l *Log) Write(r Record) error {
	if l == nil {
		return nil
	}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	line := append(r.line(), '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		if err := l.open(); err != nil {
			return err
		}
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("audit %s: %w", l.path, err)
	}
	if fi, err := l.f.Stat(); err == nil && fi.Size() >= l.max {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	return nil
}

// open opens the directory and the file, refusing links and other users'.
func (l *Log) open() error {
	dir, base := filepath.Dir(l.path), filepath.Base(l.path)
	if filepath.Base(dir) == dotccrun.Name {
		// a project's .ccrun: ignored by git from its first byte
		// (a link in its place is refused below, as any other directory's)
		if err := dotccrun.Mkdir(dir, 0o700); err != nil && !errors.Is(err, dotccrun.ErrUnsafe) {
			return fmt.Errorf("audit: %w", err)
		}
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("audit %s: not a real directory (a symbolic link?): refusing to write there: %w", dir, ErrUnsafe)
	}
	if err := mine(dir, fi); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if fi2, err := root.Stat("."); err != nil || !os.SameFile(fi, fi2) {
		root.Close()
		return fmt.Errorf("audit %s: replaced while opened: %w", dir, ErrUnsafe)
	}
	f, err := root.OpenFile(base, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		fi, lerr := root.Lstat(base)
		root.Close()
		if errors.Is(err, syscall.ELOOP) || lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("audit %s: a symbolic link: refusing to write through it: %w", l.path, ErrUnsafe)
		}
		return fmt.Errorf("audit: %w", err)
	}
	if err := checkFile(l.path, f); err != nil {
		f.Close()
		root.Close()
		return err
	}
	l.root, l.f = root, f
	return nil
}

// checkFile refuses what f must not be: not a regular file, another
// user's, or hard-linked elsewhere.
func checkFile(name string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("audit %s: not a regular file: %w", name, ErrUnsafe)
	}
	if err := mine(name, fi); err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("audit %s: has %d hard links: refusing to write to a file that is also elsewhere: %w", name, st.Nlink, ErrUnsafe)
	}
	return nil
}

// mine refuses a file or directory of another user.
func mine(name string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("audit %s: owned by uid %d, not you (uid %d): %w", name, st.Uid, os.Geteuid(), ErrUnsafe)
	}
	return nil
}

// rotate renames a full log to NAME.1 (unless another process did already)
// and opens a new one. The flock on the full file serializes processes
// rotating the same file.
func (l *Log) rotate() error {
	base := filepath.Base(l.path)
	fd := int(l.f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("audit rotate: %w", err)
	}
	mineFI, err1 := l.f.Stat()
	cur, err2 := l.root.Lstat(base)
	var err error
	if err1 == nil && err2 == nil && os.SameFile(mineFI, cur) {
		err = l.root.Rename(base, base+".1")
	}
	syscall.Flock(fd, syscall.LOCK_UN)
	l.closeFiles()
	if err != nil {
		return fmt.Errorf("audit rotate: %w", err)
	}
	return l.open()
}

func (l *Log) closeFiles() error {
	var err error
	if l.f != nil {
		err = l.f.Close()
	}
	if l.root != nil {
		l.root.Close()
	}
	l.f, l.root = nil, nil
	return err
}

// Close closes the file, if it was opened.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeFiles()
}
