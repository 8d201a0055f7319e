package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/internal/confine"
	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/runtime/job"
)

// Confinement, set as Spec.Confine, runs every program of a run under the
// kernel's confinement (Linux Landlock, and a seccomp filter on amd64 and
// arm64), and opens every file the script itself opens (redirections,
// source) under it too: the layer that holds where the Guard cannot see,
// in the programs the script's programs start (find -exec, xargs, git's
// fsmonitor and hooks). What is not granted fails with EACCES.
//
// A program of a confined run may read and execute every file but the
// Hide paths (Read are exceptions), open for writing only the Write paths,
// and never create, remove, rename, link or truncate a file, change a
// mode, owner, time or xattr, open a socket (only socketpair), bind or
// connect TCP, or signal or trace a process outside the run; with
// HideProcesses (ReadOnlyConfinement sets it) it reads no /proc/PID. The
// ruleset is built once per run, when it first starts a program or opens a
// file, or ahead of the run by Warm; internal/confine's documentation
// lists the limits (entries created later in a partly hidden directory,
// names listed in hidden directories, hard links, already-open files).
//
// What the kernel refused is said on the run's stderr ("ccrun: sandbox
// refused: write PATH") and in its detail: the script's own opens always,
// its programs' where internal/confine reads Landlock's denial records
// (audit enabled, root); elsewhere a run that fails says they are not
// reported.
//
// When the kernel cannot confine (no Landlock, ABI below 4, another OS,
// CCRUN_LANDLOCK=off), a run that asks for it fails closed: no program
// starts, and the Result is job.Refused with exit code job.RefusedExit and
// a detail that says why. ConfineAvailable tells beforehand.
type Confinement struct {
	// Hide: absolute paths whose content may not be read or executed (a
	// directory hides everything beneath it). Missing paths are ignored.
	Hide []string
	// Read: absolute paths readable even inside a hidden directory.
	Read []string
	// Write: absolute paths (a directory: everything beneath) that may be
	// opened for writing. Nothing may be created, even there.
	Write []string
	// HideProcesses hides /proc/PID of every process (environments, memory,
	// command lines; /proc/self too, so ps shows nothing): Landlock's
	// ptrace scoping does not keep /proc/PID/environ from a confined
	// program.
	HideProcesses bool
	// Private: absolute directories hidden but for the Search, Read and
	// Write paths at or beneath them (ReadOnlyConfinement: the home
	// directories).
	Private []string
	// Search: absolute directories readable even in a Private one,
	// searched when the ruleset is built, to any depth, for the paths of
	// the dangerous-path table's leak rows, each found hidden
	// (ReadOnlyConfinement: the project, the working directory). A part of
	// a tree too large to search is hidden whole.
	Search []string
	// Writable: absolute directories beneath which programs may also make,
	// remove, rename, link and truncate files (WorkspaceConfinement: the
	// project, the call's temporary directory, the writable directories
	// the settings name), but for Protect.
	Writable []string
	// Protect: absolute paths kept read-only beneath Writable by a
	// read-only bind over each in the run's own mount namespace (a rename
	// over or away, an unlink, a hard link fail too); each must exist and
	// be reached with no symbolic link, or nothing starts.
	Protect []string
	// Mask: absolute paths hidden by an empty read-only bind over each:
	// a file made beside one later is read as any other.
	Mask []string
	// Network keeps sockets and TCP open to the programs.
	Network bool
	// Net, when set with Network, limits the network to named hosts
	// through ccrun's egress proxy (see Net).
	Net *Net
	// Temp, when set, is the run's own temporary directory: TMPDIR points
	// there for the script, and the run removes it when it ends.
	Temp string
	// Sweep, when set, is a directory walked once the run's processes are
	// gone for the implant paths (the dangerous-path table's implant rows)
	// that Protect did not hold, the names that did not exist when it was
	// made (.envrc, ccrun.local.json, sub/.git/hooks): each is removed, and
	// the run says so on its stderr and in its detail.
	Sweep string

	warm    *warmRuleset // Warm's ruleset, for the first run that takes it
	partial bool         // WorkspaceConfinement's search did not reach everything
	// replan searches the project again (WorkspaceConfinement's), for a
	// run that waited for the project's lock: another run wrote it
	// meanwhile
	replan func() (confine.Policy, bool, error)
}

// lock takes the project's lock (internal/mountlock, as the sandboxes
// that mount a directory rw take it) for a workspace run, for the whole
// run and the sweep after it: the binds hold against any writer at any
// moment, but the sweep is a walk after the fact, which another ccrun
// sandbox moving directories about at the same time could dodge, and
// whose "new since the search" would count what another run made
// meanwhile as the user's. A run that had to wait searches the project
// again. Unwatched: a one-call ccrun's exit would pay for the inotify
// instance (mountlock.BeginUnwatched). The zero Lock for a run that is not in the workspace tier; a
// Result when the run ended waiting (cancelled, timed out); an error
// when the lock directory is unsafe.
func (c *Confinement) lock(ctx context.Context, lim job.Limits) (*mountlock.Lock, *job.Result, error) {
	if c == nil || c.Sweep == "" {
		return nil, nil, nil
	}
	lk, early, err := mountlock.BeginUnwatched(ctx, []job.Mount{{Host: c.Sweep, Guest: c.Sweep, Writable: true}}, lim, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("shell: the workspace sandbox's lock of %s: %w: %w", c.Sweep, ErrExecutor, err)
	}
	if early != nil || !lk.Waited() || c.replan == nil {
		return lk, early, nil
	}
	p, complete, err := c.replan()
	if err != nil {
		res, err := lk.End(nil, fmt.Errorf("shell: not run: the workspace sandbox cannot be built (%w): %w", err, ErrExecutor))
		return nil, res, err
	}
	c.Protect, c.Mask, c.partial = p.Protect, p.Mask, !complete
	return lk, nil, nil
}

// Partial reports whether WorkspaceConfinement's search of the project
// stopped before its end (its deepest directories were not searched).
func (c *Confinement) Partial() bool { return c != nil && c.partial }

// Discard releases what a Confinement no run will be given holds: the
// ruleset Warm built, and its Temp directory. A run given c after Discard
// builds its own ruleset, and has no TMPDIR.
func (c *Confinement) Discard() {
	if c == nil {
		return
	}
	c.warm.discard()
	if c.Temp != "" {
		os.RemoveAll(c.Temp)
	}
}

// policy is c as internal/confine's Policy.
func (c *Confinement) policy() confine.Policy {
	return confine.Policy{Hide: c.Hide, Read: c.Read, Write: c.Write, HideProcesses: c.HideProcesses,
		Private: c.Private, Search: c.Search, Writable: c.Writable, Protect: c.Protect, Mask: c.Mask, Network: c.Network}
}

// Warm starts preparing c's ruleset in the background, when script may
// start a program or open a file (a script of builtins only never needs
// one), so that the run given c finds it ready: building it lists the
// directories on the way to the hidden paths and adds a rule per entry,
// about a millisecond that the work before the first program starts (the
// Guard's checks, git's configuration read) then hides. It changes nothing
// of what the run may do: the ruleset is the one the run would build, from
// c's fields as they are when Warm is called, its directories listed a
// little earlier (an entry made since is refused, as one made during the
// run is), and bound when the run takes it to c's Protect and Mask as they
// are then (after a search made again, for a run that waited for the
// project's lock); a run whose Confinement was otherwise changed since
// builds its own, and so does every run after the first that is given c.
// A ruleset no run took
// is closed when the first run given c ends, or once c is garbage. Call
// Warm before giving c to a run, not during one; it does nothing on a nil
// c or a second call.
func (c *Confinement) Warm(script *syntax.File) {
	if c == nil || c.warm != nil || !MayOpen(script) {
		return
	}
	c.warm = warm(c.policy())
	runtime.AddCleanup(c, (*warmRuleset).discard, c.warm)
}

// warm starts preparing the ruleset of p, Protect and Mask aside (the
// Landlock ruleset holds neither: take binds the run's own).
func warm(p confine.Policy) *warmRuleset {
	w := &warmRuleset{policy: p.Unbound(), done: make(chan struct{})} // a copy: the Confinement's own may change
	go func() {
		w.rs, w.err = confine.Prepare(w.policy)
		close(w.done)
	}()
	return w
}

// warmRuleset is a ruleset prepared ahead of its run (Warm), without the
// binds.
type warmRuleset struct {
	policy confine.Policy // Unbound
	done   chan struct{}  // closed once rs and err are set
	rs     *confine.Ruleset
	err    error
	taken  atomic.Bool
}

// take hands the ruleset (or why it could not be built) to the caller,
// once, if it was prepared for p, bound to p's Protect and Mask; ok is
// false when there is none to take.
func (w *warmRuleset) take(p confine.Policy) (rs *confine.Ruleset, ok bool, err error) {
	if w == nil || !w.taken.CompareAndSwap(false, true) {
		return nil, false, nil
	}
	<-w.done
	if !w.policy.Equal(p.Unbound()) {
		if w.rs != nil {
			w.rs.Close()
		}
		return nil, false, nil
	}
	if w.err == nil {
		if err := w.rs.Bind(p); err != nil {
			w.rs.Close()
			return nil, true, err
		}
	}
	return w.rs, true, w.err
}

// discard closes the ruleset if no run took it.
func (w *warmRuleset) discard() {
	if w == nil || !w.taken.CompareAndSwap(false, true) {
		return
	}
	<-w.done
	if w.rs != nil {
		w.rs.Close()
	}
}

// SealedConfinement is the Confinement of a script that MayOpen says opens
// nothing and starts nothing: its ruleset, built only should the script
// start a program or open a file after all, hides everything (/ and every
// process), so that such a program fails with EACCES rather than run with
// less than ReadOnlyConfinement would give. Making it reads no table and
// lists no directory.
func SealedConfinement() *Confinement {
	return &Confinement{Hide: []string{"/"}, HideProcesses: true}
}

// MayOpen reports whether script may start a program or open a file, the
// two things a confined run needs its ruleset for: false only when every
// command is a builtin that does neither, with no redirection. A wrong
// true costs a ruleset built for nothing; a wrong false, the wait for it
// when the run starts a program, or, under SealedConfinement, a program
// that fails.
func MayOpen(script *syntax.File) bool {
	if script == nil {
		return false
	}
	found := false
	syntax.Walk(script, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Redirect:
			found = true
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				name := n.Args[0].Lit()
				switch {
				case name == "" || !interp.IsBuiltin(name):
					found = true // a program, a function, or a word to expand
				case slices.Contains([]string{"exec", "command", "builtin", "eval", "source", ".", "trap"}, name):
					found = true // runs or reads what its arguments say
				}
			}
		}
		return !found
	})
	return found
}

// ErrConfineUnavailable is the class of the error ConfineAvailable returns
// when the kernel cannot confine a run here (errors.Is).
var ErrConfineUnavailable = confine.ErrUnavailable

// ConfineAvailable reports the Landlock ABI version that confined runs
// would get, or an error of class ErrConfineUnavailable saying why they
// cannot run here (a Spec with Confine then fails closed).
func ConfineAvailable() (abi int, err error) { return confine.Available() }

// MissingGuarantees names, one sentence each, what this machine's kernel
// does not give of a tier: the read-only one (workspace false: a command
// nobody approved) or the workspace one (a command a person, a grant, a
// rule or the mode let run). Empty when the tier holds in full. For
// `ccrun check` and doctor: it starts a process to try a mount namespace.
func MissingGuarantees(workspace bool) []string {
	var out []string
	abi, err := confine.Available()
	switch {
	case err != nil && workspace:
		return []string{fmt.Sprintf("kernel confinement (%v): an approved command is not kept to the project, its TMPDIR and "+
			"the writable directories; it writes and reads whatever the user can (with \"shell\": {\"sandbox\": \"required\"} it does not run)", err)}
	case err != nil:
		return []string{fmt.Sprintf("kernel confinement (%v): a read-only command's programs are checked by ccrun only, "+
			"and the commands only the kernel could contain (git, recursive reads) are asked", err)}
	}
	if !confine.Seccomp() {
		out = append(out, "the seccomp filter (none on "+runtime.GOARCH+"): confined programs may open sockets of every family, "+
			"trace processes of their own domain and change modes, owners and times")
	}
	if abi < 6 {
		out = append(out, fmt.Sprintf("signal and abstract-socket scoping (Landlock ABI 6, this kernel has %d): confined programs may "+
			"signal processes outside the run and connect to their abstract unix sockets", abi))
	}
	if workspace {
		if err := confine.MountNamespace(); err != nil {
			out = append(out, fmt.Sprintf("a mount namespace (%v): the protected paths in the project (.git/config, hooks, .envrc...) "+
				"cannot be bound read-only, so an approved command does not start in the workspace tier", err))
		}
	}
	return out
}

// ReadOnlyConfinement is the confinement of a command that runs because it
// was judged read-only and nobody was asked (internal/confine.ReadOnly):
// the home directories are hidden but for dirs (give the project root and
// the working directory), git's user configuration and the $PATH
// directories in them, which are searched to any depth for the dangerous
// paths of the table (internal/sensitive, its Leak rows), each found
// hidden; the absolute ones such as /etc/shadow are hidden, and so are
// /proc/PID of every process and the raw devices under /dev (null, zero,
// full, random, urandom and the terminals stay); nothing but /dev/null and
// the terminals (/dev/tty, /dev/pts) may be written. The search is made
// when the ruleset is built; build it for each run.
func ReadOnlyConfinement(home string, dirs ...string) *Confinement {
	p := confine.ReadOnly(home, dirs...)
	return &Confinement{Hide: p.Hide, Read: p.Read, Write: p.Write, HideProcesses: p.HideProcesses, Private: p.Private, Search: p.Search}
}

// WorkspaceConfinement is the confinement of a command that a person, a
// grant, an allow rule or the mode let run (the workspace tier): it reads
// everything but the dangerous paths (the table's leak rows at their
// absolute places, by name under home, and at any depth in project,
// masked) and /proc/PID; it writes project but for the implant rows that
// exist there (bound read-only: .git/config, .git/hooks, .envrc,
// ccrun.json…), its own temporary directory (Temp, made now) and each of
// writable; it keeps the network. An implant row that does not exist is
// not protected by the kernel. The project is searched breadth first for
// at most 50,000 names; complete is false when its deepest directories
// were left unsearched (nothing there is masked or protected). It fails
// when a protected path is a symbolic link, the project cannot be
// listed, or where nothing can be confined.
func WorkspaceConfinement(home, project string, writable []string) (c *Confinement, complete bool, err error) {
	return workspaceConfinement(home, project, writable, nil)
}

// WarmWorkspace is WorkspaceConfinement and Warm(script) in one, sooner:
// the ruleset starts preparing before the search of project, which it does
// not depend on (its binds are made from what the search found when the
// run takes it), so that the two overlap. A nil script: no ruleset is
// prepared (WorkspaceConfinement).
func WarmWorkspace(home, project string, writable []string, script *syntax.File) (c *Confinement, complete bool, err error) {
	return workspaceConfinement(home, project, writable, script)
}

func workspaceConfinement(home, project string, writable []string, script *syntax.File) (c *Confinement, complete bool, err error) {
	// The calls' temporary directories share one parent, which the
	// ruleset grants: a ruleset that named each call's own would be built
	// anew for every call, where one kept (in process, or by the
	// confinement server) takes a fraction of a millisecond. So a command
	// could write another running call's TMPDIR; each is removed when its
	// call ends.
	parent := filepath.Join(os.TempDir(), "ccrun-calls-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, false, fmt.Errorf("workspace: temporary directory: %w", err)
	}
	if fi, err := os.Lstat(parent); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return nil, false, fmt.Errorf("workspace: temporary directory %s: not a directory of this user's alone", parent)
	}
	for _, w := range writable {
		_ = os.MkdirAll(w, 0o755) // a cache not made yet: Landlock can only grant what exists
	}
	var w *warmRuleset
	if MayOpen(script) {
		w = warm(confine.WorkspaceUnbound(home, project, parent, writable...))
	}
	tmp, err := os.MkdirTemp(parent, "call-")
	if err != nil {
		w.discard()
		return nil, false, fmt.Errorf("workspace: temporary directory: %w", err)
	}
	plan := func() (confine.Policy, bool, error) { return confine.Workspace(home, project, parent, writable...) }
	p, complete, err := plan()
	if err != nil {
		w.discard()
		os.RemoveAll(tmp)
		return nil, false, err
	}
	c = &Confinement{Hide: p.Hide, Read: p.Read, Write: p.Write, HideProcesses: p.HideProcesses,
		Writable: p.Writable, Protect: p.Protect, Mask: p.Mask, Network: p.Network, Temp: tmp, Sweep: project,
		partial: !complete, replan: plan, warm: w}
	if w != nil {
		runtime.AddCleanup(c, (*warmRuleset).discard, w)
	}
	return c, complete, nil
}

// protectedNote names the project's protected paths, which a program's
// write fails on with EROFS (a bind: no record says so), for the detail
// of a run that failed: "; the project's protected paths are read-only
// (.git/config, …)", or "" when there are none.
func (c *Confinement) protectedNote() string {
	if c == nil || len(c.Protect) == 0 {
		return ""
	}
	var names []string
	for _, p := range c.Protect {
		if len(names) == 5 {
			names = append(names, "…")
			break
		}
		if rel, err := filepath.Rel(c.Sweep, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
		names = append(names, p)
	}
	return "; the project's protected paths are read-only (" + strings.Join(names, ", ") + ")"
}

// ownedByMe reports whether fi belongs to this process's user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// sweep removes what Sweep says, and returns what it did and what it
// could not ("" each when nothing).
func (c *Confinement) sweep() (note, problem string) {
	if c == nil || c.Sweep == "" {
		return "", ""
	}
	removed, complete, err := confine.Sweep(c.Sweep, c.Protect)
	for i, r := range removed {
		removed[i] = strings.TrimPrefix(r, "./")
	}
	if len(removed) > 0 {
		note = "sandbox refused: removed protected paths the command made: " + strings.Join(removed, ", ")
	}
	var probs []string
	if err != nil {
		probs = append(probs, fmt.Sprintf("the check for planted paths could not finish: %v", strings.ReplaceAll(err.Error(), "\n", "; ")))
	} else if !complete {
		probs = append(probs, "the check for planted paths stopped after 50000 names")
	}
	return note, strings.Join(probs, "; ")
}

// unconfinable says why a run that asks for confinement cannot have it on
// this machine, or "" when it can: such a run starts nothing, builtins
// included.
func unconfinable() string {
	if _, err := confine.Available(); err != nil {
		return fmt.Sprintf("not run: the command must run confined, and it cannot be here: %v", err)
	}
	return ""
}

// ruleset returns the run's ruleset, built when the run first starts a
// program or opens a file: a command of builtins only (true, echo, test)
// never pays for it. An error means nothing may start.
func (r *run) ruleset() (*confine.Ruleset, error) {
	r.confineOnce.Do(func() {
		p := r.confine.policy()
		var ok bool
		if r.confined, ok, r.confineErr = r.confine.warm.take(p); !ok {
			r.confined, r.confineErr = confine.Prepare(p)
		}
		if r.confineErr != nil {
			r.confineErr = fmt.Errorf("not run: the command must run confined, and the ruleset could not be built: %w", r.confineErr)
		}
	})
	return r.confined, r.confineErr
}

// closeConfined ends the run's confined thread, if one was made, and
// one Warm made that no run took, and removes the run's temporary
// directory.
func (r *run) closeConfined() {
	if r.confined != nil {
		r.confined.Close()
	}
	r.confine.warm.discard()
	r.dropTemp()
	if r.tempGone != nil {
		<-r.tempGone
	}
	r.net.close()
}

// tempSwept reports whether c's Temp lies in the tree its sweep walks (a
// TMPDIR in the project): it is then removed after the sweep, which would
// otherwise see its tree change as it walks and fail.
func (c *Confinement) tempSwept() bool {
	if c == nil || c.Temp == "" || c.Sweep == "" {
		return false
	}
	rel, err := filepath.Rel(c.Sweep, c.Temp)
	return err != nil || (rel != ".." && !strings.HasPrefix(rel, "../"))
}

// dropTemp starts removing the run's temporary directory, once, in the
// background: called once the run's processes are gone, so that the
// removal overlaps the sweep; closeConfined waits for it.
func (r *run) dropTemp() {
	r.tempOnce.Do(func() {
		if r.confine == nil || r.confine.Temp == "" {
			return
		}
		r.tempGone = make(chan struct{})
		go func() {
			defer close(r.tempGone)
			os.RemoveAll(r.confine.Temp)
		}()
	})
}

// start starts cmd, from the run's confined thread when the run is
// confined.
func (r *run) start(cmd *exec.Cmd) error {
	if r.confine == nil {
		return cmd.Start()
	}
	rs, err := r.ruleset()
	if err != nil {
		return err
	}
	if r.net != nil {
		return r.net.ns.Start(rs, cmd) // in the run's network namespace
	}
	return rs.Start(cmd)
}

// openFile opens what the script itself opens, from the run's confined
// thread when it has one; the same as interp.DefaultOpenHandler otherwise.
func (r *run) openFile(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if s, ok := stdStream(ctx, path); ok {
		return s, nil
	}
	if r.confine == nil {
		return interp.DefaultOpenHandler()(ctx, path, flag, perm)
	}
	rs, err := r.ruleset()
	if err != nil {
		return nil, err
	}
	if path != "" && !filepath.IsAbs(path) {
		path = filepath.Join(interp.HandlerCtx(ctx).Dir, path)
	}
	f, err := rs.Open(path, flag, perm)
	if err != nil {
		r.sandboxRefused(interp.HandlerCtx(ctx).Stderr, path, flag, err)
		return nil, err // a nil *os.File must not become a non-nil interface
	}
	return f, nil
}

// sandboxRefused says, on the script's stderr and later in the run's detail,
// that the sandbox refused the script's own open of path: "ccrun: sandbox
// refused: write PATH" (or read), for the errors the kernel's layers give
// (EACCES from Landlock, EROFS from a read-only bind, EPERM), so that an
// agent can ask for what it needs instead of guessing. Other errors (a
// missing file) are the program's to report.
func (r *run) sandboxRefused(stderr io.Writer, path string, flag int, err error) {
	if !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EPERM) {
		return
	}
	what := "read " + path
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		what = "write " + path
	}
	r.sayRefused(stderr, what)
}

// sayRefused says one refusal on stderr ("ccrun: sandbox refused: WHAT")
// and keeps it for the run's detail: once each, at most 20.
func (r *run) sayRefused(stderr io.Writer, what string) {
	r.refusedMu.Lock()
	defer r.refusedMu.Unlock()
	if slices.Contains(r.refused, what) {
		return
	}
	if stderr != nil {
		fmt.Fprintf(stderr, "ccrun: sandbox refused: %s\n", what)
	}
	if len(r.refused) < 20 {
		r.refused = append(r.refused, what)
	}
}

// programRefused says what Landlock refused the program started as pid,
// and what it forked, once it has exited (internal/confine reads
// Landlock's audit records: where it cannot, nothing is said here, and
// refusalsUnread says why at the end of the run).
func (r *run) programRefused(stderr io.Writer, pid int) {
	if r.confine == nil || r.confined == nil {
		return
	}
	got, err := r.confined.Refused(pid)
	for _, x := range got {
		r.sayRefused(stderr, x.String())
	}
	r.auditProblem(err)
}

// restRefused says, at the end of the run, what its programs' leftovers
// were refused after the programs themselves had exited.
func (r *run) restRefused(stderr io.Writer) {
	if r.confine == nil || r.confined == nil {
		return
	}
	got, err := r.confined.RefusedRest()
	for _, x := range got {
		r.sayRefused(stderr, x.String())
	}
	r.auditProblem(err)
}

// auditProblem keeps the first error of reading the refusals where they
// are read at all (where they are not, refusalsUnread says so).
func (r *run) auditProblem(err error) {
	if err == nil || r.confined.ProgramRefusals() != nil {
		return
	}
	r.refusedMu.Lock()
	defer r.refusedMu.Unlock()
	if r.auditErr == "" {
		r.auditErr = "what the sandbox refused its programs may be incomplete: " + err.Error()
	}
}

// unreadOnce: that programs' refusals are not reported here is said
// once per process on stderr.
var unreadOnce sync.Once

// refusalsUnread says why what the run's programs were refused is not
// reported ("" when it is, or when the run started no confined program),
// on stderr once per process; for the detail of a run that failed.
func (r *run) refusalsUnread(stderr io.Writer) string {
	if r.confine == nil || r.confined == nil {
		return ""
	}
	r.refusedMu.Lock()
	problem := r.auditErr
	r.refusedMu.Unlock()
	if problem != "" {
		return problem
	}
	err := r.confined.ProgramRefusals()
	if err == nil {
		return ""
	}
	msg := "what the sandbox refuses programs (not the script's own redirections) is not reported here: " + err.Error()
	unreadOnce.Do(func() { fmt.Fprintf(stderr, "ccrun: %s\n", msg) })
	return msg
}

// refusals is what the run's detail says of the refusals said: "" for none.
func (r *run) refusals() string {
	r.refusedMu.Lock()
	defer r.refusedMu.Unlock()
	if len(r.refused) == 0 {
		return ""
	}
	return "sandbox refused: " + strings.Join(r.refused, ", ")
}

// stdStream is the script's own standard stream that path names
// (/dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/0-2, /proc/self/fd/0-2),
// as a shell's redirection to one means it: the stream of the command
// being redirected, not the file of that number in ccrun's process (its
// own stderr: past the run's capture), nor a walk through /proc/self,
// which a confined run cannot take (the opening thread resolves
// beneath a root, where a magic link is refused, and /proc/PID is hidden).
// Closing it closes nothing.
func stdStream(ctx context.Context, path string) (io.ReadWriteCloser, bool) {
	n := -1
	switch path {
	case "/dev/stdin":
		n = 0
	case "/dev/stdout":
		n = 1
	case "/dev/stderr":
		n = 2
	default:
		for _, dir := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"} {
			if rest, ok := strings.CutPrefix(path, dir); ok && len(rest) == 1 && rest[0] >= '0' && rest[0] <= '2' {
				n = int(rest[0] - '0')
			}
		}
	}
	if n < 0 {
		return nil, false
	}
	hc := interp.HandlerCtx(ctx)
	switch n {
	case 0:
		return stream{r: hc.Stdin}, true
	case 1:
		return stream{w: hc.Stdout}, true
	}
	return stream{w: hc.Stderr}, true
}

// stream is one of the script's standard streams, opened by name.
type stream struct {
	r io.Reader
	w io.Writer
}

func (s stream) Read(b []byte) (int, error) {
	if s.r == nil {
		return 0, syscall.EBADF
	}
	return s.r.Read(b)
}

func (s stream) Write(b []byte) (int, error) {
	if s.w == nil {
		return 0, syscall.EBADF
	}
	return s.w.Write(b)
}

func (stream) Close() error { return nil }
