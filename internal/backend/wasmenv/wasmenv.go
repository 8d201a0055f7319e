// Package wasmenv is the backend of @wasm: a module file or a @wasm
// capability's module, read once, checked by runtime/wasm's guard and
// digested before the gate, and those very bytes run in wazero.
package wasmenv

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// Backend prepares and runs @wasm calls. Its executor is made by the first
// Prepare (its guard's verdicts are the executor's), and makes its wazero
// runtime on the first run compiled in this process: a call refused at
// the gate never starts one, nor does a run the warm server runs. It is
// safe for concurrent use.
type Backend struct {
	opts    []wasm.Option
	modules moduleCache
	e       backend.Lazy[*wasm.Executor]
}

// New returns the @wasm backend, whose executor takes opts (after
// runtime/wasm.ServerFromEnv: CCRUN_WASM_SERVER=1 opts in to the warm
// server).
func New(opts ...wasm.Option) *Backend { return &Backend{opts: opts} }

// plan is what runs: the bytes the digest was made of.
type plan struct {
	mod  []byte
	sum  [sha256.Size]byte
	name string // argv[0]
}

// EnforcesLimits says Run stops the guest itself on a timeout, a
// cancellation or the output cap.
func (b *Backend) EnforcesLimits() bool { return true }

// Prepare reads the module and checks it before anyone is asked: a grant
// for a module that cannot run would be a grant for nothing.
func (b *Backend) Prepare(ctx context.Context, inv *backend.Invocation) (*backend.Prepared, error) {
	e, err := b.executor(ctx)
	if err != nil {
		return nil, err
	}
	if c := inv.Capability; c != nil {
		m := &c.Manifest
		mod, err := c.ReadModule()
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(mod)
		if err := b.modules.check(mod, sum, e.Check); err != nil {
			return nil, fmt.Errorf("capability %s: module %s: %w", m.Name, m.Entry.Module, err)
		}
		inv.Plan = &plan{mod: mod, sum: sum, name: m.Entry.Module}
		inv.Args = append(append([]string(nil), m.Entry.Args...), inv.Args...)
		return &backend.Prepared{Display: backend.Display(m.Entry.Module, inv.Args)}, nil
	}
	path := inv.Target
	mod, sum, err := b.modules.read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("call: module: %w: %w", err, errdefs.ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("call: module: %w", err)
	}
	rel := backend.Rel(inv.ProjectDir, path)
	if err := b.modules.check(mod, sum, e.Check); err != nil {
		return nil, fmt.Errorf("call: module %s: %w", rel, err)
	}
	inv.Plan = &plan{mod: mod, sum: sum, name: filepath.Base(path)}
	return &backend.Prepared{Key: backend.PathKey(inv.Tool, rel), Display: backend.Display(rel, inv.Args),
		Digest: backend.ContentDigest(sum[:], inv.Mounts, "", nil, nil)}, nil
}

// Run runs the module's bytes Prepare read.
func (b *Backend) Run(ctx context.Context, inv *backend.Invocation) (*job.Result, error) {
	p, ok := inv.Plan.(*plan)
	if !ok {
		return nil, fmt.Errorf("@wasm: the call was not prepared: %w", errdefs.ErrInvalidArgument)
	}
	e, err := b.executor(ctx)
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, wasm.Spec{Module: p.mod, Sum: p.sum, Name: p.name, Args: inv.Args, Env: inv.Env,
		Mounts: inv.Mounts, Streams: inv.Streams, Limits: inv.Limits})
}

func (b *Backend) executor(ctx context.Context) (*wasm.Executor, error) {
	return b.e.Get(func() (*wasm.Executor, error) {
		e, err := wasm.New(ctx, append(wasm.ServerFromEnv(), b.opts...)...)
		if err != nil {
			return nil, fmt.Errorf("@wasm: %w", err)
		}
		return e, nil
	})
}

// Close releases the wazero runtime, when it started.
func (b *Backend) Close() error {
	return b.e.Close(func(e *wasm.Executor) error { return e.Close(context.Background()) })
}
