package permission

import (
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/shellcmd"
)

// classify is the read-only verdict of req's shell command f with what
// the call carries (its env and positional arguments).
func classify(req *Request, f *syntax.File) shellcmd.Classification {
	return shellcmd.Classify(f, shellcmd.Call{Args: req.Args, Env: req.Env})
}
