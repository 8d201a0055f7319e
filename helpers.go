package ccrun

import (
	"context"
	"errors"

	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/wasm"
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
	e, err := docker.New(ctx)
	if err != nil {
		return nil, err
	}
	removed, err := e.GC(ctx)
	if pool && err == nil {
		var more []string
		more, err = e.DrainPool(ctx)
		removed = append(removed, more...)
	}
	return removed, errors.Join(err, e.Close())
}
