package shell

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"mvdan.cc/sh/v3/interp"

	"github.com/ccrun/ccrun/internal/confine"
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
// HideProcesses (ReadOnlyConfinement sets it) it reads no /proc/PID. The ruleset is built once per run, when it starts;
// internal/confine's documentation lists the limits (entries created
// later in a partly hidden directory, names listed in hidden directories,
// hard links, already-open files).
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
}

// ErrConfineUnavailable is the class of the error ConfineAvailable returns
// when the kernel cannot confine a run here (errors.Is).
var ErrConfineUnavailable = confine.ErrUnavailable

// ConfineAvailable reports the Landlock ABI version that confined runs
// would get, or an error of class ErrConfineUnavailable saying why they
// cannot run here (a Spec with Confine then fails closed).
func ConfineAvailable() (abi int, err error) { return confine.Available() }

// ReadOnlyConfinement is the confinement of a command that runs because it
// was judged read-only and nobody was asked: the dangerous paths of the
// table (internal/sensitive, its Leak rows) found under home and under each
// of dirs (give the project root and the working directory), and the
// absolute ones such as /etc/shadow, are hidden, and so are /proc/PID of
// every process and the raw devices under /dev (null, zero, full, random,
// urandom and the terminals stay);
// nothing but /dev/null and the terminals (/dev/tty, /dev/pts) may be
// written. The globs of the table (id_rsa*, *.pem, .env.*) are expanded
// now; build it for each run.
func ReadOnlyConfinement(home string, dirs ...string) *Confinement {
	p := confine.ReadOnly(home, dirs...)
	return &Confinement{Hide: p.Hide, Read: p.Read, Write: p.Write, HideProcesses: p.HideProcesses}
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
		c := r.confine
		r.confined, r.confineErr = confine.Prepare(confine.Policy{Hide: c.Hide, Read: c.Read, Write: c.Write, HideProcesses: c.HideProcesses})
		if r.confineErr != nil {
			r.confineErr = fmt.Errorf("not run: the command must run confined, and the ruleset could not be built: %w", r.confineErr)
		}
	})
	return r.confined, r.confineErr
}

// closeConfined ends the run's confined thread, if one was made.
func (r *run) closeConfined() {
	if r.confined != nil {
		r.confined.Close()
	}
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
	return rs.Start(cmd)
}

// openFile opens what the script itself opens, from the run's confined
// thread when it has one; the same as interp.DefaultOpenHandler otherwise.
func (r *run) openFile(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
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
		return nil, err // a nil *os.File must not become a non-nil interface
	}
	return f, nil
}
