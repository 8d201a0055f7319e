// Command ccrun runs the tools an AI agent calls, each in the environment
// the tool declares, behind one permission gate. See the README.
package main

import (
	"io"
	"os"
	"runtime/debug"

	"github.com/ccrun/ccrun/internal/confine"
)

// oneShotProcess says this process is ccrun's main, which exits once run
// returns (not a test calling run): a @wasm guest may then run without
// interrupt checks and be left to the process's exit (wasm.WithOneShot).
var oneShotProcess bool

// stdio is where a run of the CLI reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

func main() {
	// the confinement server, which keeps the rulesets of read-only
	// commands for the ccrun processes that come and go
	if confine.IsRulesetServer() {
		os.Exit(confine.ServeMain())
	}
	// a @wasm worker of `exec --wasm-worker`, the warm @wasm server
	// (CCRUN_WASM_SERVER=1), the detached refill of a warm container pool
	if code, ok := serveHelper(os.Args[1:]); ok {
		os.Exit(code)
	}
	oneShotProcess = true
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
	os.Exit(run(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}
