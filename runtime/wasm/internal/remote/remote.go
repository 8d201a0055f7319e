// Package remote holds runtime/wasm's remote paths: the worker process (one
// guest in a process of its own, killed at a limit), the warm server (a
// background process of one user that keeps compiled modules in memory
// and runs guests for its clients over a unix socket) and the server's
// client. What runs a guest in the end, in the worker or the server, is
// runtime/wasm's Executor, which this package cannot import: it is handed
// one as a Runner (or a Local that makes one). runtime/wasm re-exports
// what its users see.
package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// Spec is one run as it goes to a worker or a server, or comes from a
// client or a parent: the module's bytes (never a path), argv[0], the
// arguments, environment, mounts (absolute host paths), streams, the
// limits as the sender resolved them, and whether the run is
// deterministic (as runtime/wasm.Spec).
type Spec struct {
	Module []byte
	// Sum is sha256.Sum256(Module) when the caller has it (zero when not):
	// a warm server that keeps the module by it is not sent the bytes
	// again. A server's own Runner is given the sum the server computed.
	Sum           [sha256.Size]byte
	Name          string
	Args          []string
	Env           []string
	Mounts        []job.Mount
	Streams       job.Streams
	Limits        job.Limits
	Deterministic bool
}

// Runner runs a guest in this process: in runtime/wasm, an Executor's Run.
type Runner func(ctx context.Context, s Spec) (*job.Result, error)

// TrapExit is the exit code reported for a guest that trapped
// (runtime/wasm.TrapExit); a Server counts a run with it and a Detail as
// one that did not end in a clean exit.
const TrapExit = 134

// Error classes of runtime/wasm's runs (runtime/wasm re-exports them) that
// only the package of its Executor and this one use; a reply names each
// by its class (classes), so that it is the same class again on the
// other side of the socket or pipe.
var (
	// ErrMissingStart: the module exports no `_start` function.
	ErrMissingStart = errdefs.ErrInvalidArgument.WithMessage("wasm module has no _start function")
	// ErrInvalidSpec: the Spec itself is wrong (a bad mount, env entry or
	// argument).
	ErrInvalidSpec = errdefs.ErrInvalidArgument.WithMessage("invalid wasm run")
	// ErrClosed: the Executor was closed.
	ErrClosed = errdefs.ErrUnavailable.WithMessage("wasm executor closed")
)

// workerReply is what a worker sends back on descriptor 4, and a server
// as its 'R' frame.
type workerReply struct {
	Result *job.Result `json:"result,omitempty"`
	Error  string      `json:"error,omitempty"`
	Class  string      `json:"class,omitempty"`
}

var classes = map[string]error{
	"not-wasm": wasmbin.ErrNotWasm, "truncated": wasmbin.ErrTruncated, "invalid-module": wasmbin.ErrInvalidModule,
	"missing-start": ErrMissingStart, "invalid-spec": ErrInvalidSpec, "closed": ErrClosed,
}

func replyErr(err error) workerReply {
	r := workerReply{Error: err.Error()}
	for name, c := range classes {
		if errors.Is(err, c) {
			r.Class = name
		}
	}
	return r
}

// Stdin returns what a guest reads as stdin: nothing when r is nil, r
// itself when reading it cannot block, and otherwise a reader whose Read
// gives up when the run is stopped (ctx is done), so that a guest blocked
// on stdin does not outlive its timeout. runtime/wasm's runs in process
// use it too.
func Stdin(ctx context.Context, r io.Reader) io.Reader {
	switch r.(type) {
	case nil:
		return bytes.NewReader(nil)
	case *bytes.Reader, *bytes.Buffer, *strings.Reader:
		return r
	}
	return &stoppable{ctx: ctx, r: r}
}

type stoppable struct {
	ctx context.Context
	r   io.Reader
}

type readResult struct {
	b   []byte
	err error
}

// Read reads into a buffer of its own in another goroutine: when the run
// is stopped it returns at once, and the read left behind writes into
// nothing the guest owns.
func (s *stoppable) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("stdin: run stopped: %w", err)
	}
	ch := make(chan readResult, 1)
	buf := make([]byte, len(p))
	go func() {
		n, err := s.r.Read(buf)
		ch <- readResult{buf[:n], err}
	}()
	select {
	case res := <-ch:
		return copy(p, res.b), res.err
	case <-s.ctx.Done():
		return 0, fmt.Errorf("stdin: run stopped: %w", s.ctx.Err())
	}
}
