package ccrun

import (
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/shell"
)

// unconfinable is the Runtime's Gate.Sandboxed: whether req, once a person
// allows it, runs in the workspace tier (shellConfinement), so that the
// person may choose to run it once outside instead — a @shell call on the
// host, with the sandbox "on" (the default) and a kernel that gives the
// tier. Where the settings turn the sandbox "off" there is nothing to lift;
// where they say "required" nothing may run outside it; where the kernel
// cannot confine, the call runs unconfined anyway (with a note): the
// choice is offered in none of these.
func (r *Runtime) unconfinable(req *permission.Request) bool {
	if req.Environment != ceiling.Shell || req.Command == nil {
		return false
	}
	if sandbox, _, _ := r.shellSandbox(); sandbox != permission.SandboxOn {
		return false
	}
	_, err := shell.ConfineAvailable()
	return err == nil
}
