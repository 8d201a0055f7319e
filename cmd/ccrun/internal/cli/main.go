// Package cli is ccrun's command line: every command (its options and the
// run function a test calls without cobra), the exit-code mapping and the
// output. Two main packages run it: cmd/ccrun, the whole ccrun, which
// gives Main the engines (package full), and cmd/ccrun/front, the fast
// front, which gives none and has only the commands handoff.Serves lets
// through.
package cli

import (
	"io"
	"os"
	"runtime/debug"

	"github.com/ccrun/ccrun/internal/confine"
)

// stdio is where a run of the CLI reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// Main is ccrun's main, without os.Exit: it serves a helper process ccrun
// started, else runs the command line of os.Args and returns the exit
// code. e is what the whole ccrun links (Engines); nil in the front.
func Main(e *Engines) int {
	// the confinement server, which keeps the rulesets of read-only
	// commands for the ccrun processes that come and go
	if confine.IsRulesetServer() {
		return confine.ServeMain()
	}
	// a @wasm worker of `exec --wasm-worker`, the warm @wasm server
	// (CCRUN_WASM_SERVER=1), the detached refill of a warm container pool
	if e != nil {
		if code, ok := e.ServeHelper(os.Args[1:]); ok {
			return code
		}
	}
	// No process of the user may read or patch ccrun's memory (the
	// environment it holds back, ccrun mcp's key and token) by ptrace,
	// /proc/PID/mem or pidfd_getfd. Not its helpers above: ccrun gc reads
	// their /proc/PID/environ to know them, and they hold no secret.
	_ = confine.NonDumpable()
	confine.ServerExe, _ = os.Executable()
	if len(os.Args) < 2 || os.Args[1] != "mcp" {
		// A process that lives for one call: reading a 2 MB module
		// and the gate's work would start a collection (a few ms of
		// both cores) that the exit makes moot. `ccrun mcp` lives on
		// and keeps Go's default.
		debug.SetGCPercent(400)
	}
	// oneShot: this process is ccrun's main, which exits once the run
	// returns (not a test calling run): a @wasm guest may then run
	// without interrupt checks and be left to the process's exit.
	a := &app{io: stdio{os.Stdin, os.Stdout, os.Stderr}, args: os.Args[1:], eng: e, oneShotProcess: true}
	return a.execute()
}
