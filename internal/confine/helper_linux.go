//go:build linux

package confine

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The helper: every confined program is started through ccrun-confine
// (helper/helper.c), which ccrun starts unconfined in the new process; it
// restricts itself and then becomes the program by execve. Its protocol:
// argv "ccrun-confine PATH ARGV0 ARGS...", fd 3 the Landlock ruleset,
// fd 4 the seccomp program, fd 5 a status pipe that a successful execve
// closes with nothing written, and that gets (step, errno) on a failure.

// Steps of the helper, as it reports them on its status pipe.
const (
	stepExec = iota
	stepUsage
	stepNoNewPrivs
	stepLandlock
	stepFilter
	stepSeccomp
	stepStatus
	stepProtectList
	stepUnshare
	stepIDMap
	stepPrivate
	stepProtect
	stepCwd
	stepCaps
	stepSetns
	stepLoopback
	stepListen
	stepNsFd
	stepSend
)

var stepNames = [...]string{"exec", "usage", "no_new_privs", "landlock_restrict_self", "reading the seccomp program", "seccomp filter", "status pipe",
	"reading the protected paths", "the mount namespace (unshare)", "the user namespace's id maps", "making the mounts private",
	"a protected path (a symbolic link, gone, or not bindable)", "the working directory (gone, or out of reach) after the binds",
	"dropping the capabilities", "entering the run's user and network namespaces (setns)", "the namespace's loopback",
	"the namespace's listener", "opening the namespace", "sending the namespace"}

// helperFD is the lowest descriptor number the helper's memfds take: above
// the ones os/exec makes in the child (stdio, then ExtraFiles as 3, 4, 5),
// so that none is overwritten before the execve that reads it.
const helperFD = 100

// helperFiles is the helper program and the seccomp program, each in a
// sealed memfd, made once per process.
var helperFiles = sync.OnceValues(func() (*helperSet, error) {
	if len(helperBin) == 0 {
		return nil, fmt.Errorf("confine: no confinement helper for %s: %w", runtime.GOARCH, ErrUnavailable)
	}
	exe, err := sealedMemfd("ccrun-confine", helperBin)
	if err != nil {
		return nil, err
	}
	none, err := sealedMemfd("ccrun-empty", nil)
	if err != nil {
		exe.Close()
		return nil, err
	}
	return &helperSet{exe: exe, path: fmt.Sprintf("/proc/self/fd/%d", exe.Fd()), empty: none}, nil
})

type helperSet struct {
	exe   *os.File // kept open for the life of the process
	path  string   // exe, by its /proc/self/fd name
	empty *os.File // an empty file: no seccomp program (Landlock alone, tests), no protected path

	mu      sync.Mutex
	filters [4]*os.File // the seccomp programs, by variant; made on first use
}

// filter returns the sealed memfd of the seccomp program for a Policy's
// Network and Writable (empty where this architecture has none).
func (h *helperSet) filter(network, writable bool) (*os.File, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := variant(network, writable)
	if h.filters[v] == nil {
		f, err := programMemfd("ccrun-seccomp", filterOf(network, writable))
		if err != nil {
			return nil, err
		}
		h.filters[v] = f
	}
	return h.filters[v], nil
}

// programMemfd is sealedMemfd of a seccomp program (empty when prog is).
func programMemfd(name string, prog []unix.SockFilter) (*os.File, error) {
	var data []byte
	if len(prog) > 0 {
		data = unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), len(prog)*int(unsafe.Sizeof(prog[0])))
	}
	return sealedMemfd(name, data)
}

// sealedMemfd returns a memfd holding data that nobody can change (sealed
// against writes, growing and shrinking), at a descriptor of helperFD or
// above, close-on-exec.
func sealedMemfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("confine: memfd_create: %w: %w", ErrUnavailable, err)
	}
	defer unix.Close(fd)
	for rest := data; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if err != nil {
			return nil, fmt.Errorf("confine: write %s: %w: %w", name, ErrUnavailable, err)
		}
		rest = rest[n:]
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return nil, fmt.Errorf("confine: seal %s: %w: %w", name, ErrUnavailable, err)
	}
	hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, helperFD)
	if err != nil {
		return nil, fmt.Errorf("confine: dup %s: %w: %w", name, ErrUnavailable, err)
	}
	return os.NewFile(uintptr(hi), name), nil
}

// startHelper starts cmd through the helper, confined by the ruleset in
// rulesetFD: cmd's Path and Args are the program's, and are so again when
// it returns; cmd.Process is the program's (the helper became it). It
// fails as cmd.Start would when the program cannot be executed (an
// *os.PathError with the errno: ENOENT, EACCES, ENOEXEC, ETXTBSY ...), and
// with ErrUnavailable when the confinement could not be applied; either
// way nothing ran unconfined, and the helper has been waited for. A
// non-nil filter is the seccomp program to use instead of rs's. A non-nil
// ns runs the program in a NetNS: with its capabilities dropped, and,
// when ns has the namespaces' files (an ordinary user's NetNS), in them.
func startHelper(cmd *exec.Cmd, rs *Ruleset, filter *os.File, ns *nsFiles) error {
	if len(cmd.ExtraFiles) > 0 {
		return fmt.Errorf("confine: start %s: ExtraFiles are not passed to a confined program: %w", cmd.Path, ErrInvalidPolicy)
	}
	h, err := helperFiles()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("confine: start %s: %w", cmd.Path, err)
	}
	defer r.Close()
	path, args := cmd.Path, cmd.Args
	cmd.Path = h.path
	argv0, mark := "ccrun-confine", uint64(0)
	switch {
	case ns != nil && ns.user != nil:
		argv0 = "ccrun-confine-join"
	case ns != nil:
		argv0 = "ccrun-confine-net"
	}
	if rs.audit != nil {
		argv0, mark = argv0+"-log", rs.audit.mark() // Landlock logs its denials
	}
	cmd.Args = append([]string{argv0, path}, args...)
	protect := h.empty
	if filter == nil {
		filter = h.empty
	}
	if rs.withSeccomp && filter == h.empty {
		if filter, err = h.filter(rs.network, rs.writable); err != nil {
			w.Close()
			return err
		}
	}
	if rs.mounts != nil {
		protect = rs.mounts
	}
	cmd.ExtraFiles = []*os.File{rs.ruleset, filter, w, protect}
	if ns != nil && ns.user != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, ns.user, ns.net)
	}
	err = cmd.Start()
	w.Close()
	cmd.Path, cmd.Args, cmd.ExtraFiles = path, args, nil
	if err != nil {
		return err
	}
	var msg [8]byte
	n, _ := readFull(r, msg[:])
	if n == 0 {
		rs.started(cmd.Process.Pid, mark)
		return nil // the execve closed the pipe: the program runs, confined
	}
	_ = cmd.Wait() // the helper has exited 127
	if n != len(msg) {
		return fmt.Errorf("confine: start %s: the helper ended without a word: %w", path, ErrUnavailable)
	}
	step, errno := binary.NativeEndian.Uint32(msg[:4]), syscall.Errno(binary.NativeEndian.Uint32(msg[4:]))
	if step == stepExec {
		return &os.PathError{Op: "fork/exec", Path: path, Err: errno}
	}
	name := "unknown step"
	if int(step) < len(stepNames) {
		name = stepNames[step]
	}
	return fmt.Errorf("confine: start %s: %s: %w: %w", path, name, ErrUnavailable, errno)
}

// startAnchor makes the mount namespace of rs's mounts, in which the
// files a confined script itself opens are reached (Ruleset.Open): it
// starts the helper as the anchor (helper/helper.c), which makes the
// namespace and waits; opens its root directory (O_PATH) and the
// namespace itself, which keeps the namespace's mounts in place once the
// anchor has exited; and lets it exit. Called before the opening thread
// restricts itself (its /proc/PID is hidden after).
func startAnchor(rs *Ruleset) (root, ns *os.File, err error) {
	h, err := helperFiles()
	if err != nil {
		return nil, nil, err
	}
	filter := h.empty
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("confine: anchor: %w: %w", ErrUnavailable, err)
	}
	defer r.Close()
	in, hold, err := os.Pipe() // the anchor's stdin: it exits when hold is closed
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("confine: anchor: %w: %w", ErrUnavailable, err)
	}
	defer hold.Close()
	cmd := &exec.Cmd{Path: h.path, Args: []string{"ccrun-confine", "", ""}, Dir: "/", Stdin: in,
		ExtraFiles: []*os.File{rs.ruleset, filter, w, rs.mounts}}
	err = cmd.Start()
	w.Close()
	in.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("confine: anchor: %w: %w", ErrUnavailable, err)
	}
	defer func() {
		hold.Close()
		_ = cmd.Wait()
	}()
	var msg [8]byte
	if n, _ := readFull(r, msg[:]); n != 0 {
		step := binary.NativeEndian.Uint32(msg[:4])
		name := "unknown step"
		if int(step) < len(stepNames) {
			name = stepNames[step]
		}
		return nil, nil, fmt.Errorf("confine: anchor: %s: %w: %w", name, ErrUnavailable, syscall.Errno(binary.NativeEndian.Uint32(msg[4:])))
	}
	proc := fmt.Sprintf("/proc/%d/", cmd.Process.Pid) // not reaped: the pid is the anchor's
	rootFd, err := unix.Open(proc+"root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("confine: anchor: %w: %w", ErrUnavailable, err)
	}
	nsFd, err := unix.Open(proc+"ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(rootFd)
		return nil, nil, fmt.Errorf("confine: anchor: %w: %w", ErrUnavailable, err)
	}
	return os.NewFile(uintptr(rootFd), "anchor-root"), os.NewFile(uintptr(nsFd), "anchor-mntns"), nil
}

// readFull reads into b until it is full or the pipe ends.
func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// NonDumpable makes this process non-dumpable (PR_SET_DUMPABLE 0): no
// core file, and its /proc/PID entries belong to root, so that a process
// of the same user cannot ptrace it, read its memory or environment, or
// take its file descriptors, unless it has CAP_SYS_PTRACE. A confined
// program cannot in any case; this holds also for what ccrun runs
// unconfined (a command a person approved) and for any other program of
// the user. The programs it starts are dumpable again (execve resets it).
func NonDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
