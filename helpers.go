//go:build !ccrunfront

package ccrun

import (
	"context"
	"io"

	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/kube"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// The environment variables of ccrun's @wasm helper processes, for a
// front end that finds its own helpers (ccrun gc).
const (
	// WasmWorkerEnv is "1" in a @wasm worker's environment (WithWasmWorker).
	WasmWorkerEnv = wasm.WorkerEnv
	// WasmWorkerParentEnv holds, in a worker's environment, the pid of
	// the process that started it.
	WasmWorkerParentEnv = wasm.WorkerParentEnv
	// WasmServerEnv set to "1" opts a library Runtime in to the warm
	// @wasm server; set to "0" it opts the ccrun CLI, where the server is
	// on by default, out.
	WasmServerEnv = wasm.ServerOptInEnv
)

// RefillArg is the first argument under which ccrun's program, started
// again, refills a @docker warm pool in a process of its own (so that the
// run that used a pooled container exits at once). ServeHelper serves it.
const RefillArg = "__docker-refill"

// ServeHelper runs this process as one of the helper processes a Runtime
// starts from its own program, when it was started as one: a @wasm worker
// (WithWorkerProcess), the warm @wasm server (CCRUN_WASM_SERVER=1), or the
// detached refill of a @docker warm pool (WithDetachedRefill). It then
// returns the helper's exit code and true, and the caller exits with that
// code; otherwise it returns false at once and does nothing. A program
// that embeds ccrun and lets it start helpers from os.Executable calls it
// first thing in main (and in TestMain), with os.Args[1:].
func ServeHelper(args []string) (code int, ok bool) {
	switch {
	case wasm.IsWorker():
		return wasm.ServeWorker(), true
	case wasm.IsServer():
		return wasm.ServeDefault(), true
	case len(args) > 0 && args[0] == RefillArg:
		return docker.RefillMain(), true
	}
	return 0, false
}

// WithDetachedRefill makes the @docker executor refill its warm pool in a
// process of its own: exe (os.Executable, in practice) started with
// RefillArg, whose main calls ServeHelper. Default: the pool is refilled
// in this process, after the run that used a pooled container.
func WithDetachedRefill(exe string) Option {
	return WithDockerOptions(docker.WithDetachedRefill(exe, RefillArg))
}

// CollectContainers removes what @docker calls left behind on the local
// Docker Engine: every container labelled by ccrun whose owning process is
// gone (a ccrun killed mid-run) and, with pool, the idle warm-pool
// containers. It returns the containers it removed, also when it fails
// part way. With no engine to reach, the error is of class ErrUnavailable.
func CollectContainers(ctx context.Context, pool bool) ([]string, error) {
	return CollectAt(ctx, EngineSite{Engine: EngineDocker}, pool)
}

// GarbageContainers lists what CollectContainers would remove, removing
// nothing. With no engine to reach, the error is of class ErrUnavailable.
func GarbageContainers(ctx context.Context, pool bool) ([]string, error) {
	return GarbageAt(ctx, EngineSite{Engine: EngineDocker}, pool)
}

// DockerHost connects to the local Docker Engine as @docker does (the
// environment's engine, the API version negotiated) and says where it is.
// With no engine to reach, the error is of class ErrUnavailable.
func DockerHost(ctx context.Context) (string, error) {
	e, err := docker.New(ctx)
	if err != nil {
		return "", err
	}
	host := e.Host()
	return host, e.Close()
}

// Cluster is what the Kubernetes engine of @docker says of its cluster.
type Cluster = kube.Cluster

// ClusterInfo connects to the Kubernetes engine of @docker with opts (as
// DefaultDockerEngine returns them) and asks its cluster.
func ClusterInfo(ctx context.Context, opts ...kube.Option) (Cluster, error) {
	e, err := kube.New(ctx, opts...)
	if err != nil {
		return Cluster{}, err
	}
	defer e.Close()
	return e.Info(ctx)
}

// WithWasmWorker runs each @wasm guest in a process of its own: exe
// (os.Executable, in practice) started again, whose main calls
// ServeHelper first. A limit then kills the process, so it holds however
// the guest spins. Default: guests run in this process.
func WithWasmWorker(exe string) Option { return WithWasmOptions(wasm.WithWorkerProcess(exe)) }

// WithWasmServer sends each @wasm guest to the warm server of this user
// for the project at dir (wasm.ProjectSocket), starting exe (os.Executable,
// in practice, whose main calls ServeHelper first) as that server when
// none answers, and running the guest in this process when none can take
// it. The server keeps compiled modules in memory across processes, runs
// one guest at a time at full speed with the limits of an in-process run,
// and retires after wasm.DefaultRuns runs, wasm.DefaultMaxAge, or any run
// that did not end cleanly; it exits after wasm.DefaultIdle idle. Default:
// off, because a program that does not call ServeHelper must not be
// started as one (the ccrun CLI turns it on; docs/wasm.md).
func WithWasmServer(exe, dir string) Option {
	return WithWasmOptions(wasm.WithServer(wasm.ProjectSocket(dir), exe))
}

// CollectWasmSockets removes the sockets and lock files that killed warm
// @wasm servers of this user left behind (wasm.RemoveStaleSockets), and
// returns the sockets removed.
func CollectWasmSockets() ([]string, error) { return wasm.RemoveStaleSockets() }

// WithWasmOneShot is for a process that runs one call and exits: a @wasm
// guest runs here without interrupt checks, and a limit that stops it
// returns at once, leaving the guest to the process's exit; should that
// hang, exit is called with the result. Default: off.
func WithWasmOneShot(exit func(*job.Result)) Option {
	return WithWasmOptions(wasm.WithOneShot(exit))
}

// WithPullProgress writes the progress of @docker image pulls to w (a
// terminal, in practice). Default: pulls are silent.
func WithPullProgress(w io.Writer) Option { return WithDockerOptions(docker.WithPullProgress(w)) }
