package ccrun

import (
	"context"
	"fmt"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/shell"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// defaultExecutors registers the runtime/... executors, each started on
// first use, for the environments no WithExecutor option took.
func (r *Runtime) defaultExecutors() {
	r.makers[ceiling.Shell] = func(context.Context) (Executor, error) {
		e, err := shell.New(shell.WithEnvPass(r.envPass...))
		if err != nil {
			return nil, err
		}
		return shellExecutor{e}, nil
	}
	r.makers[ceiling.Docker] = func(ctx context.Context) (Executor, error) {
		if kube := r.kubeMaker(); kube != nil { // the Kubernetes engine (kube.go)
			return kube(ctx)
		}
		e, err := docker.New(ctx, r.docker...)
		if err != nil {
			return nil, fmt.Errorf("@docker: %w", err)
		}
		return &dockerExecutor{e}, nil
	}
	r.makers[ceiling.Wasm] = r.wasmMaker()
}

type shellExecutor struct{ e *shell.Executor }

func (s shellExecutor) Execute(ctx context.Context, inv *Invocation) (*job.Result, error) {
	if inv.Command == nil || inv.Command.File == nil {
		return nil, fmt.Errorf("@shell: no parsed command: %w", ErrInvalidCall)
	}
	return s.e.Run(ctx, shell.Spec{Script: inv.Command.File, Args: inv.Args, Dir: inv.Dir,
		Env: inv.Env, Streams: inv.Streams, Limits: inv.Limits, Guard: inv.Guard, Confine: inv.Confine})
}

type dockerExecutor struct{ e *docker.Executor }

func (d *dockerExecutor) Execute(ctx context.Context, inv *Invocation) (*job.Result, error) {
	return d.e.Run(ctx, docker.Spec{Image: inv.Image, Cmd: inv.Args, Env: inv.Env, Mounts: inv.Mounts,
		Dir: inv.Dir, Streams: inv.Streams, Limits: inv.Limits, Network: inv.Network, Pool: inv.Pool, Pull: docker.PullPolicy(inv.Pull)})
}

func (d *dockerExecutor) Close() error { return d.e.Close() }

func (r *Runtime) wasmMaker() func(context.Context) (Executor, error) {
	return func(ctx context.Context) (Executor, error) {
		// CCRUN_WASM_SERVER=1 opts in to the warm server (runtime/wasm.WithServer).
		e, err := wasm.New(ctx, append(wasm.ServerFromEnv(), r.wasm...)...)
		if err != nil {
			return nil, fmt.Errorf("@wasm: %w", err)
		}
		return &wasmExecutor{e}, nil
	}
}

type wasmExecutor struct{ e *wasm.Executor }

func (w *wasmExecutor) Execute(ctx context.Context, inv *Invocation) (*job.Result, error) {
	return w.e.Run(ctx, wasm.Spec{Module: inv.Module, Sum: inv.ModuleSum, Name: inv.ModuleName, Args: inv.Args, Env: inv.Env,
		Mounts: inv.Mounts, Streams: inv.Streams, Limits: inv.Limits})
}

func (w *wasmExecutor) Close() error { return w.e.Close(context.Background()) }
