//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"unsafe"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Access rights, by the ABI that introduced them.
const (
	readFile = ll.AccessFSExecute | ll.AccessFSReadFile
	readDir  = ll.AccessFSReadDir
	// write rights granted on Policy.Write: open for writing and device
	// ioctls (a terminal's); never truncate, make, remove or refer.
	writeFile = ll.AccessFSWriteFile | ll.AccessFSIoctlDev
)

// handledFS is every file system right the ABI knows: all handled, so all
// refused but what a rule grants.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1 // + resolving pathname unix sockets
	case abi >= 5:
		return 1<<16 - 1 // + device ioctls
	case abi >= 3:
		return 1<<15 - 1 // + truncate
	case abi == 2:
		return 1<<14 - 1 // + refer
	default:
		return 1<<13 - 1
	}
}

// handledNet is every network right the ABI knows.
func handledNet(abi int) uint64 {
	switch {
	case abi >= 10:
		return 1<<4 - 1 // + UDP bind and connect/send
	case abi >= 4:
		return 1<<2 - 1 // TCP bind and connect
	default:
		return 0
	}
}

// scoped is every scope the ABI knows.
func scoped(abi int) uint64 {
	if abi >= 6 {
		return ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	return 0
}

// Available reports the kernel's Landlock ABI version, or ErrUnavailable
// when EnvVar is "off", when Landlock is missing or disabled, or when its
// ABI is below MinABI.
func Available() (abi int, err error) {
	if off() {
		return 0, fmt.Errorf("confine: %s=off: %w", EnvVar, ErrUnavailable)
	}
	abi, err = ll.LandlockGetABIVersion()
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOSYS):
			return 0, fmt.Errorf("confine: landlock: not in this kernel: %w", ErrUnavailable)
		case errors.Is(err, unix.EOPNOTSUPP):
			return 0, fmt.Errorf("confine: landlock: disabled at boot (not in the lsm= list): %w", ErrUnavailable)
		}
		return 0, fmt.Errorf("confine: landlock: %w: %w", ErrUnavailable, err)
	}
	if abi < MinABI {
		return abi, fmt.Errorf("confine: landlock ABI %d, want %d or later (Linux 6.7) to refuse TCP: %w", abi, MinABI, ErrUnavailable)
	}
	return abi, nil
}

// theFilter is buildFilter's program, built once.
var theFilter = sync.OnceValue(buildFilter)

// Seccomp reports whether confined programs also get the seccomp filter
// on this architecture (amd64, arm64).
func Seccomp() bool { return hasSeccomp }

// Ruleset is a prepared Policy and the confined thread that starts
// programs under it. Make one with Prepare, share it among the programs of
// a run, and Close it once every program it started has exited. It is
// safe for concurrent use.
type Ruleset struct {
	abi   int
	rules int
	reqs  chan func() // run on the confined thread

	mu     sync.RWMutex
	closed bool
	exited chan struct{} // closed when the confined goroutine has returned
}

// Prepare builds the ruleset of p and the thread that will start programs
// under it. It fails with ErrUnavailable when Available does, and with
// ErrInvalidPolicy for a relative path or a hidden "/". Prepare restricts nothing but that one thread.
func Prepare(p Policy) (*Ruleset, error) {
	return prepare(p, hasSeccomp)
}

// prepare is Prepare with the seccomp filter optional, so that tests can
// prove what Landlock refuses on its own.
func prepare(p Policy, withSeccomp bool) (*Ruleset, error) {
	abi, err := Available()
	if err != nil {
		return nil, err
	}
	// os/exec checks once, process-wide, whether pidfds work, by signalling
	// this process: do it here, unconfined, rather than on the confined
	// thread, whose signals to ccrun are scoped away.
	if pr, err := os.FindProcess(os.Getpid()); err == nil {
		pr.Release()
	}

	b, err := cached(p, abi)
	if err != nil {
		return nil, err
	}
	fd, err := unix.FcntlInt(uintptr(b.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("confine: dup ruleset: %w: %w", ErrUnavailable, err)
	}
	defer unix.Close(fd)
	var filter []unix.SockFilter
	if withSeccomp {
		filter = theFilter()
	}
	rs := &Ruleset{abi: abi, rules: int(b.rules.Load()), reqs: make(chan func()), exited: make(chan struct{})}
	ready := make(chan error, 1)
	go rs.serve(fd, filter, ready)
	if err := <-ready; err != nil {
		<-rs.exited
		return nil, err
	}
	return rs, nil
}

// serve is the confined goroutine. It locks itself to its OS thread and
// never unlocks: when it returns, the runtime ends the thread and the
// restriction with it.
func (rs *Ruleset) serve(fd int, filter []unix.SockFilter, ready chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread: the runtime never ends it (it parks it for good
		// when its locked goroutine returns), and /proc/PID is its. Hold it
		// while another goroutine, which cannot get it now, serves; then
		// give it back unrestricted.
		done := make(chan struct{})
		go func() { rs.serve(fd, filter, ready); close(done) }()
		<-done
		runtime.UnlockOSThread()
		return
	}
	defer close(rs.exited)
	if err := restrictThread(fd, filter); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range rs.reqs {
		f()
	}
}

// restrictThread confines the calling thread (locked): no new privileges,
// the Landlock domain, then the seccomp filter.
func restrictThread(fd int, filter []unix.SockFilter) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("confine: no_new_privs: %w: %w", ErrUnavailable, err)
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("confine: landlock_restrict_self: %w: %w", ErrUnavailable, err)
	}
	if len(filter) > 0 {
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
			return fmt.Errorf("confine: seccomp filter: %w: %w", ErrUnavailable, err)
		}
		runtime.KeepAlive(filter)
	}
	return nil
}

// Start starts cmd (as cmd.Start would) from the confined thread: the
// program and everything it forks run under the ruleset. It fails with
// ErrClosed after Close.
func (rs *Ruleset) Start(cmd *exec.Cmd) error {
	var err error
	if !rs.do(func() { err = cmd.Start() }) {
		return fmt.Errorf("confine: start %s: %w", cmd.Path, ErrClosed)
	}
	return err
}

// Open opens a file (as os.OpenFile would) from the confined thread, so
// that the ruleset decides: for the files a shell interpreter running in
// this process opens on behalf of a confined script (its redirections).
// It fails with ErrClosed after Close.
func (rs *Ruleset) Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	var (
		f   *os.File
		err error
	)
	if !rs.do(func() { f, err = os.OpenFile(name, flag, perm) }) {
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrClosed}
	}
	return f, err
}

// do runs f on the confined thread and waits for it; false when closed.
func (rs *Ruleset) do(f func()) bool {
	done := make(chan struct{})
	rs.mu.RLock()
	if rs.closed {
		rs.mu.RUnlock()
		return false
	}
	rs.reqs <- func() { f(); close(done) }
	rs.mu.RUnlock()
	<-done
	return true
}

// ABI is the Landlock ABI version the ruleset was built for.
func (rs *Ruleset) ABI() int { return rs.abi }

// Rules is the number of Landlock rules in the ruleset.
func (rs *Ruleset) Rules() int { return rs.rules }

// Close ends the confined thread. A program it started that is still
// running then gets its PR_SET_PDEATHSIG signal, if it asked for one: close
// a Ruleset only once its programs have exited. Close is idempotent.
func (rs *Ruleset) Close() error {
	rs.mu.Lock()
	if !rs.closed {
		rs.closed = true
		close(rs.reqs)
	}
	rs.mu.Unlock()
	<-rs.exited
	return nil
}
