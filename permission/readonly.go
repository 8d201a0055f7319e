package permission

import (
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/shellcmd"
)

// readOnlyClass reports whether req's shell command f is read-only with
// what the call carries (its env and positional arguments).
func readOnlyClass(req *Request, f *syntax.File) bool {
	return classify(req, f).ReadOnly
}

func classify(req *Request, f *syntax.File) shellcmd.Classification {
	return shellcmd.Classify(f, shellcmd.Call{Args: req.Args, Env: req.Env})
}
