package wasm

import (
	"context"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/remote"
)

// The worker process is internal/remote's (RunWorker, ServeWorker): what
// is here is what the Executor and a worker's main see of it.

// WorkerEnv is the environment variable that marks a worker process.
const WorkerEnv = remote.WorkerEnv

// WorkerParentEnv holds, in a worker's environment, the pid of the process
// that started it. A worker whose parent is not that process (its parent
// died before the worker could be told, and it was reparented) exits at
// once; `ccrun gc` ends a worker found running under another parent.
const WorkerParentEnv = remote.WorkerParentEnv

// WithWorkerProcess runs each guest in a process of its own: exe (the
// running program, from os.Executable, in practice) started again with
// WorkerEnv=1, WorkerParentEnv=this process's pid, the directory of the
// locks of writable mounts (internal/mountlock) and nothing else in its
// environment, whose main calls ServeWorker before anything else. A worker
// dies with the process that started it (the kernel's parent-death signal,
// SIGKILL, and a check of its parent once started). The worker runs the guest's compiled
// code without interrupt checks, so CPU-bound guests run at full speed,
// and the Executor kills the worker (SIGKILL) when the timeout, the output
// cap or ctx stops the run. Mounts, memory limit and confinement are the
// same as in process; the worker shares the Executor's disk cache, so it
// does not compile again. Default: "" (guests run in this process, with
// interrupt checks). The figures are in docs/wasm.md.
func WithWorkerProcess(exe string) Option {
	return func(c *config) error {
		c.worker = exe
		return nil
	}
}

// IsWorker reports whether this process was started as a worker by an
// Executor made WithWorkerProcess.
func IsWorker() bool { return remote.IsWorker() }

// ServeWorker runs the one guest its parent Executor sends and returns the
// process's exit code (0 when it could report, whatever the guest did). A
// program that may be a worker calls it first thing in main:
//
//	if wasm.IsWorker() {
//		os.Exit(wasm.ServeWorker())
//	}
func ServeWorker() int {
	return remote.ServeWorker(func(cacheDir string) (remote.Runner, error) {
		e, err := New(context.Background(), WithCacheDir(cacheDir), WithInterrupt(false))
		if err != nil {
			return nil, err
		}
		// No Close: the process ends with the run.
		return e.runRemote, nil
	})
}

// runRemote is Run for a guest that came from a parent process or a
// client: the module's bytes, the limits the sender resolved.
func (e *Executor) runRemote(ctx context.Context, s remote.Spec) (*job.Result, error) {
	return e.Run(ctx, Spec{Module: s.Module, Sum: s.Sum, Name: s.Name, Args: s.Args, Env: s.Env, Mounts: s.Mounts,
		Streams: s.Streams, Limits: s.Limits, Deterministic: s.Deterministic})
}

// remoteSpec is s as it goes to a worker or a server: bin its module, name
// its argv[0], lim its limits resolved. The module's sum goes with it when
// s gave both (a server that keeps the module is not sent it again).
func remoteSpec(s Spec, bin []byte, name string, lim job.Limits) remote.Spec {
	r := remote.Spec{Module: bin, Name: name, Args: s.Args, Env: s.Env, Mounts: s.Mounts,
		Streams: s.Streams, Limits: lim, Deterministic: s.Deterministic}
	if s.Module != nil { // bin is s.Module, and Sum its sum (Spec.Sum)
		r.Sum = s.Sum
	}
	return r
}
