// Package mountlock keeps sandboxed runs that write one host directory
// apart, whatever engine runs them (@wasm, @docker, Kubernetes, and
// @shell's workspace tier, which writes its project) and in
// whichever of this user's ccrun processes: a run holds a lock on each
// directory it has mounted read-write for the whole run, and a second run
// that would write the same directory waits for it. It also tells a run
// whose mount was moved, removed or replaced from outside while it ran.
//
// # Locks
//
// A writable mount's host directory, symbolic links resolved, is known by
// its identity (device and inode), so that two names of one directory (a
// link, a bind mount) are one lock. A run takes an exclusive lock on the
// directory and a shared lock on every directory above it, up to /. So a
// run that writes /p and one that writes /p/sub conflict (the shared lock
// of the one on /p meets the exclusive lock of the other), while runs that
// write /p/a and /p/b run at once, and so do runs that only read. A
// directory reached through a bind mount is known by its own identity, not
// by the directories above its other name: a run that writes /home/u and
// one that writes /mnt/x, a bind of /home/u/p, do not conflict. A
// directory removed during a run and another made that reuses its inode
// number conflict with it: the new one's run waits for the old one's,
// which reports the change when it ends.
//
// The locks are flock(2) on files of the lock directory (Dir), one file per
// directory identity, taken in one order (the files' names, sorted), so
// that runs waiting for each other cannot deadlock. A lock belongs to its
// open file: two runs in one process exclude each other as two processes
// do, and a process that ends, however it ends, releases its locks. A lock
// file is never removed (removing one would let a second run lock a new
// file while the first holds the old one); one whose file was removed or
// replaced during the run anyway is named in the run's Detail.
//
// Not a lock on the mounted directory itself: the @wasm guard takes an
// flock of the mount's root for each check-and-change, which a run-long
// lock on the same directory would block, and anybody who can open the
// directory (a guest, another user sharing it) could hold a lock there and
// stall every run. The lock directory is this user's alone; runs of two
// users writing one directory are not kept apart.
//
// # Waiting
//
// A run whose lock is held waits, polling, until its context ends or for
// at most its Limits.Timeout (no bound when the timeout is negative); the
// program's own timeout counts from the end of the wait. A run that did
// not get its locks ends without starting: Reason Cancelled or Timeout,
// Detail naming the directory. A run that had to wait says so in its
// Detail ("waited 1.2s for ..."), and a WaitFunc (WithWaitFunc) is told
// when the wait begins and ends. There is no queue: a run that writes /p
// may wait while runs that write /p/a and /p/b keep overlapping, each for
// at most its own timeout.
//
// # Changes from outside
//
// The lock keeps out other ccrun runs, not the other processes of the
// host. What a run can tell cheaply, and End reports in the Detail, is a
// change of the mount itself: its directory moved or removed during the
// run (an inotify watch of the mount's root, on Linux: neither a guest nor
// a container can rename or remove the root of its own mount, so such an
// event comes from outside), or the host path leading to another directory
// at the end than at the start (the root or a directory above it replaced,
// a link changed). What another process writes inside the tree is not
// seen: the engines' own checks (each open resolved from the mount's root,
// the sweep after the run) are what keep it harmless.
//
// Everything here is safe for concurrent use.
package mountlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/runtime/job"
)

// ErrUnsafe: the lock directory is a symbolic link, is another user's, or
// others may write in it. A run with a writable mount is then refused
// rather than run unlocked.
var ErrUnsafe = errdefs.ErrPermissionDenied.WithMessage("unsafe lock directory")

// DirEnv names the lock directory in the environment of ccrun's own
// helper processes (the @wasm worker and warm server, whose environment
// holds nothing else of their parent's): the process that starts one sets
// it to its Dir, so that both lock in one directory.
const DirEnv = "CCRUN_MOUNTLOCK_DIR"

// Dir is the lock directory: $CCRUN_MOUNTLOCK_DIR (DirEnv) when it is an
// absolute path; else $XDG_STATE_HOME/ccrun/locks when XDG_STATE_HOME is
// one, else ~/.local/state/ccrun/locks (as the trust records and the
// audit log outside a project find the state directory); else, with no
// home, os.TempDir()/ccrun-UID/locks.
func Dir() string {
	if d := os.Getenv(DirEnv); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ccrun", "locks")
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "ccrun", "locks")
	}
	return filepath.Join(os.TempDir(), "ccrun-"+strconv.Itoa(os.Getuid()), "locks")
}

// WaitFunc is told about a run that waits for another run's lock: waiting
// true when the wait begins, false when it ends (locked, or given up). dir
// is the directory whose lock was held. It is called on the run's
// goroutine and must not block.
type WaitFunc func(dir string, waiting bool)

type waitKey struct{}

// WithWaitFunc returns a context whose runs tell f when they wait for a
// lock, so that a caller can say why nothing seems to happen. A run in a
// @wasm worker process or the warm server waits there, and is not told.
func WithWaitFunc(ctx context.Context, f WaitFunc) context.Context {
	return context.WithValue(ctx, waitKey{}, f)
}

// Lock is what a run holds from Begin to End. The zero Lock holds nothing.
type Lock struct {
	files  []held
	roots  []root
	waited time.Duration // how long the run waited; 0: it did not
	busy   string        // what it waited for, for a person
	ended  bool
}

type held struct {
	f    *os.File
	path string // the lock file
	dir  string // the directory it locks
}

// root is a writable mount's directory, as it was when the run began.
type root struct {
	m     job.Mount
	real  string // the resolved host path
	id    fileID
	watch watcher
}

type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// want is one lock a run needs.
type want struct {
	name string // the lock file's name
	dir  string // the directory, for messages
	how  int    // unix.LOCK_EX or unix.LOCK_SH
}

// Begin takes the locks of the writable mounts among ms for one run with
// the limits lim (its Timeout bounds the wait) that began at begin. It
// returns the Lock, to be ended by End (or kept by Keep) once the run is
// over; or, when the run ends before it starts, its Result: Cancelled when
// ctx ended during the wait, Timeout when the wait outlasted lim.Timeout;
// or an error (the lock directory is unsafe or unusable). A run without a
// writable mount gets the zero Lock at once. A writable mount whose host
// directory cannot be resolved, or is not a directory, is left to the
// engine, which refuses it.
func Begin(ctx context.Context, ms []job.Mount, lim job.Limits, begin time.Time) (*Lock, *job.Result, error) {
	return beginRun(ctx, ms, lim, begin, true)
}

// BeginUnwatched is Begin without the inotify watch of the mounts' roots,
// for a run in a process that ends soon after it (a one-call ccrun): the
// first inotify instance of a process costs its exit an RCU grace period
// of the kernel's (milliseconds, more on a loaded machine: the workspace
// tier's `make -v` paid 3 to 5 ms). End still tells a root that leads to
// another directory at the end, or was replaced; one moved away and back
// during the run is not seen.
func BeginUnwatched(ctx context.Context, ms []job.Mount, lim job.Limits, begin time.Time) (*Lock, *job.Result, error) {
	return beginRun(ctx, ms, lim, begin, false)
}

func beginRun(ctx context.Context, ms []job.Mount, lim job.Limits, begin time.Time, watched bool) (*Lock, *job.Result, error) {
	wants, roots := plan(ms)
	l := &Lock{roots: roots}
	if len(wants) == 0 {
		return l, nil, nil
	}
	dir := Dir()
	if err := checkDir(dir); err != nil {
		return nil, nil, err
	}
	var deadline time.Time
	if lim.Timeout > 0 {
		deadline = begin.Add(lim.Timeout)
	}
	notify, _ := ctx.Value(waitKey{}).(WaitFunc)
	var (
		waitStart time.Time
		waitDir   string // the first directory waited for
	)
	waited := func() {
		if !waitStart.IsZero() {
			l.waited = time.Since(waitStart)
			if notify != nil {
				notify(waitDir, false)
			}
		}
	}
	for _, w := range wants {
		err := l.take(ctx, filepath.Join(dir, w.name), w, deadline, func() {
			if !waitStart.IsZero() {
				return
			}
			waitStart, waitDir, l.busy = time.Now(), w.dir, w.dir
			if w.how == unix.LOCK_EX { // held shared: by a run that writes a directory in it
				l.busy = w.dir + " or a directory in it"
			}
			if notify != nil {
				notify(w.dir, true)
			}
		})
		if err != nil {
			waited()
			l.release()
			res, err := l.stopped(ctx, err, lim, begin)
			return nil, res, err
		}
	}
	waited()
	for i := range l.roots {
		if watched {
			l.roots[i].watch = watch(l.roots[i].real)
		}
	}
	return l, nil, nil
}

// errWaitedOut: the wait for a lock outlasted the run's timeout.
var errWaitedOut = errors.New("mountlock: waited past the timeout")

// stopped is the Result of a run that did not get its locks (err is the
// context's or errWaitedOut), or err itself when it is another error.
func (l *Lock) stopped(ctx context.Context, err error, lim job.Limits, begin time.Time) (*job.Result, error) {
	var r *job.Result
	switch {
	case errors.Is(err, errWaitedOut):
		r = job.Stopped(job.Timeout, lim, fmt.Sprintf(
			"stopped by the %s timeout before the program started: another sandboxed run wrote %s all that time", lim.Timeout, l.busy), false)
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		r = job.Stopped(job.Cancelled, lim, fmt.Sprintf(
			"cancelled by the caller before the program started, after waiting %s for another sandboxed run that writes %s", round(l.waited), l.busy), false)
	default:
		return nil, err
	}
	r.Duration = time.Since(begin)
	return r, nil
}

// plan is the locks a run with mounts ms needs, sorted by name (the one
// order every run takes them in), and the writable mounts' roots.
func plan(ms []job.Mount) ([]want, []root) {
	byName := map[string]want{}
	var roots []root
	add := func(w want) {
		if old, ok := byName[w.name]; !ok || (w.how == unix.LOCK_EX && old.how != unix.LOCK_EX) {
			byName[w.name] = w
		}
	}
	for _, m := range ms {
		if !m.Writable {
			continue
		}
		real, err := m.Resolved()
		if err != nil {
			continue
		}
		fi, err := os.Lstat(real)
		if err != nil || !fi.IsDir() {
			continue
		}
		id, ok := idOf(fi)
		if !ok {
			continue
		}
		roots = append(roots, root{m: m, real: real, id: id})
		add(want{name: lockName(id), dir: real, how: unix.LOCK_EX})
		for p := real; ; {
			up := filepath.Dir(p)
			if up == p {
				break
			}
			p = up
			fi, err := os.Lstat(p)
			if err != nil {
				continue // a directory above that cannot be seen: nobody else's run writes it either
			}
			if id, ok := idOf(fi); ok {
				add(want{name: lockName(id), dir: p, how: unix.LOCK_SH})
			}
		}
	}
	wants := make([]want, 0, len(byName))
	for _, w := range byName {
		wants = append(wants, w)
	}
	slices.SortFunc(wants, func(a, b want) int { return strings.Compare(a.name, b.name) })
	return wants, roots
}

func lockName(id fileID) string { return fmt.Sprintf("%016x-%016x.lock", id.dev, id.ino) }

// checkDir makes the lock directory (0700) when it is missing and refuses
// one that is not a plain directory of this user that only this user may
// write (ErrUnsafe).
func checkDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mount lock directory: %w", err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("mount lock directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir():
			return fmt.Errorf("mount lock directory %s is not a plain directory: %w", d, ErrUnsafe)
		case !ok || int(st.Uid) != os.Getuid():
			return fmt.Errorf("mount lock directory %s is not yours: %w", d, ErrUnsafe)
		case fi.Mode().Perm()&0o022 != 0:
			return fmt.Errorf("mount lock directory %s may be written by others (%v): %w", d, fi.Mode().Perm(), ErrUnsafe)
		}
	}
	return nil
}

// The polling of a lock that is held: the first retry after minPoll, then
// twice as long each time, at most maxPoll.
const (
	minPoll = time.Millisecond
	maxPoll = 50 * time.Millisecond
)

// take locks the file at path as w says, waiting (busy is called before
// each wait) until ctx ends or deadline (zero: none) passes.
func (l *Lock) take(ctx context.Context, path string, w want, deadline time.Time, busy func()) error {
	for delay := minPoll; ; delay = min(2*delay, maxPoll) {
		f, err := try(path, w.how)
		if err != nil {
			return err
		}
		if f != nil {
			l.files = append(l.files, held{f: f, path: path, dir: w.dir})
			return nil
		}
		busy()
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return errWaitedOut
			}
			delay = min(delay, left)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// try opens the lock file at path (made 0600 when missing) and locks it
// (how) without waiting: the file, or nil when another run holds the lock.
// The file locked must still be the one at path (one that was removed or
// replaced meanwhile locks nothing anyone else sees): when it is not, path
// is opened again.
func try(path string, how int) (*os.File, error) {
	for range 8 {
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("mount lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, fmt.Errorf("mount lock %s: %w", path, err)
		}
		if isAt(f, path) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("mount lock: %s keeps being replaced", path)
}

// isAt says whether f is the file at path (not following a link).
func isAt(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, now)
}

// Waited reports whether the run had to wait for another run's lock:
// what it planned from the directory before Begin may be stale (another
// run wrote it meanwhile). False for a nil Lock.
func (l *Lock) Waited() bool { return l != nil && l.waited > 0 }

// End releases l and returns res and err with what a person should know
// about the run's mounts added to the Result's Detail (or, with no Result,
// to the error): that it waited for another run, and that a mount changed
// under it from outside. A nil or zero Lock changes nothing. End is for
// one run: call it once.
func (l *Lock) End(res *job.Result, err error) (*job.Result, error) {
	if l == nil || l.ended {
		return res, err
	}
	notes := l.check()
	l.release()
	note := strings.Join(notes, "; ")
	switch {
	case note == "":
	case res != nil && res.Detail != "":
		res.Detail += "; " + note
	case res != nil:
		res.Detail = note
	case err != nil:
		err = fmt.Errorf("%w (%s)", err, note)
	}
	return res, err
}

// kept holds the Locks of runs whose program outlived them (Keep): their
// files must stay open, and so locked, until the process exits.
var kept struct {
	mu    sync.Mutex
	locks []*Lock
}

// Keep is End for a run whose program is still running when the run is
// over (a one-shot @wasm guest left running): the locks stay held until
// the process exits, which must be soon.
func (l *Lock) Keep() {
	if l == nil || l.ended {
		return
	}
	l.ended = true
	for _, r := range l.roots {
		r.watch.close()
	}
	kept.mu.Lock()
	kept.locks = append(kept.locks, l)
	kept.mu.Unlock()
}

func (l *Lock) release() {
	l.ended = true
	for _, h := range l.files {
		h.f.Close() // unlocks
	}
	l.files = nil
	for _, r := range l.roots {
		r.watch.close()
	}
}

// check is what End reports: the wait, and each change from outside.
func (l *Lock) check() []string {
	var notes []string
	if l.waited > 0 {
		notes = append(notes, fmt.Sprintf("waited %s for another sandboxed run that writes %s", round(l.waited), l.busy))
	}
	for _, r := range l.roots {
		if why := r.changed(); why != "" {
			notes = append(notes, fmt.Sprintf("mount %s changed under the run from outside: %s", r.m, why))
		}
	}
	for _, h := range l.files {
		if !isAt(h.f, h.path) {
			notes = append(notes, fmt.Sprintf("the lock file of %s was removed or replaced during the run: another run may have written it meanwhile", h.dir))
		}
	}
	return notes
}

// changed says how r's directory changed since the run began; "" when it
// did not, as far as can be told.
func (r root) changed() string {
	if r.watch.moved() {
		return "its directory " + r.real + " was moved or removed during the run"
	}
	now, err := r.m.Resolved()
	if err != nil {
		return fmt.Sprintf("its host path no longer leads to a directory (%v)", err)
	}
	if now != r.real {
		return fmt.Sprintf("its host path led to %s when the run began and leads to %s now", r.real, now)
	}
	fi, err := os.Lstat(now)
	if err != nil {
		return fmt.Sprintf("its directory %s is gone (%v)", now, err)
	}
	if id, ok := idOf(fi); !ok || id != r.id {
		return "its directory " + now + " was replaced by another during the run"
	}
	return ""
}

// round is d as a person reads it: milliseconds under a second, else
// tenths.
func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
