// Package outlive says whether a call's run could outlive the process
// that runs it, for a front end that runs one call and exits (ccrun exec)
// and handles signals only when it must.
package outlive

import (
	"context"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/shell"
)

// May reports whether something of c's run could outlive the
// process that runs it when a signal's default action ends that process
// at once: a container, a program's process group. A front end that runs
// one call and exits (ccrun exec) handles Ctrl-C and SIGTERM for such a
// call, to stop the run whole; for the others it may leave the signal its
// default action, and spare the threads os/signal starts (a fifth of a new
// process's start). Not a @wasm module's run: the warm server stops a run
// whose client went away (and ends, when it cannot stop the guest
// otherwise), a worker dies with its parent (Pdeathsig), and a guest in
// the process dies with it. Not a @shell script of builtins alone, which
// starts no program (the parse the gate keys and the executor runs):
// should it start one after all, the function of shell.WithBeforeStart runs first. A
// capability may: its environment is read later.
func May(c *ccrun.Call) bool {
	switch {
	case c.Module != "":
		return false
	case c.Command != "":
		f := permission.ParseCommand(c.Command).File
		return f == nil || shell.MayOpen(f)
	}
	return true
}

// WithBeforeStart returns a copy of ctx under which a @shell call's run
// calls f before it starts each program, and waits for it: where a front
// end installs what must be in place before anything of a run can outlive
// its process, for a call May said nothing would. f is called for
// every program, from as many goroutines as start programs at once: make
// it safe for that, and cheap once it has run.
func WithBeforeStart(ctx context.Context, f func()) context.Context {
	return shell.WithBeforeStart(ctx, f)
}
