// Package confine starts programs under a Linux Landlock ruleset (and a
// small seccomp filter) without restricting the calling process: the
// kernel layer of ccrun's enforcement, for @shell commands that run
// because ccrun judged them read-only and nobody was asked.
//
// # What a confined program may do
//
// With the policy of ReadOnly: read and execute every file of the file
// system except the hidden ones (the home directories but for the project,
// the working directory, git's user configuration and the $PATH
// directories in them; the Leak rows of internal/sensitive found at any
// depth in those, and at their absolute places; raw devices under /dev),
// write nothing but /dev/null and
// the terminals (/dev/tty, /dev/pts), make, remove, rename, link and
// truncate nothing, bind and connect no TCP port (Landlock ABI 4), and, from
// ABI 6, neither signal nor connect to the abstract unix sockets of
// processes outside its domain. Landlock's ptrace scoping refuses
// /proc/PID/mem, exe and cwd of processes outside the domain, but not
// /proc/PID/environ (Linux 6.18, tested): so ReadOnly hides /proc/PID of
// every process (HideProcesses), and ps shows nothing. On amd64 and arm64 a seccomp filter refuses, with EACCES,
// what Landlock does not see: socket(2) of every family (UDP, raw, netlink,
// and unix sockets, so no connect to the Docker Engine's or an agent's
// socket; socketpair stays), io_uring, chmod, chown, utimes and xattr
// changes (touch of an existing file), keyrings, bpf, perf, module
// loading, reboot, clocks, hostnames, the TIOCSTI and TIOCLINUX ioctls, and
// every way into another process: ptrace, process_vm_readv/writev,
// pidfd_getfd, process_madvise, kcmp.
// A misjudged "read-only" command fails with EACCES (or EPERM) instead of
// writing or leaking.
//
// # What it does not do (documented limits)
//
//   - Landlock is allow-only, so "everything but the hidden paths" is built
//     as rules on each sibling of each directory on the way to a hidden
//     path. Such a partly granted directory (/, /etc, the home, the
//     project) is listed as it was at Prepare: an entry created in it
//     later cannot be read by a confined program until the next Prepare
//     (/proc is listed up to its first process entry: what a kernel would
//     list after the processes is refused too).
//     The built ruleset is kept per Policy and rebuilt by the first Prepare
//     after one of those directories changed (its inode, mtime or ctime).
//   - Search reads at most SearchLimit names at Prepare, breadth first; in
//     a larger tree the deepest directories are hidden whole. It does not
//     go into .git directories.
//   - A partly granted directory may be listed, and so may the directories
//     beneath it, hidden ones included: `ls ~/.ssh` shows names; `cat`
//     of what is inside fails. Landlock has no "this directory only" rule.
//   - A hidden path is hidden where it is, after symlinks are resolved:
//     a hard link to a secret, another mount of the same files, or a copy
//     made before the run is read as any other file. Rows with globs
//     (id_rsa*, *.pem, .env.*) are expanded at Prepare, in the directories
//     named, not in the whole file system.
//   - Files already open when the program starts (its stdio, pipes) are
//     not checked by Landlock; a terminal given as stdin can still be
//     read and, apart from TIOCSTI, driven by ioctl.
//   - Only amd64 and arm64 have the helper and the seccomp filter; on
//     another architecture nothing is confined (Prepare: ErrUnavailable).
//
// # How it applies to one program only
//
// Landlock and seccomp restrict a thread, and every process forked from
// it inherits the restriction; Landlock lets a task trace, and read the
// memory of, tasks of its own domain. So no thread of ccrun is ever in a
// confined program's domain: Start starts ccrun-confine (helper/helper.c,
// a freestanding C program of a few KiB, embedded and run from a sealed
// memfd) unconfined in the new process, and that process sets
// PR_SET_NO_NEW_PRIVS, calls landlock_restrict_self with the ruleset,
// installs the seccomp filter and becomes the program by execve: fork,
// restrict, exec. The domain it makes holds the program and what the
// program starts, nothing else, and the seccomp filter refuses ptrace,
// process_vm_readv/writev, pidfd_getfd, process_madvise and kcmp on top.
// A program that cannot be executed (ENOENT, EACCES, ENOEXEC) fails Start
// as os/exec would say it: the helper reports its execve's errno on a
// status pipe that a successful execve closes.
//
// Open, for the files a shell interpreter in ccrun opens for a confined
// script, runs on one goroutine locked to an OS thread that restricted
// itself with the same ruleset (a domain of its own: a program in its
// sibling domain cannot trace it). That thread starts no program. It never
// unlocks: when Close ends it, the Go runtime ends the thread, so the
// restriction never reaches another goroutine; new OS threads are never
// made from a locked thread (the runtime's template thread makes them).
// With Protect or Mask paths, that thread is in ccrun's mount namespace,
// which has no binds: before it restricts itself, a helper process (the
// anchor) makes a namespace of the binds and waits while ccrun opens its
// root and the namespace itself, and Open resolves absolute names from
// that root (openat2 RESOLVE_IN_ROOT, symbolic links too), so that a
// script's own redirections meet the binds its programs meet.
//
// # What a program was refused
//
// Ruleset.Refused says what Landlock refused a program Start started, and
// what it forked (audit_linux.go): read from Landlock's denial records
// (ABI 7), which the audit subsystem sends to its netlink multicast
// group, matched to the program by the pid that made its domain, once a
// barrier message queued behind them has arrived. It needs audit enabled
// on the machine and CAP_AUDIT_READ, CAP_AUDIT_CONTROL and
// CAP_AUDIT_WRITE; elsewhere ProgramRefusals says why not. Only then does
// the helper ask for the records (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON);
// the opening thread never logs (LOG_SAME_EXEC_OFF: Open's caller has the
// error). What is read decides nothing. Not in them: EROFS from a
// protected path's bind, what the seccomp filter refuses, and, left out,
// /proc/PID.
//
// ccrun's CLI also makes itself non-dumpable (NonDumpable), so that no
// program of the user, confined or not, reads its memory.
//
// Helpers exist for amd64 and arm64, where the seccomp filter exists too
// (make confine-helper rebuilds them; TestHelperBuiltFromSource compares):
// on another architecture Prepare reports ErrUnavailable.
//
// Rulesets are safe for concurrent use.
package confine

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/sensitive"
)

// Errors, to be tested with errors.Is.
var (
	// ErrUnavailable: the kernel (or the OS) cannot confine a program
	// here, or CCRUN_LANDLOCK=off says not to. A caller that asked for
	// confinement must not run the program unconfined.
	ErrUnavailable = errdefs.ErrUnavailable.WithMessage("confinement unavailable")
	// ErrInvalidPolicy: a Policy path is relative, or "/" itself is
	// hidden.
	ErrInvalidPolicy = errdefs.ErrInvalidArgument.WithMessage("invalid confinement policy")
	// ErrClosed: Start on a closed Ruleset.
	ErrClosed = errors.New("confinement ruleset closed")
)

// A Refusal is one thing Landlock refused a confined program
// (Ruleset.Refused).
type Refusal struct {
	Op   string // "read", "write", "connect"
	What string // the path; for connect, "port N"
}

// String is the refusal as one line: the operation and what it named.
func (r Refusal) String() string { return r.Op + " " + r.What }

// EnvVar, set to "off", makes Available and Prepare report ErrUnavailable:
// for tests of the fallback, and for people whose kernel misbehaves.
const EnvVar = "CCRUN_LANDLOCK"

// MinABI is the lowest Landlock ABI accepted: 4, the first that can refuse
// TCP bind and connect (Linux 6.7). Below it Available reports
// ErrUnavailable.
const MinABI = 4

// Policy says what a confined program may reach. Everything not granted
// is refused. The zero Policy hides nothing, reads everything and writes
// nothing.
type Policy struct {
	// Hide lists absolute paths (files or directories) whose content a
	// confined program may not read or execute; a directory hides what is
	// beneath it. A component may be a glob (path.Match; a backslash quotes
	// *?[\), matched against the entries there at Prepare. What does not
	// exist is ignored; a symlink hides what it points to as well. Default
	// none.
	Hide []string
	// Read lists absolute paths readable even where they lie in a hidden
	// directory (/dev/urandom when /dev is hidden): exceptions to Hide.
	// Default none.
	Read []string
	// HideProcesses hides /proc/PID of every process, the confined ones
	// included: their environments, memory, command lines and open files
	// (Landlock's ptrace scoping does not cover /proc/PID/environ on Linux
	// 6.18, tested). /proc/self is hidden with them, and ps shows nothing;
	// /proc's other entries (cpuinfo, meminfo, sys) stay readable, and so
	// does /proc/self/fd, whose entries are links to already-open files.
	// Default false.
	HideProcesses bool
	// Private lists absolute directories hidden but for what Search, Read
	// and Write name at or beneath them (the home directory, /home,
	// /root): a name created in one later is hidden too. Default none.
	Private []string
	// Search lists absolute directories readable even in a Private one,
	// searched at Prepare, to any depth, for the paths a Leak row of
	// internal/sensitive covers (sub/.env, deploy/.aws/credentials, a
	// copy of .ssh): each found is hidden as Hide would hide it. The
	// search reads names only, at most SearchLimit of them in all, and
	// does not go into .git directories (git's own files; no row is
	// there) nor follow symlinks (what one points to is judged where it
	// is). A directory the search did not reach, the limit spent, is
	// hidden whole: the part of a very large tree that cannot be searched
	// is not read. Default none.
	Search []string
	// Writable lists absolute directories (or files) beneath which a
	// confined program may also create, remove, rename, link and truncate
	// files, and change their modes and times, but for the Protect paths:
	// the workspace tier's project and temporary directory. It grants no
	// reading (Hide still holds there). Default none.
	Writable []string
	// Protect lists absolute paths that stay read-only beneath Writable:
	// each is bound read-only over itself in a mount namespace of the
	// program's own (the helper's), so that a write into one, a rename
	// over or away, an unlink, a hard link and a new name in a protected
	// directory fail; the directories each lies in beneath a Writable one
	// (.git) are bound over themselves writable, so that none can be
	// renamed away and replaced. Each must exist, and neither be nor lie under a
	// symbolic link: the start fails otherwise (a link could be swapped
	// for another). What does not exist cannot be protected so: the
	// caller sweeps it after the run (Sweep). Default none.
	Protect []string
	// Mask lists absolute paths hidden by an empty read-only file or
	// directory bound over each in the program's mount namespace, as
	// Protect binds: unlike Hide, a name made later beside one is read as
	// any other (the workspace tier's project, where builds make files).
	// Each must exist and be reached with no symbolic link. Default none.
	Mask []string
	// Network lets a confined program open sockets and bind and connect
	// TCP: what an approved command may do until egress is filtered.
	// Default false: no socket of any family, no TCP.
	Network bool
	// Write lists absolute paths (files, or directories for everything
	// beneath) that a confined program may open for writing, besides
	// reading, hidden or not. Nothing may be created, removed, renamed or truncated
	// anywhere, these paths included. Default none.
	Write []string
}

// Clone returns a copy of p that shares no slice with it.
func (p Policy) Clone() Policy {
	p.Hide, p.Read, p.Write = slices.Clone(p.Hide), slices.Clone(p.Read), slices.Clone(p.Write)
	p.Private, p.Search = slices.Clone(p.Private), slices.Clone(p.Search)
	p.Writable, p.Protect, p.Mask = slices.Clone(p.Writable), slices.Clone(p.Protect), slices.Clone(p.Mask)
	return p
}

// Unbound is p without its Protect and Mask: what its Landlock ruleset
// holds (the binds are the helper's, Ruleset.Bind).
func (p Policy) Unbound() Policy {
	p = p.Clone()
	p.Protect, p.Mask = nil, nil
	return p
}

// Equal reports whether p and q grant the same.
func (p Policy) Equal(q Policy) bool {
	return slices.Equal(p.Hide, q.Hide) && slices.Equal(p.Read, q.Read) && slices.Equal(p.Write, q.Write) &&
		p.HideProcesses == q.HideProcesses && slices.Equal(p.Private, q.Private) && slices.Equal(p.Search, q.Search) &&
		slices.Equal(p.Writable, q.Writable) && slices.Equal(p.Protect, q.Protect) && slices.Equal(p.Mask, q.Mask) &&
		p.Network == q.Network
}

// SearchLimit is how many names Search reads at Prepare, in all
// directories together: about 15 ms of a Prepare at most on a warm disk
// cache (BenchmarkSearch).
const SearchLimit = 50000

var searchLimit = SearchLimit // lowered by tests

// devRead are the devices a read-only program may read when /dev is
// hidden; devWrite the ones it may also write.
var (
	devRead  = []string{"/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	devWrite = []string{"/dev/null", "/dev/tty", "/dev/pts"}
)

// ReadOnly is the policy of a command that runs because ccrun judged it
// read-only. It hides the home directories (sensitive.Private: home,
// /home, /root) but for dirs (the project, the working directory), git's
// user configuration (sensitive.Visible) and the directories of $PATH in
// them; it searches those, to any depth, for the Leak rows of
// internal/sensitive and hides what it finds (sub/.env, a copy of .ssh);
// it hides the absolute rows (/etc/shadow, /etc/ssh/ssh_host_*_key), and
// the rows under home and dirs by name too; it hides /proc/PID of every
// process (HideProcesses: the /proc/*/environ rows); it hides /dev but its
// null, zero, full, random, urandom and terminal devices; it writes
// /dev/null and the terminals only. The search is made now: a secret
// created later in a directory it granted whole is hidden only from the
// next Prepare on (a kept ruleset is rebuilt as soon as a searched
// directory changes).
//
// Why hide the rest of the home rather than search it: Landlock can only
// allow, so a name is hidden by granting everything around it, and that
// needs the name found first; a home holds other checkouts, downloads and
// tools' state in any number (~/src/other/.env, deploy/.aws/credentials
// in a copy), too many to search before every command. The project is
// searched (a few thousand names cost a millisecond or two); the rest of
// the home is not read, and the gate asks for a read-only command that
// names a path there (shellcmd.Beyond) instead of running it unasked.
func ReadOnly(home string, dirs ...string) Policy {
	var p Policy
	for _, r := range sensitive.Table() {
		// The rows that are not absolute lie in the private directories,
		// which hide them, or in the searched ones, which find them.
		if r.Kind == sensitive.Leak && r.Abs && r.Seq[0] != "proc" { // /proc: HideProcesses
			p.Hide = append(p.Hide, "/"+strings.Join(r.Seq, "/"))
		}
	}
	p.Hide = append(p.Hide, "/dev")
	p.Private = sensitive.Private(home)
	search := append(dirs[:len(dirs):len(dirs)], sensitive.Visible(home, os.Getenv("XDG_CONFIG_HOME"))...)
	for _, d := range append(search, programDirs(p.Private)...) {
		if d == "" || !filepath.IsAbs(d) || path.Clean(d) == "/" {
			continue
		}
		d = path.Clean(d)
		if !slices.Contains(p.Search, d) && sensitive.First(d, false) < 0 { // not in a secret's place
			p.Search = append(p.Search, d)
		}
	}
	p.HideProcesses = true
	p.Read = append(p.Read, devRead...)
	p.Write = append(p.Write, devWrite...)
	return p
}

// Workspace is the policy of a command that a person, a grant, an allow
// rule or the mode let run (the workspace tier). It reads everything but
// the Leak rows at their absolute places, under home by name, and at any
// depth in project (masked: a file a build makes beside one is read as
// any other), and /proc/PID of every process; it writes, makes, removes
// and renames files beneath project, tmp and each of writable, but for
// the Implant rows that exist in project (bound read-only: .git/config,
// .git/hooks, ccrun.json, .vscode…) and git's shapes there (a .git that
// is not a directory; a config, hooks/, commondir… in a directory git
// takes for a repository under another name); it writes /dev/null and the
// terminals; it keeps the network (Network). An Implant row that does not
// exist cannot be bound: the caller sweeps it after the run (Sweep). The
// project is searched breadth first for at most SearchLimit names:
// complete is false when some of it was left unsearched (its deepest
// directories), where nothing is masked or protected. An error when a
// protected path is a symbolic link, the project cannot be listed, or on
// another OS.
func Workspace(home, project, tmp string, writable ...string) (p Policy, complete bool, err error) {
	p = WorkspaceUnbound(home, project, tmp, writable...)
	leaks, implants, complete, err := findRows(path.Clean(project), searchLimit)
	if err != nil {
		return Policy{}, false, err
	}
	p.Mask, p.Protect = leaks, implants
	return p, complete, nil
}

// WorkspaceUnbound is Workspace's policy without the search of project:
// no Protect, no Mask, the rest the same, and so the same Landlock
// ruleset (Policy.Unbound), which can then be prepared beside the search
// and bound once it ends (Ruleset.Bind). It reads nothing of project.
func WorkspaceUnbound(home, project, tmp string, writable ...string) (p Policy) {
	for _, r := range sensitive.Table() {
		if r.Kind != sensitive.Leak || (r.Abs && r.Seq[0] == "proc") {
			continue
		}
		switch rel := strings.Join(r.Seq, "/"); {
		case r.Abs:
			p.Hide = append(p.Hide, "/"+rel)
		case home != "" && filepath.IsAbs(home) && path.Clean(home) != "/":
			p.Hide = append(p.Hide, globEscape(path.Clean(home))+"/"+rel)
		}
	}
	p.Hide = append(p.Hide, "/dev")
	for _, d := range append([]string{project, tmp}, writable...) {
		if d != "" && filepath.IsAbs(d) && !slices.Contains(p.Writable, path.Clean(d)) {
			p.Writable = append(p.Writable, path.Clean(d))
		}
	}
	p.HideProcesses, p.Network = true, true
	p.Read = append(p.Read, devRead...)
	p.Write = append(p.Write, devWrite...)
	return p
}

// globEscape quotes the glob characters of a directory name.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// programDirs are the directories of $PATH that lie in one of the
// private directories (~/.local/bin, ~/go/bin), and where they lead: the
// programs a read-only command names are found there. A private
// directory itself (a PATH naming ~) is not one.
func programDirs(private []string) []string {
	in := func(p string) bool {
		if slices.Contains(private, p) {
			return false
		}
		for _, d := range private {
			if strings.HasPrefix(p, d+"/") {
				return sensitive.First(p, false) < 0 // not ~ itself, nor a secret
			}
		}
		return false
	}
	var out []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		for _, p := range []string{d, evalOr(d)} {
			if in(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// evalOr is the clean absolute path p with its symbolic links resolved,
// or p when they cannot be. A path in which the kernel meets no link
// (noLinks: one system call) is its own resolution; EvalSymlinks walks
// the others a component at a time.
func evalOr(p string) string {
	if noLinks(p) {
		return p
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// off reports whether EnvVar forces confinement off.
func off() bool { return strings.EqualFold(os.Getenv(EnvVar), "off") }
