// Package housekeep is what ccrun's front ends do to the engines beside
// running calls: remove what killed runs left behind (containers, pods,
// the sockets of warm @wasm servers), say where an engine is, and serve
// the helper processes a Runtime starts from ccrun's own program. It is
// not part of the library's surface: a program that embeds ccrun calls
// the engines' packages (runtime/docker, runtime/kube, runtime/wasm) for
// these.
package housekeep

import (
	"context"
	"fmt"

	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/kube"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// RefillArg is the first argument under which ccrun's program, started
// again, refills a @docker warm pool in a process of its own (so that the
// run that used a pooled container exits at once). Serve serves it.
const RefillArg = "__docker-refill"

// Serve runs this process as one of the helper processes a Runtime starts
// from its own program, when it was started as one: a @wasm worker
// (wasm.WithWorkerProcess), the warm @wasm server (CCRUN_WASM_SERVER=1),
// or the detached refill of a @docker warm pool (docker.WithDetachedRefill
// with RefillArg). It then returns the helper's exit code and true, and
// the caller exits with that code; otherwise it returns false at once and
// does nothing. ccrun's main calls it first thing, with os.Args[1:].
func Serve(args []string) (code int, ok bool) {
	switch {
	case wasm.IsWorker():
		return wasm.ServeWorker(), true
	case wasm.IsWarmServer():
		return wasm.ServeDefault(), true
	case len(args) > 0 && args[0] == RefillArg:
		return docker.RefillMain(), true
	}
	return 0, false
}

// CollectContainers removes what @docker calls left behind on the local
// Docker Engine: every container labelled by ccrun whose owning process is
// gone (a ccrun killed mid-run) and, with pool, the idle warm-pool
// containers. It returns the containers it removed, also when it fails
// part way. With no engine to reach, the error is of class
// errdefs.ErrUnavailable.
func CollectContainers(ctx context.Context, pool bool) ([]string, error) {
	return CollectAt(ctx, EngineSite{Engine: engines.EngineDocker}, pool)
}

// GarbageContainers lists what CollectContainers would remove, removing
// nothing.
func GarbageContainers(ctx context.Context, pool bool) ([]string, error) {
	return GarbageAt(ctx, EngineSite{Engine: engines.EngineDocker}, pool)
}

// DockerHost connects to the local Docker Engine as @docker does (the
// environment's engine, the API version negotiated) and says where it is.
func DockerHost(ctx context.Context) (string, error) {
	e, err := docker.New(ctx)
	if err != nil {
		return "", err
	}
	host := e.Host()
	return host, e.Close()
}

// ClusterInfo connects to the Kubernetes engine of @docker with opts and
// asks its cluster.
func ClusterInfo(ctx context.Context, opts ...kube.Option) (kube.Cluster, error) {
	e, err := kube.New(ctx, opts...)
	if err != nil {
		return kube.Cluster{}, err
	}
	defer e.Close()
	return e.Info(ctx)
}

// CollectPods is CollectContainers for the Kubernetes engine: it deletes
// the pods of ccrun in the namespace opts name (default: the kubeconfig
// context's) whose owner was a process of this host that is gone, and
// those past their expiry annotation; with pool, also the warm pods.
func CollectPods(ctx context.Context, pool bool, opts ...kube.Option) ([]string, error) {
	e, err := kube.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	removed, err := e.GC(ctx)
	if pool && err == nil {
		var n int
		n, err = e.DrainPool(ctx)
		if n > 0 {
			removed = append(removed, fmt.Sprintf("%d warm pods", n))
		}
	}
	return removed, err
}

// CollectWasmSockets removes the sockets and lock files that killed warm
// @wasm servers of this user left behind, and returns the sockets removed.
func CollectWasmSockets() ([]string, error) { return wasm.RemoveStaleSockets() }

// PodOwnerLabel is the label of a pod of the Kubernetes engine that holds
// the pid of the ccrun process that owns it (what CollectPods reads).
const PodOwnerLabel = kube.LabelPID
