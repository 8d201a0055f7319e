package housekeep

import (
	"context"
	"io"

	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// The options of the engines (package engines: for engines.All) that
// ccrun's own program sets and a library user has no need of: they start
// helper processes from ccrun's program (Serve serves them) or serve one
// call per process.

// The environment variables of ccrun's @wasm helper processes, for a
// front end that finds its own helpers (ccrun gc).
const (
	// WasmWorkerEnv is "1" in a @wasm worker's environment (WasmWorker).
	WasmWorkerEnv = wasm.WorkerEnv
	// WasmWorkerParentEnv holds, in a worker's environment, the pid of
	// the process that started it.
	WasmWorkerParentEnv = wasm.WorkerParentEnv
	// WasmServerEnv set to "0" opts the ccrun CLI, where the warm @wasm
	// server is on by default, out.
	WasmServerEnv = wasm.ServerOptInEnv
)

// WasmWorker runs each @wasm guest in a process of its own: exe
// (os.Executable) started again, whose main calls Serve first. A limit
// then kills the process, so it holds however the guest spins.
func WasmWorker(exe string) engines.Option {
	return engines.WithWasmOptions(wasm.WithWorkerProcess(exe))
}

// WasmServer sends each @wasm guest to the warm server of this user for
// the project at dir, starting exe (whose main calls Serve first) as that
// server when none answers, and running the guest in this process when
// none can take it (docs/wasm.md).
func WasmServer(exe, dir string) engines.Option {
	return engines.WithWasmOptions(wasm.WithServer(wasm.ProjectSocket(dir), exe))
}

// WasmOneShot is for a process that runs one call and exits: a @wasm
// guest runs here without interrupt checks, and a limit that stops it
// returns at once, leaving the guest to the process's exit; should that
// hang, exit is called with the result.
func WasmOneShot(exit func(*job.Result)) engines.Option {
	return engines.WithWasmOptions(wasm.WithOneShot(exit))
}

// PullProgress writes the progress of @docker image pulls to w.
func PullProgress(w io.Writer) engines.Option {
	return engines.WithDockerOptions(docker.WithPullProgress(w))
}

// DetachedRefill makes the @docker executor refill its warm pool in a
// process of its own: exe started with RefillArg, whose main calls Serve.
func DetachedRefill(exe string) engines.Option {
	return engines.WithDockerOptions(docker.WithDetachedRefill(exe, RefillArg))
}

// WithCompileProgress returns a context whose @wasm calls tell f when they
// wait for their module to compile (true when the wait begins, false when
// it ends); module is the module's name. f runs on the call's goroutine
// and must not block.
func WithCompileProgress(ctx context.Context, f func(module string, compiling bool)) context.Context {
	return wasm.WithCompileFunc(ctx, f)
}
