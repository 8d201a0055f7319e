package shell

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// becomeSubreaper makes this process a child subreaper, once.
func becomeSubreaper() error {
	subreaperOnce.Do(func() {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	return subreaperErr
}

// procAttr puts each program in a process group of its own, and kills it
// if ccrun dies first. When ccrun has a controlling terminal (detach set),
// the program gets a session of its own instead: it then has no
// controlling terminal, so one that reads the terminal or opens /dev/tty to
// ask something (sudo, ssh) fails at once instead of being stopped by
// SIGTTIN until the timeout, as a background group of ccrun's terminal
// would be. A new session is not free (with sched_autogroup it costs about
// a millisecond per program), hence only when there is a terminal to leave.
// Ctrl-C in ccrun's terminal reaches ccrun alone, which cancels the run.
//
// PR_SET_PDEATHSIG fires when the thread that started the program exits;
// Go ends a thread only when a goroutine locked to it with
// runtime.LockOSThread returns. The only such goroutine is a confined
// run's (internal/confine), and it returns only once the run is over.
func procAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// hasTerminal reports whether this process has a controlling terminal.
func hasTerminal() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// killGroup kills a process group.
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupGone reports whether process group pgid has no process left, not
// even a zombie.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// proc is one line of /proc/PID/stat.
type proc struct {
	pid, ppid, pgid int
	zombie          bool
	start           uint64 // clock ticks after boot: with pid, names a process
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (proc, bool) {
	var buf [512]byte
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return proc{}, false
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return proc{}, false
	}
	b := buf[:n]
	// pid (comm) state ppid pgrp session ... starttime is field 22; comm
	// may hold spaces and parentheses, so cut at the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, zombie: f[0][0] == 'Z' || f[0][0] == 'X'}
	p.ppid, _ = strconv.Atoi(string(f[1]))
	p.pgid, _ = strconv.Atoi(string(f[2]))
	p.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return p, true
}

// hasChildrenFiles reports whether the kernel lists a task's children in
// /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN).
var hasChildrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/children")
	return err == nil
})

// scanOnly makes listProcs scan all of /proc even where the kernel has
// children files; the tests set it to cover both ways.
var scanOnly = false

// listProcs returns the descendants of self: walked down from self through
// the children files when the kernel has them, or else every process in
// /proc (attribute only follows parent links from self either way).
func listProcs(self int) map[int]proc {
	if scanOnly || !hasChildrenFiles() {
		return scan()
	}
	procs := make(map[int]proc)
	queue := []int{self}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		tids, _ := d.Readdirnames(-1)
		d.Close()
		for _, tid := range tids {
			b, err := os.ReadFile(dir + tid + "/children")
			if err != nil {
				continue
			}
			for _, f := range bytes.Fields(b) {
				c, err := strconv.Atoi(string(f))
				if err != nil {
					continue
				}
				if _, ok := procs[c]; ok {
					continue
				}
				if p, ok := readStat(c); ok {
					procs[c] = p
					queue = append(queue, c)
				}
			}
		}
	}
	return procs
}

// hasMarker reports whether process pid was started with marker in its
// environment. A zombie has no environment left.
func hasMarker(pid int, marker string) bool {
	if marker == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	m := []byte(marker + "\x00")
	return bytes.HasPrefix(b, m) || bytes.Contains(b, append([]byte{0}, m...))
}

// scan reads every process in /proc.
func scan() map[int]proc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	procs := make(map[int]proc, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			procs[pid] = p
		}
	}
	return procs
}

// attribute returns the processes of a run: its live direct children; the
// orphans re-parented to this process that are still in one of its groups
// or carry its marker; and every descendant of those.
func attribute(procs map[int]proc, self int, children, groups []int, marker string) []proc {
	kids := make(map[int][]int, len(procs))
	for _, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	inGroups := make(map[int]bool, len(groups))
	for _, g := range groups {
		inGroups[g] = true
	}
	seen := make(map[int]bool)
	var queue []int
	for _, c := range children {
		if p, ok := procs[c]; ok && p.ppid == self {
			queue = append(queue, c)
			seen[c] = true
		}
	}
	// Orphans: by group, or by marker for those that left the run's
	// groups. An orphan in one of the run's groups is never its leader (the
	// leaders are the direct children), so a leader of a group whose number
	// was once the run's is another run's program and never taken here.
	for _, pid := range kids[self] {
		if seen[pid] {
			continue
		}
		if p := procs[pid]; (p.pgid != pid && inGroups[p.pgid]) || hasMarker(pid, marker) {
			queue = append(queue, pid)
			seen[pid] = true
		}
	}
	var out []proc
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, procs[pid])
		for _, k := range kids[pid] {
			if !seen[k] {
				seen[k] = true
				queue = append(queue, k)
			}
		}
	}
	return out
}

// target is a process being killed, held by a pidfd so that a recycled pid
// is never signalled. fd is -1 when the kernel has no pidfds; then the pid
// is used, checked against the start time just before.
type target struct {
	proc
	fd     int
	reaped bool
}

func open(p proc) (*target, bool) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil && !errors.Is(err, syscall.ENOSYS) {
		return nil, false // gone
	}
	if err != nil {
		fd = -1
	}
	// The pidfd names whatever process had the pid when it was opened:
	// make sure it is still the one the scan saw.
	if q, ok := readStat(p.pid); !ok || q.start != p.start {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, false
	}
	return &target{proc: p, fd: fd}, true
}

func (t *target) signal(sig syscall.Signal) {
	if t.fd >= 0 {
		_ = unix.PidfdSendSignal(t.fd, sig, nil, 0)
		return
	}
	if q, ok := readStat(t.pid); ok && q.start == t.start {
		_ = syscall.Kill(t.pid, sig)
	}
}

// reap collects t if it is a zombie child of this process. It reports
// whether t is gone for good (reaped here, or by another parent).
func (t *target) reap() bool {
	if t.reaped {
		return true
	}
	var info unix.Siginfo
	var err error
	if t.fd >= 0 {
		err = unix.Waitid(unix.P_PIDFD, t.fd, &info, unix.WEXITED|unix.WNOHANG, nil)
	} else {
		if q, ok := readStat(t.pid); !ok || q.start != t.start {
			t.reaped = true
			return true
		}
		err = unix.Waitid(unix.P_PID, t.pid, &info, unix.WEXITED|unix.WNOHANG, nil)
	}
	switch {
	case err == nil && info.Signo != 0: // collected
		t.reaped = true
	case err == nil: // our child, still running (dying)
	case errors.Is(err, syscall.ECHILD):
		// Not our child (yet): its parent is in the run and dying, so it
		// will either be reaped there or re-parented here. It is gone for
		// good once its pid is.
		if q, ok := readStat(t.pid); !ok || q.start != t.start {
			t.reaped = true
		}
	default:
		t.reaped = true // nothing more can be done with it
	}
	return t.reaped
}

func (t *target) close() {
	if t.fd >= 0 {
		unix.Close(t.fd)
	}
}

// killTree kills every process of a run (see attribute) and reaps those
// that end up as this process's children, except the direct children
// (os/exec reaps those). It first stops them all with SIGSTOP, rescanning
// until no new process appears, so that none can fork away while it works.
// It returns how many live processes it killed.
func killTree(children, groups []int, marker string) int {
	self := os.Getpid()
	direct := make(map[int]bool, len(children))
	for _, c := range children {
		direct[c] = true
	}
	held := make(map[int]*target)
	live := 0 // processes found alive, the ones killed
	defer func() {
		for _, t := range held {
			t.close()
		}
	}()
	for range 100 {
		fresh := 0
		for _, p := range attribute(listProcs(self), self, children, groups, marker) {
			if t, ok := held[p.pid]; ok && t.start == p.start {
				continue
			}
			t, ok := open(p)
			if !ok {
				continue
			}
			if old, ok := held[p.pid]; ok {
				old.close()
			}
			held[p.pid] = t
			if !p.zombie {
				t.signal(syscall.SIGSTOP)
				live++
			}
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	for _, t := range held {
		t.signal(syscall.SIGKILL)
	}
	// Reap. SIGKILL is not instant (a process may be in the middle of a
	// system call), so poll, with a bound.
	deadline := time.Now().Add(5 * time.Second)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		pending := 0
		for _, t := range held {
			if direct[t.pid] && t.ppid == self {
				continue // os/exec's
			}
			if !t.reap() {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(delay)
	}
	return live
}
