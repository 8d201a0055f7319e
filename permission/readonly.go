package permission

import (
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/shellcmd"
)

// IsReadOnly reports whether running f cannot change anything: no file is
// written, no program but the listed readers is run, nothing runs in the
// background. It is shellcmd.ReadOnly (see there for the rules): a false
// "no" costs a keystroke, a false "yes" is a hole. When it says no, reason
// says why, for the person asked. A nil or empty f is not read-only. It is
// safe for concurrent use.
func IsReadOnly(f *syntax.File) (ok bool, reason string) { return shellcmd.ReadOnly(f) }

// IsReadOnlyText is IsReadOnly of src parsed with ParseCommand's parser;
// text that does not parse is not read-only.
func IsReadOnlyText(src string) (ok bool, reason string) { return shellcmd.ReadOnlyText(src) }

// readOnlyClass reports whether req's shell command f is read-only with
// what the call carries (its env and positional arguments).
func readOnlyClass(req *Request, f *syntax.File) bool {
	return classify(req, f).ReadOnly
}

func classify(req *Request, f *syntax.File) shellcmd.Verdict {
	return shellcmd.Classify(f, shellcmd.Call{Args: req.Args, Env: req.Env})
}
