//go:build !ccrunfront

package main

import (
	"context"
	"os"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/ccrun/ccrun/runtime/job"
)

// This file and front.go are what the two builds of the CLI do
// differently. This one, the whole ccrun (`go install`, `make build`'s
// bin/ccrun-full), links the @wasm and @docker engines (package engines,
// given to every Runtime: runtimeEngines), gc, doctor, demo and mcp. The
// front (the ccrunfront tag, `make build`'s bin/ccrun) links the gate and
// @shell alone and hands every other command to the whole ccrun beside it
// (front.go, internal/handoff).

// dockerRefillCmd is the hidden first argument under which ccrun refills a
// @docker warm pool in a process of its own, so that the run that used a
// pooled container exits at once (housekeep.Serve serves it).
const dockerRefillCmd = housekeep.RefillArg

// serveHelper serves a @wasm worker of `exec --wasm-worker`, the warm
// @wasm server, and the detached refill of a warm container pool.
func serveHelper(args []string) (code int, ok bool) { return housekeep.Serve(args) }

// commands are ccrun's commands: the gate's, and those of the engines.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{a.execCommand(nil), a.checkCommand(nil), a.allowlistCommand(), a.capabilityCommand(),
		a.sessionCommand(), a.versionCommand(nil), a.keyCommand(nil), a.trustCommand(nil),
		a.gcCommand(), a.demoCommand(nil), a.doctorCommand(nil), a.mcpCommand(nil)}
}

// frontRoot does nothing in the whole ccrun (front.go).
func frontRoot(*cobra.Command) {}

// execEngines takes exec's choices for the @docker and @wasm engines:
// --engine, --wasm-worker, and in ccrun's own main the one-shot @wasm
// guest and the warm server. runtimeEngines gives them to the Runtime.
func (a *app) execEngines(engine string, worker bool) error {
	a.dockerEngine = engine
	if worker {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		a.wasmWorker = exe
	} else if oneShotProcess {
		// This process runs one call and exits: a @wasm guest runs
		// here at full speed, and a limit that stops it returns at
		// once (the guest goes with the process). Should reporting
		// it then hang, the hook ends the process with its code.
		a.oneShot = true
		// And the guest goes first to the project's warm server,
		// which has the module compiled already (runtime(); off
		// with CCRUN_WASM_SERVER=0).
		a.wasmServer = os.Getenv(housekeep.WasmServerEnv) != "0"
	}
	return nil
}

// runtimeEngines returns the engines of every Runtime of the CLI, @wasm's
// and @docker's (package engines), with their options: pull progress on a
// terminal, the detached refill of a warm container pool, the warm @wasm
// server, and exec's choices (execEngines).
func (a *app) runtimeEngines(dir string) []ccrun.Option {
	var opts []engines.Option
	if isTerminal(a.io.err) {
		opts = append(opts, housekeep.PullProgress(a.io.err))
	}
	if exe, err := os.Executable(); err == nil {
		opts = append(opts, housekeep.DetachedRefill(exe))
		if a.wasmServer {
			opts = append(opts, housekeep.WasmServer(exe, dir))
		}
	}
	if a.dockerEngine != "" {
		opts = append(opts, engines.WithDockerEngine(a.dockerEngine))
	}
	if a.wasmWorker != "" {
		opts = append(opts, housekeep.WasmWorker(a.wasmWorker))
	} else if a.oneShot {
		opts = append(opts, housekeep.WasmOneShot(func(r *job.Result) {
			os.Exit(exitCode(r, nil))
		}))
	}
	return engines.All(opts...)
}

// withCompileProgress shows a @wasm module's compilation on st.
func withCompileProgress(ctx context.Context, st *status) context.Context {
	return housekeep.WithCompileProgress(ctx, st.compile)
}

// checkImage refuses an image reference the engine could not read, before
// the engine is called: a name (with a registry, a tag or a digest) or an
// image ID.
func checkImage(ref string) error {
	if _, err := reference.ParseAnyReference(ref); err != nil {
		return usagef("--docker %q: not an image reference (want NAME[:TAG][@DIGEST], such as busybox:1.36, or an image ID): %v", ref, err)
	}
	return nil
}
