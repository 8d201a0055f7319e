package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// WorkerEnv is the environment variable that marks a worker process
// (runtime/wasm.WorkerEnv).
const WorkerEnv = "CCRUN_WASM_WORKER"

// WorkerParentEnv holds, in a worker's environment, the pid of the process
// that started it (runtime/wasm.WorkerParentEnv).
const WorkerParentEnv = "CCRUN_WASM_WORKER_PARENT"

// IsWorker reports whether this process was started as a worker by
// RunWorker.
func IsWorker() bool { return os.Getenv(WorkerEnv) == "1" }

// workerRequest is what the parent sends on descriptor 3.
type workerRequest struct {
	Module        []byte      `json:"module"`
	Name          string      `json:"name"`
	Args          []string    `json:"args"`
	Env           []string    `json:"env"`
	Mounts        []job.Mount `json:"mounts"`
	Memory        int64       `json:"memory"`
	Output        int64       `json:"output"`
	Deterministic bool        `json:"deterministic"`
	CacheDir      string      `json:"cache_dir"`
}

// ServeWorker runs the one guest its parent sends, with the Runner local
// makes for the parent's disk cache (in runtime/wasm: an Executor without
// interrupt checks, which the parent's kill stops), and returns the
// process's exit code (0 when it could report, whatever the guest did).
func ServeWorker(local func(cacheDir string) (Runner, error)) int {
	// The parent asked the kernel for SIGKILL when it dies (Pdeathsig);
	// if it died before that took effect, this process was reparented.
	if want := os.Getenv(WorkerParentEnv); want != "" && want != strconv.Itoa(os.Getppid()) {
		fmt.Fprintln(os.Stderr, "wasm worker: the process that started it is gone")
		return 125
	}
	reqf, repf := os.NewFile(3, "request"), os.NewFile(4, "reply")
	if reqf == nil || repf == nil {
		fmt.Fprintln(os.Stderr, "wasm worker: descriptors 3 and 4 missing")
		return 125
	}
	var req workerRequest
	if err := json.NewDecoder(reqf).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "wasm worker: read request:", err)
		return 125
	}
	_ = reqf.Close()
	reply := serve(req, local)
	if err := json.NewEncoder(repf).Encode(reply); err != nil {
		return 125
	}
	_ = repf.Close()
	return 0
}

func serve(req workerRequest, local func(cacheDir string) (Runner, error)) workerReply {
	ctx := context.Background()
	run, err := local(req.CacheDir)
	if err != nil {
		return replyErr(err)
	}
	// The output limit is the parent's to enforce: pass it one byte more,
	// so that it sees the overflow and kills this process.
	if req.Output >= 0 {
		req.Output++
	}
	res, err := run(ctx, Spec{
		Module: req.Module, Name: req.Name, Args: req.Args, Env: req.Env, Mounts: req.Mounts,
		Streams:       job.Streams{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr},
		Limits:        job.Limits{Timeout: -1, Memory: req.Memory, Output: req.Output},
		Deterministic: req.Deterministic,
	})
	if err != nil {
		return replyErr(err)
	}
	res.Stdout, res.Stderr = nil, nil // the parent has them
	return workerReply{Result: res}
}

// RunWorker runs s in a worker process: exe started again with WorkerEnv=1
// and WorkerParentEnv, whose main calls ServeWorker, sharing the disk cache
// in cacheDir. The worker dies with this process, and is killed (SIGKILL)
// when the timeout, the output cap or ctx stops the run.
func RunWorker(ctx context.Context, exe, cacheDir string, s Spec) (*job.Result, error) {
	start := time.Now()
	if err := wasmbin.Header(s.Module); err != nil {
		return nil, err
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("wasm worker: %w", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		_, _ = reqR.Close(), reqW.Close()
		return nil, fmt.Errorf("wasm worker: %w", err)
	}
	defer repR.Close()
	var (
		cmd       *exec.Cmd
		reply     workerReply
		replyDone = make(chan error, 1)
	)
	lim := s.Limits
	sup := &job.Supervisor{Limits: lim, Streams: s.Streams, Begin: start}
	// The stops cancel runCtx, which kills the worker (SIGKILL).
	sup.Start = func(runCtx context.Context, out *job.Capture) error {
		cmd = exec.CommandContext(runCtx, exe)
		cmd.Env = []string{WorkerEnv + "=1", WorkerParentEnv + "=" + strconv.Itoa(os.Getpid()),
			mountlock.DirEnv + "=" + mountlock.Dir()} // the guest's run takes its mounts' locks there
		cmd.SysProcAttr = workerProcAttr() // Pdeathsig: SIGKILL on Linux (procattr_linux.go)
		if s.Streams.Stdin != nil {
			cmd.Stdin = Stdin(runCtx, s.Streams.Stdin)
		}
		cmd.Stdout, cmd.Stderr = out.Stdout, out.Stderr
		cmd.ExtraFiles = []*os.File{reqR, repW}
		cmd.WaitDelay = 100 * time.Millisecond // a blocked stdin must not hold Wait
		err := cmd.Start()
		_, _ = reqR.Close(), repW.Close()
		if err != nil {
			_ = reqW.Close()
			return fmt.Errorf("wasm worker: start %s: %w", exe, err)
		}
		req := workerRequest{Module: s.Module, Name: s.Name, Args: s.Args, Env: s.Env, Mounts: s.Mounts,
			Memory: lim.Memory, Output: lim.Output, Deterministic: s.Deterministic, CacheDir: cacheDir}
		go func() {
			_ = json.NewEncoder(reqW).Encode(req)
			_ = reqW.Close()
		}()
		go func() { replyDone <- json.NewDecoder(repR).Decode(&reply) }()
		return nil
	}
	sup.Wait = func() (job.Status, error) {
		waitErr := cmd.Wait()
		var replyErr error
		select {
		case replyErr = <-replyDone:
		case <-time.After(time.Second):
			replyErr = errors.New("no reply")
		}
		return workerStatus(reply, replyErr, waitErr)
	}
	// The worker dies with this process: the kernel sends it SIGKILL when
	// the thread that started it ends, so this goroutine, which starts it
	// (Start runs on it), keeps its thread (which no other goroutine can
	// then end) until the worker is reaped (Run returns after Wait).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return sup.Run(ctx)
}

// workerStatus is how a worker's run ended by itself, from its reply. A
// run stopped by us is reported as stopped whatever the worker said (the
// Supervisor's rule): stopping closes the guest's stdin, and a guest
// reading it may exit on that EOF before the kill lands.
func workerStatus(reply workerReply, replyErr, waitErr error) (job.Status, error) {
	switch {
	case replyErr == nil && reply.Result != nil:
		return job.Status{Reason: reply.Result.Reason, Code: reply.Result.ExitCode, Detail: reply.Result.Detail}, nil
	case replyErr == nil && reply.Error != "":
		if c, ok := classes[reply.Class]; ok {
			return job.Status{}, fmt.Errorf("%s (in worker): %w", reply.Error, c)
		}
		return job.Status{}, fmt.Errorf("wasm worker: %s", reply.Error)
	}
	if errors.Is(replyErr, io.EOF) {
		replyErr = errors.New("the worker ended without a reply")
	}
	return job.Status{}, fmt.Errorf("wasm worker: %v (%v)", replyErr, waitErr)
}
