package shell

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"mvdan.cc/sh/v3/interp"

	"github.com/ccrun/ccrun/runtime/job"
)

// Guard checks a run's steps where they happen: every program the
// interpreter is about to start, with its expanded argv and the environment
// it will get, and every file the script itself opens (redirections,
// source). A static reading of shell text is never complete, so a decision
// taken on the text is enforced again here, on what really runs (see the
// root package's documentation for who builds the Guard of a decision).
//
// A check that returns an error refuses the step: the program does not
// start (the file is not opened), the run stops, and its Result says
// job.Refused with exit code job.RefusedExit and the error as the detail.
// The error is also written to the script's stderr, so that the person
// reading the output sees what was refused. A check may block (to ask a
// person); the run's timeout and cancellation still apply around it.
//
// Programs that the started programs start in turn (find -exec, xargs, git's
// hooks) are not seen here: that is what Confine is for.
type Guard struct {
	// Exec checks one program before it starts. nil: no check.
	Exec func(ctx context.Context, p Program) error
	// Open checks a file before the script opens it: path is absolute and
	// clean (not resolved), flag the os.OpenFile flags. nil: no check.
	Open func(ctx context.Context, path string, flag int) error
}

// Program is one program a run is about to start.
type Program struct {
	Argv []string // expanded, as the program gets them; Argv[0] as written
	Path string   // the file that will run (Argv[0] looked up in PATH)
	Env  []string // the environment it gets, MarkerVar aside
	Dir  string   // its working directory
}

// refuse stops the run because a check refused a step.
func (r *run) refuse(stderr io.Writer, err error) error {
	fmt.Fprintf(stderr, "ccrun: %v\n", err)
	r.mu.Lock()
	if r.refusal == "" {
		r.refusal = err.Error()
	}
	r.mu.Unlock()
	r.stop(job.Refused)
	return refused{err}
}

// refused is the error a handler returns for a refused step: not an
// interp.ExitStatus, so the interpreter stops at once instead of going on
// to the next statement.
type refused struct{ err error }

func (e refused) Error() string { return "refused by ccrun: " + e.err.Error() }

// checkExec runs the Guard's Exec check, if any.
func (r *run) checkExec(ctx context.Context, hc interp.HandlerContext, path string, args []string) error {
	if r.guard == nil || r.guard.Exec == nil {
		return nil
	}
	err := r.guard.Exec(ctx, Program{Argv: args, Path: path, Env: environ(hc.Env), Dir: hc.Dir})
	if err != nil {
		return r.refuse(hc.Stderr, err)
	}
	return nil
}

// open is the interpreter's open handler: the Guard's Open check, then the
// default handler.
func (r *run) open(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if r.guard != nil && r.guard.Open != nil {
		hc := interp.HandlerCtx(ctx)
		abs := path
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(hc.Dir, abs)
		}
		if err := r.guard.Open(ctx, filepath.Clean(abs), flag); err != nil {
			return nil, r.refuse(hc.Stderr, err)
		}
	}
	return r.openFile(ctx, path, flag, perm)
}
