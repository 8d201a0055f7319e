package permission

import (
	"strings"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/shellcmd"
)

// DangerousPaths lists the dangerous paths req touches: in req.Paths, and,
// for a shell command, in every word of it and in its positional arguments
// (req.Args), taken generously (see shellcmd.Dangerous). The path list is
// internal/sensitive's table (docs/policy.md), the one the interpreter's
// handlers, the Landlock ruleset and the sandboxes' mounts use too.
// Leak-class paths count for any access; implant-class paths for writes,
// which is every access but that of a read or internal call, or of a
// read-only shell command (see shellcmd.ReadOnly). Empty projectDir: the working
// directory; empty home: $HOME.
//
// A call with any finding is always asked, whatever the mode, grants or
// allow rules, and only Once is offered (AskDangerous). DangerousPaths is
// safe for concurrent use.
func DangerousPaths(req *Request, projectDir, home string) []shellcmd.Finding {
	return dangerousPaths(&inside{req: req}, projectDir, home)
}

func dangerousPaths(in *inside, projectDir, home string) []shellcmd.Finding {
	req := in.req
	t := shellcmd.Target{Paths: req.Paths, WritePaths: !(req.Class == ClassRead || req.Class == ClassInternal)}
	if isShell(req) {
		t.Shell, t.Args = true, req.Args
		if f, ok := in.commandFile(); ok {
			t.File = f
			t.WriteShell = !in.classify(f).ReadOnly
			t.Segments, _ = in.segments()
		} else if req.Command != nil {
			t.Source = req.Command.Source
		}
	}
	return append(shellcmd.Dangerous(t, projectDir, home), req.Dangerous...)
}

// AskDangerous is the decision of the gate's step 5 when DangerousPaths
// found something: ask, offering Once only — never a session or project
// grant, so that one "always" cannot become a lasting back door.
func AskDangerous(findings []shellcmd.Finding) Decision {
	parts := make([]string, len(findings))
	for i, f := range findings {
		parts[i] = f.String()
	}
	return Decision{
		Verdict: AskUser,
		Layer:   LayerDangerous,
		Reason:  "touches a dangerous path: " + strings.Join(parts, "; "),
		Offer:   ceiling.Once,
	}
}
