//go:build linux

package confine

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/internal/usersock"
)

// Access rights, by the ABI that introduced them.
const (
	readFile = ll.AccessFSExecute | ll.AccessFSReadFile
	readDir  = ll.AccessFSReadDir
	// write rights granted on Policy.Write: open for writing and device
	// ioctls (a terminal's); never truncate, make, remove or refer.
	writeFile = ll.AccessFSWriteFile | ll.AccessFSIoctlDev
	// writeTree are the rights granted on Policy.Writable: every change
	// but making devices, and no reading (what the walk grants).
	writeTree = ll.AccessFSWriteFile | ll.AccessFSIoctlDev | ll.AccessFSTruncate | ll.AccessFSRemoveDir |
		ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
		ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer
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

// noLinks reports whether the clean absolute path p names a directory
// reached with no symbolic link in any component (openat2 with
// RESOLVE_NO_SYMLINKS); false when it cannot tell.
func noLinks(p string) bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
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

// filterOf is buildFilter's program for a Policy's Network and Writable,
// built once each.
func filterOf(network, writable bool) []unix.SockFilter {
	return filters[variant(network, writable)]()
}

func variant(network, writable bool) int {
	v := 0
	if network {
		v |= 1
	}
	if writable {
		v |= 2
	}
	return v
}

var filters = [4]func() []unix.SockFilter{
	sync.OnceValue(func() []unix.SockFilter { return buildFilter(false, false) }),
	sync.OnceValue(func() []unix.SockFilter { return buildFilter(true, false) }),
	sync.OnceValue(func() []unix.SockFilter { return buildFilter(false, true) }),
	sync.OnceValue(func() []unix.SockFilter { return buildFilter(true, true) }),
}

// Seccomp reports whether confined programs also get the seccomp filter
// on this architecture (amd64, arm64).
func Seccomp() bool { return hasSeccomp }

// Ruleset is a prepared Policy. Make one with Prepare, share it among the
// programs of a run, and Close it once every program it started has
// exited. It is safe for concurrent use.
//
// Start starts each program through the helper (helper_linux.go), which
// confines itself in the new process and becomes the program: the
// program's Landlock domain is its own, made by that process, and holds
// nothing of ccrun. Open opens files on a thread of ccrun confined by the
// same ruleset in a domain of its own, made on first use; that thread
// starts no program, so no program shares its domain (a program can trace
// only tasks of its own domain or of domains nested in it).
type Ruleset struct {
	abi         int
	rules       int
	ruleset     *os.File // the Landlock ruleset, handed to every helper
	withSeccomp bool
	network     bool     // Policy.Network: which seccomp program
	writable    bool     // Policy.Writable is not empty: which seccomp program
	mounts      *os.File // Policy.Mask and Protect as the helper reads them; nil: none
	// audit reads what the programs Start starts are refused; nil, and
	// auditWhy says why, where it cannot be read
	audit    *auditor
	auditWhy error
	startsMu sync.Mutex
	starts   map[int]uint64 // pid -> audit's mark before it started

	mu     sync.RWMutex
	closed bool
	// unbound is the Policy rs was prepared from, Protect and Mask aside,
	// which Bind compares; used is set by the first Start or Open, after
	// which Bind refuses
	unbound Policy
	used    atomic.Bool

	opener     sync.Once
	openerErr  error
	reqs       chan func()   // run on the confined opening thread
	exited     chan struct{} // closed when the opening goroutine has returned
	openerMade bool
	// With mounts, the opening thread reaches files through the root of a
	// mount namespace of rs's mounts (startAnchor), kept by nsKeep: the
	// thread's own namespace has no binds.
	nsRoot, nsKeep *os.File
}

// Prepare builds the ruleset of p. It fails with ErrUnavailable when
// Available does, or when this architecture has no helper, and with
// ErrInvalidPolicy for a relative path or a hidden "/". Prepare restricts
// nothing in this process.
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
	if len(helperBin) == 0 {
		_, err := helperFiles() // why not
		return nil, err
	}
	withSeccomp = withSeccomp && hasSeccomp
	// While the ruleset comes, the helper and the seccomp program it
	// reads are sealed in memfds (once a process), so that a new
	// process's first Start does not wait for them. Whether the programs'
	// refusals can be read is asked of the kernel after (an audit request,
	// a kernel thread for its reply: not beside the server's answer, which
	// it would slow on two cores), unless the server found audit disabled
	// and says so with the ruleset (serverAudit).
	var (
		helperErr error
		asked     = make(chan struct{})
	)
	go func() {
		defer close(asked)
		h, err := helperFiles()
		if helperErr = err; err == nil && withSeccomp {
			_, _ = h.filter(p.Network, len(p.Writable) > 0) // an error is Start's to report
		}
	}()
	fd, rules, auditOff, ok := fromServer(p, abi)
	if !ok {
		if fd, rules, err = cachedDup(p, abi); err != nil {
			<-asked
			return nil, err
		}
	}
	<-asked
	if helperErr != nil {
		unix.Close(fd)
		return nil, helperErr
	}
	rs := &Ruleset{abi: abi, rules: rules, ruleset: os.NewFile(uintptr(fd), "landlock-ruleset"),
		withSeccomp: withSeccomp, network: p.Network, writable: len(p.Writable) > 0, unbound: p.Unbound()}
	if auditOff && abi >= 7 {
		rs.auditWhy = errDisabled
	} else {
		rs.audit, rs.auditWhy = auditFor(abi)
	}
	if len(p.Protect) > 0 || len(p.Mask) > 0 {
		if rs.mounts, err = mountList(p); err != nil {
			rs.ruleset.Close()
			return nil, err
		}
	}
	return rs, nil
}

// Bind makes rs bind p's Protect and Mask for every program it starts,
// and for the files it opens, as a Ruleset prepared from p would: the
// Landlock ruleset holds neither (Policy.Unbound), so a ruleset prepared
// from p.Unbound() beforehand, beside the search that finds them, is p's
// once bound. It replaces what rs bound before. It fails with
// ErrInvalidPolicy when p is not the policy rs was prepared from, Protect
// and Mask aside, and once rs has started a program or opened a file (or
// after Close, with ErrClosed): what runs is never bound twice over.
func (rs *Ruleset) Bind(p Policy) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch {
	case rs.closed:
		return fmt.Errorf("confine: bind: %w", ErrClosed)
	case rs.used.Load():
		return fmt.Errorf("confine: bind: the ruleset has started a program or opened a file: %w", ErrInvalidPolicy)
	case !p.Unbound().Equal(rs.unbound):
		return fmt.Errorf("confine: bind: not the policy the ruleset was prepared from: %w", ErrInvalidPolicy)
	}
	for _, x := range append(slices.Clip(p.Protect), p.Mask...) {
		if !filepath.IsAbs(x) {
			return fmt.Errorf("confine: bind %q: not absolute: %w", x, ErrInvalidPolicy)
		}
	}
	var mounts *os.File
	if len(p.Protect) > 0 || len(p.Mask) > 0 {
		var err error
		if mounts, err = mountList(p); err != nil {
			return err
		}
	}
	if rs.mounts != nil {
		rs.mounts.Close()
	}
	rs.mounts = mounts
	return nil
}

// mountList is the helper's list of mounts for p's Mask and Protect (see
// helper/helper.c), in a sealed memfd.
func mountList(p Policy) (*os.File, error) {
	var list []byte
	entry := func(kind byte, x string) { list = append(append(append(list, kind), x...), 0) }
	if len(p.Mask) > 0 {
		empty, err := emptyDir()
		if err != nil {
			return nil, err
		}
		entry('e', empty)
	}
	for _, x := range p.Mask {
		entry('h', path.Clean(x))
	}
	pinned := map[string]bool{}
	for _, x := range p.Protect {
		// the directories it lies in, beneath the Writable one, outermost
		// first: a rename of one would take the protected path along
		x = path.Clean(x)
		for _, root := range p.Writable {
			rest, ok := strings.CutPrefix(x, path.Clean(root)+"/")
			if !ok {
				continue
			}
			cs := strings.Split(rest, "/")
			for i := 1; i < len(cs); i++ {
				if d := path.Join(root, strings.Join(cs[:i], "/")); !pinned[d] {
					pinned[d] = true
					entry('p', d)
				}
			}
		}
	}
	for _, x := range p.Protect {
		entry('r', path.Clean(x))
	}
	return sealedMemfd("ccrun-mounts", list)
}

// emptyDir is the empty directory Mask binds over hidden directories:
// "empty" (0555) in this user's socket directory, made on first use.
var emptyDir = sync.OnceValues(func() (string, error) {
	dir := usersock.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("confine: %w: %w", ErrUnavailable, err)
	}
	if err := usersock.CheckDir(dir); err != nil {
		return "", fmt.Errorf("confine: %w: %w", ErrUnavailable, err)
	}
	empty := path.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o555); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("confine: %w: %w", ErrUnavailable, err)
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) > 0 {
		return "", fmt.Errorf("confine: %s is not an empty directory: %w", empty, ErrUnavailable)
	}
	return empty, nil
})

// startOpener makes the confined thread that Open uses.
func (rs *Ruleset) startOpener() error {
	rs.opener.Do(func() {
		// os/exec checks once, process-wide, whether pidfds work, by
		// signalling this process: do it here, unconfined, rather than
		// on the confined thread, whose signals to ccrun are scoped away.
		if pr, err := os.FindProcess(os.Getpid()); err == nil {
			pr.Release()
		}
		if rs.mounts != nil {
			if rs.nsRoot, rs.nsKeep, rs.openerErr = startAnchor(rs); rs.openerErr != nil {
				return
			}
		}
		var filter []unix.SockFilter
		if rs.withSeccomp {
			filter = filterOf(rs.network, rs.writable)
		}
		rs.reqs, rs.exited = make(chan func()), make(chan struct{})
		ready := make(chan error, 1)
		go rs.serve(int(rs.ruleset.Fd()), filter, ready)
		if rs.openerErr = <-ready; rs.openerErr != nil {
			<-rs.exited
			return
		}
		rs.openerMade = true
	})
	return rs.openerErr
}

// serve is the confined opening goroutine. It locks itself to its OS
// thread and never unlocks: when it returns, the runtime ends the thread
// and the restriction with it.
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
	flags := 0
	if rs.abi >= 7 {
		// the script's own opens are said by their caller: not to the
		// machine's audit log too
		flags = restrictLogSameOff
	}
	if err := restrictThread(fd, flags, filter); err != nil {
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
func restrictThread(fd, flags int, filter []unix.SockFilter) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("confine: no_new_privs: %w: %w", ErrUnavailable, err)
	}
	if err := ll.LandlockRestrictSelf(fd, uint32(flags)); err != nil {
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

// Start starts cmd (as cmd.Start would) confined: the program and
// everything it forks run under the ruleset, in a Landlock domain of their
// own. cmd.ExtraFiles must be empty. It fails with ErrClosed after Close.
func (rs *Ruleset) Start(cmd *exec.Cmd) error {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	if rs.closed {
		return fmt.Errorf("confine: start %s: %w", cmd.Path, ErrClosed)
	}
	rs.used.Store(true)
	return startHelper(cmd, rs, nil, nil)
}

// Open opens a file (as os.OpenFile would) from the confined opening
// thread, so that the ruleset decides: for the files a shell interpreter
// running in this process opens on behalf of a confined script (its
// redirections). It fails with ErrClosed after Close.
func (rs *Ruleset) Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	var (
		f   *os.File
		err error
	)
	ok, oerr := rs.do(func() { f, err = rs.openOnThread(name, flag, perm) })
	if oerr != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: oerr}
	}
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrClosed}
	}
	return f, err
}

// openOnThread is os.OpenFile on the confined opening thread; with
// mounts, an absolute name is resolved in their namespace, from its root
// (RESOLVE_IN_ROOT: an absolute symbolic link too), so that a protected
// path is read-only there as it is to the programs.
func (rs *Ruleset) openOnThread(name string, flag int, perm os.FileMode) (*os.File, error) {
	if rs.nsRoot == nil || !filepath.IsAbs(name) {
		return os.OpenFile(name, flag, perm)
	}
	mode := uint64(perm.Perm()) // a redirection makes no setuid file
	if flag&(os.O_CREATE|unix.O_TMPFILE) == 0 {
		mode = 0 // openat2 refuses a mode it would not use
	}
	for {
		fd, err := unix.Openat2(int(rs.nsRoot.Fd()), name, &unix.OpenHow{Flags: uint64(flag) | unix.O_CLOEXEC | unix.O_LARGEFILE,
			Mode: mode, Resolve: unix.RESOLVE_IN_ROOT})
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// do runs f on the confined opening thread, made on first use, and waits
// for it; false when closed.
func (rs *Ruleset) do(f func()) (bool, error) {
	done := make(chan struct{})
	rs.mu.RLock()
	if rs.closed {
		rs.mu.RUnlock()
		return false, nil
	}
	rs.used.Store(true)
	if err := rs.startOpener(); err != nil {
		rs.mu.RUnlock()
		return false, err
	}
	rs.reqs <- func() { f(); close(done) }
	rs.mu.RUnlock()
	<-done
	return true, nil
}

// ProgramRefusals reports whether what Landlock refuses the programs
// Start starts is read (Refused): nil, or why not (audit disabled, a
// capability missing, a kernel before Landlock ABI 7). What the script's
// own opens through Open are refused is their error in any case.
func (rs *Ruleset) ProgramRefusals() error {
	if rs.audit == nil {
		return rs.auditWhy
	}
	return nil
}

// Refused returns what Landlock refused the program Start started as pid,
// and what it forked, since the last call for pid: each file read or
// written and TCP port connected to, at most 20, once each. Call it once
// the program has exited (it waits until audit has delivered every record
// queued until now). Nil, with ProgramRefusals's error, where refusals are
// not read; an error also when some may be missing.
func (rs *Ruleset) Refused(pid int) ([]Refusal, error) {
	if rs.audit == nil {
		return nil, rs.auditWhy
	}
	rs.startsMu.Lock()
	since, ok := rs.starts[pid]
	rs.startsMu.Unlock()
	if !ok {
		return nil, nil
	}
	return rs.audit.take(pid, since)
}

// RefusedRest is Refused for every program Start started: what they, and
// what they left running, were refused since the last call for each. For
// the end of a run, once its processes are gone: one wait for audit for
// all of them.
func (rs *Ruleset) RefusedRest() ([]Refusal, error) {
	if rs.audit == nil {
		return nil, rs.auditWhy
	}
	rs.startsMu.Lock()
	starts := maps.Clone(rs.starts)
	rs.startsMu.Unlock()
	if len(starts) == 0 {
		return nil, nil
	}
	return rs.audit.takeAll(starts)
}

// ProgramRefusals reports whether what Landlock refuses confined programs
// is read on this machine (for ccrun check): nil, or why not. It starts
// the reader when it can.
func ProgramRefusals() error {
	abi, err := Available()
	if err != nil {
		return err
	}
	_, err = auditFor(abi)
	return err
}

// started notes a program Start started, for Refused.
func (rs *Ruleset) started(pid int, mark uint64) {
	if rs.audit == nil {
		return
	}
	rs.startsMu.Lock()
	defer rs.startsMu.Unlock()
	if rs.starts == nil {
		rs.starts = map[int]uint64{}
	}
	rs.starts[pid] = mark
}

// ABI is the Landlock ABI version the ruleset was built for.
func (rs *Ruleset) ABI() int { return rs.abi }

// Rules is the number of Landlock rules in the ruleset.
func (rs *Ruleset) Rules() int { return rs.rules }

// Close ends the confined opening thread, if one was made, and releases
// the ruleset. Programs Start started keep running, confined: close a
// Ruleset once they have exited. Close is idempotent.
func (rs *Ruleset) Close() error {
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return nil
	}
	rs.closed = true
	made := rs.openerMade
	if made {
		close(rs.reqs)
	}
	rs.mu.Unlock()
	if made {
		<-rs.exited
	}
	if rs.mounts != nil {
		rs.mounts.Close()
	}
	for _, f := range []*os.File{rs.nsRoot, rs.nsKeep} {
		if f != nil {
			f.Close()
		}
	}
	return rs.ruleset.Close()
}

// MountNamespace reports whether a confined program can have a mount
// namespace of its own here, as the helper makes one for Protect and
// Mask (CLONE_NEWNS, in a new user namespace when not root), or why not:
// without one, a workspace run's protected paths cannot be bound
// read-only and its start fails. It starts /bin/true so (a millisecond or
// two): for ccrun check and doctor, not for every run.
func MountNamespace() error {
	flags := uintptr(unix.CLONE_NEWNS)
	attr := &syscall.SysProcAttr{}
	if os.Geteuid() != 0 {
		flags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	}
	attr.Cloneflags = flags
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = attr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("confine: no mount namespace for a confined program (%w): %w", err, ErrUnavailable)
	}
	return nil
}
