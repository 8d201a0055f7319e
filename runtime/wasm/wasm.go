// Package wasm runs WebAssembly modules (WASI preview 1, a `_start`
// command) in wazero, confined: a guest sees only the arguments, the
// environment variables and the directories its Spec declares, has no
// network, and is held to the memory, time and output limits of
// job.Limits.
//
// Directories are mounted through os.Root, never through wazero's own
// directory mounts, so that no path, symbolic link or hard link leads a
// guest outside them (see docs/wasm.md for the cases tested).
//
// An Executor compiles each distinct module once (cached in memory by the
// SHA-256 of its bytes, and on disk across processes) and runs any number
// of instances of it at once. An Executor is safe for concurrent use.
package wasm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	esys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/remote"
	"github.com/ccrun/ccrun/runtime/wasm/internal/rootfs"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// Error classes returned by Run and New. Test them with errors.Is.
var (
	// ErrNotWasm: the bytes are not a WebAssembly binary module.
	ErrNotWasm = wasmbin.ErrNotWasm
	// ErrTruncated: the module ends before its sections do.
	ErrTruncated = wasmbin.ErrTruncated
	// ErrInvalidModule: the module does not decode, validate or link (an
	// import that is neither WASI preview 1 nor satisfied, for example).
	ErrInvalidModule = wasmbin.ErrInvalidModule
	// ErrMissingStart: the module exports no `_start` function, so it is
	// not a WASI command.
	ErrMissingStart = remote.ErrMissingStart
	// ErrInvalidSpec: the Spec itself is wrong (a bad mount, env entry or
	// argument).
	ErrInvalidSpec = remote.ErrInvalidSpec
	// ErrClosed: the Executor was closed.
	ErrClosed = remote.ErrClosed
)

// TrapExit is the exit code reported for a guest that trapped (hit
// `unreachable`, accessed memory out of bounds, divided by zero...): the
// code of an aborted process (128+SIGABRT), as wasmtime reports it.
const TrapExit = remote.TrapExit

// defaultMinCompile is the least time a compilation is given: a run whose
// module takes longer to compile (which only a module built to do so does)
// ends as a timeout, while wazero's compilation goes on in the background.
const defaultMinCompile = time.Minute

// Executor runs modules. Build one with New; it is safe for concurrent use
// and should be closed with Close.
type Executor struct {
	// rt and cache are made by the first compilation (wazero), under
	// rtMu; rtErr is why they could not be.
	rtMu      sync.Mutex
	rt        wazero.Runtime
	cache     wazero.CompilationCache
	rtErr     error
	cacheDir  string // "" when there is no disk cache; symlinks resolved
	memory    int64
	interrupt bool
	worker    string // the worker executable; "" runs guests in process
	server    string // the warm server's socket; "" runs guests here
	serverExe string // started as the server when none answers; "" never

	startOnce sync.Once // one auto-start per Executor

	// oneShot is WithOneShot's exit function; nil: off.
	oneShot func(*job.Result)

	// minCompile is the least time compiling a module is given before
	// the run is a timeout; tests shorten it.
	minCompile time.Duration

	// mountFS makes the file system of one mount; tests swap in wazero's
	// own to compare.
	mountFS func(r *os.Root, m job.Mount, run *rootfs.Run) (esys.FS, error)

	mu     sync.Mutex
	mods   modules // guarded by mu
	closed bool
	// abandoned: a one-shot run left its guest running, so nothing may
	// be freed and no run starts. Guarded by mu.
	abandoned bool
	// compiling counts the compilations under way in the background; a
	// Close while any runs leaves the runtime to the last one to close
	// (wazero's runtime must not be closed under a compilation: it
	// panics, ending the process).
	compiling    int
	closePending bool
}

type config struct {
	keep      int
	cacheDir  string
	memory    int64
	interrupt bool
	worker    string
	server    string
	serverExe string
	oneShot   func(*job.Result)
}

// Option configures an Executor.
type Option func(*config) error

// WithCacheDir keeps compiled modules on disk in dir (created 0700 when
// missing), so that a new process does not compile them again. Default:
// os.UserCacheDir()/ccrun/wasm, or no disk cache when the user has no cache
// directory. "" disables the disk cache. No guest can reach dir: a mount
// that contains it or lies inside it is refused.
func WithCacheDir(dir string) Option {
	return func(c *config) error {
		c.cacheDir = dir
		return nil
	}
}

// WithMemoryLimit sets the memory cap, in bytes, of a run whose
// Limits.Memory is zero. Default: job.DefaultMemory (256 MiB).
func WithMemoryLimit(bytes int64) Option {
	return func(c *config) error {
		if bytes <= 0 {
			return fmt.Errorf("memory limit %d: %w", bytes, ErrInvalidSpec)
		}
		c.memory = bytes
		return nil
	}
}

// WithInterrupt says whether compiled code checks, at every function entry
// and loop back-edge, whether its run was stopped (wazero's
// CloseOnContextDone). Default: true. The checks make CPU-bound guests
// several times slower (docs/wasm.md has the figures); WithWorkerProcess
// is the way to run at full speed and still stop a guest. Without checks
// a guest that loops without calling the host cannot be stopped at all
// (not by Limits.Timeout, the output cap or ctx), and while it runs the Go
// runtime cannot stop the world, so the garbage collector of the whole
// process waits for it: turn them off only for trusted modules, or in a
// process that runs one guest and is killed from outside.
func WithInterrupt(on bool) Option {
	return func(c *config) error {
		c.interrupt = on
		return nil
	}
}

// New returns an Executor. It makes no wazero runtime: the first run
// compiled in this process does (with its own context), so that an
// Executor whose runs go to the warm server or a worker costs nothing to
// make. The context is kept for compatibility and not used.
func New(_ context.Context, opts ...Option) (*Executor, error) {
	c := config{memory: job.DefaultMemory, interrupt: true, keep: DefaultKeep}
	if d, err := os.UserCacheDir(); err == nil {
		c.cacheDir = filepath.Join(d, "ccrun", "wasm")
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	e := &Executor{memory: c.memory, interrupt: c.interrupt, worker: c.worker, server: c.server, serverExe: c.serverExe, mods: newModules(c.keep), mountFS: confined, minCompile: defaultMinCompile, oneShot: c.oneShot}
	if c.cacheDir != "" {
		if err := os.MkdirAll(c.cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm cache dir: %w", err)
		}
		real, err := filepath.EvalSymlinks(c.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm cache dir: %w", err)
		}
		e.cacheDir = real
	}
	return e, nil
}

// wazero returns the executor's wazero runtime, made on the first run
// that needs one (a compilation here): a process whose runs all go to the
// warm server or a worker never pays for it (1.5 ms, most of it the WASI
// host module). The context is used to create it only.
func (e *Executor) wazero(ctx context.Context) (wazero.Runtime, error) {
	e.rtMu.Lock()
	defer e.rtMu.Unlock()
	if e.rt != nil || e.rtErr != nil {
		return e.rt, e.rtErr
	}
	var cache wazero.CompilationCache
	if e.cacheDir != "" {
		// Code compiled with interrupt checks and code compiled without
		// are kept apart: wazero's cache key does not tell them apart, so
		// one directory would hand a run that must be stoppable code that
		// cannot be stopped (or a worker the slow code).
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(filepath.Join(e.cacheDir, cacheSubdir(e.interrupt))); err != nil {
			e.rtErr = fmt.Errorf("wasm cache dir: %w", err)
			return nil, e.rtErr
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc := wazero.NewRuntimeConfigCompiler().
		WithCloseOnContextDone(e.interrupt).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := rootfs.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		e.rtErr = fmt.Errorf("wasm: instantiate wasi: %w", err)
		return nil, e.rtErr
	}
	e.rt, e.cache = rt, cache
	return rt, nil
}

// runtimeMade is the wazero runtime when one was made, else nil.
func (e *Executor) runtimeMade() wazero.Runtime {
	e.rtMu.Lock()
	defer e.rtMu.Unlock()
	return e.rt
}

// Close releases the runtime and every compiled module. Runs still going
// are stopped. The disk cache stays.
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	abandoned := e.abandoned
	if e.compiling > 0 && !abandoned {
		// the last compilation to end closes the runtime (closeLater)
		e.closePending = true
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	if abandoned { // a guest still runs this code, in this memory
		return nil
	}
	return e.closeRuntime(ctx)
}

func (e *Executor) closeRuntime(ctx context.Context) error {
	e.rtMu.Lock()
	defer e.rtMu.Unlock()
	if e.rt == nil {
		e.rtErr = fmt.Errorf("wasm: run: %w", ErrClosed) // none is made after Close
		return nil
	}
	err := e.rt.Close(ctx)
	return errors.Join(err, e.cache.Close(ctx))
}

// Spec is one run of a module.
type Spec struct {
	// Module is the module's bytes. When nil, the module is read from Path.
	Module []byte
	// Path is the module's file, read when Module is nil.
	Path string
	// Name is argv[0]. Default: the base name of Path, or "module.wasm".
	Name string
	// Args are argv[1:]. Nothing else is passed; an empty argument is
	// refused by wazero (ErrInvalidSpec).
	Args []string
	// Env is the guest's whole environment, as KEY=value entries. Nothing
	// from the host's environment is passed.
	Env []string
	// Mounts are the only host directories the guest sees, each read-only
	// unless Writable. Guest paths must be absolute and distinct.
	Mounts []job.Mount
	// Streams are stdin (nil: empty) and the writers output is copied to as
	// it comes (the Result keeps it too).
	Streams job.Streams
	// Limits bound the run; zero fields take job's defaults, except Memory,
	// whose default is the Executor's (WithMemoryLimit). Pids and CPUs do
	// not apply: a guest has one thread.
	Limits job.Limits
	// Deterministic gives the guest a fixed clock that only advances when
	// read, sleeps that return at once, and a seeded random source, so that
	// runs repeat exactly. Default false: the host's clocks, real sleeps,
	// crypto/rand.
	Deterministic bool
	// Sum is sha256.Sum256(Module), when the caller has computed it
	// already (the root package digests every module it runs); the zero
	// value means: compute it. It keys the compiled-module cache, so a Sum
	// that is not Module's runs another module: only pass one you computed.
	Sum [sha256.Size]byte
}

// Run compiles (or finds compiled) the module and runs its `_start`. A
// guest's exit, whatever its code, and a guest stopped by a limit are a
// Result, not an error. A trap is Reason Exit with ExitCode TrapExit and
// Detail naming the trap and the function. Errors are ErrNotWasm,
// ErrTruncated, ErrInvalidModule, ErrMissingStart, ErrInvalidSpec,
// ErrClosed, or a failure to read Path.
//
// A run with a writable mount holds that directory's lock to its end
// (internal/mountlock): a second run that writes it, here, in @docker or
// in another process, waits, bounded by its timeout.
func (e *Executor) Run(ctx context.Context, s Spec) (res *job.Result, err error) {
	start := time.Now()
	e.mu.Lock()
	abandoned := e.abandoned
	e.mu.Unlock()
	if abandoned {
		return nil, fmt.Errorf("wasm: run: a guest was left running: %w", ErrClosed)
	}
	left := false // the guest was left running: release nothing
	bin := s.Module
	var known *compiled // found without hashing: by the file's identity, or its bytes
	fk := ""
	if bin == nil && s.Path != "" && e.worker == "" && e.server == "" {
		fk = fileKey(s.Path)
		known = e.lookupFile(fk)
	}
	if bin != nil && s.Sum == ([sha256.Size]byte{}) && e.worker == "" && e.server == "" {
		known = e.lookupBytes(bin)
	}
	if known != nil {
		defer func() {
			if !left {
				e.release(known)
			}
		}()
	}
	if bin == nil && known == nil {
		b, err := readModule(s)
		if err != nil {
			return nil, err
		}
		bin = b
	}
	name, lim := nameAndLimits(s, e.memory)

	if e.server != "" && e.worker == "" {
		if res, ok, err := e.runServer(ctx, s, bin, name, lim, start); ok {
			return res, err
		}
	}
	if e.worker != "" {
		e.mu.Lock()
		closed := e.closed
		e.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("wasm: run: %w", ErrClosed)
		}
		return remote.RunWorker(ctx, e.worker, e.cacheDir, remoteSpec(s, bin, name, lim))
	}
	c := known
	if c == nil {
		key := s.Sum
		if key == ([sha256.Size]byte{}) {
			key = sha256.Sum256(bin)
		}
		// Compiling is bounded too, by the run's timeout but never less
		// than minCompile (a large module compiles for seconds, and a run
		// given up while compiling leaves nothing in the disk cache for
		// the next process); then the run gets its whole timeout.
		cctx, stop := ctx, context.CancelFunc(func() {})
		bound := max(lim.Timeout, e.minCompile)
		if lim.Timeout > 0 {
			cctx, stop = context.WithTimeout(ctx, bound)
		}
		var err error
		c, err = e.compile(cctx, key, bin, fk, compileNotice(ctx, name))
		stop()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			out := job.NewCapture(lim.Output, s.Streams, nil)
			out.Start = start
			return out.Fill(job.Stopped(job.Timeout, lim, "compiling the module took longer than "+bound.String(), false)), nil
		}
		if err != nil {
			return nil, err
		}
		defer func() {
			if !left {
				e.release(c)
			}
		}()
	}
	mod := c.mod
	// One writer at a time: the run holds its writable mounts' locks to its
	// end (kept to the process's exit when the guest is left running).
	lk, early, err := mountlock.Begin(ctx, s.Mounts, lim, start)
	if lk == nil {
		return early, err
	}
	defer func() {
		if left {
			lk.Keep()
		} else {
			res, err = lk.End(res, err)
		}
	}()

	// The run's lifecycle is the Supervisor's; the stops cancel the
	// context the guest runs on, which is the kill (wazero's interrupt
	// checks; in a one-shot run, which has none, the guest is left).
	mem := &allocator{limit: uint64(lim.Memory)}
	var (
		cfg     wazero.ModuleConfig
		closeFS = func() {}
		u       *uncheckedRun
		instCtx context.Context
	)
	defer func() {
		if !left {
			closeFS()
		}
	}()
	sup := &job.Supervisor{Limits: lim, Streams: s.Streams, Begin: start}
	sup.Start = func(runCtx context.Context, out *job.Capture) error {
		for _, m := range mod.ExportedMemories() {
			if need := int64(m.Min()) * 65536; need > lim.Memory {
				sup.Stop(job.Memory, fmt.Sprintf("the module needs %d bytes of memory at start, over the limit of %d", need, lim.Memory))
				return errNotStarted
			}
		}
		var err error
		run := rootfs.NewRun()
		if cfg, closeFS, err = e.moduleConfig(runCtx, s, name, run); err != nil {
			closeFS = func() {}
			return err
		}
		if e.oneShot != nil {
			u = enterUnchecked(func() { sup.Stop(job.Memory, hostMemoryDetail) })
			cfg = cfg.WithStdout(pointWriter{u, out.Stdout}).WithStderr(pointWriter{u, out.Stderr}).
				WithStdin(pointReader{u, remote.Stdin(runCtx, s.Streams.Stdin)})
			if !s.Deterministic {
				cfg = cfg.WithNanosleep(func(ns int64) { u.point(); nanosleep(runCtx, ns) })
			}
		} else {
			cfg = cfg.WithStdout(out.Stdout).WithStderr(out.Stderr)
		}
		instCtx = experimental.WithMemoryAllocator(rootfs.WithRun(runCtx, run), mem)
		return nil
	}
	sup.Wait = func() (job.Status, error) {
		err := instantiate(instCtx, e.runtimeMade(), mod, cfg)
		if u != nil {
			u.leave(false)
		}
		mem.done()
		return e.exitStatus(err, mem, lim)
	}
	if e.oneShot != nil {
		// Nothing stops compiled code without interrupt checks: a stopped
		// guest is left running at once (see WithOneShot).
		sup.KillGrace = -1
		sup.Abandon = func(r job.Result) {
			left = true
			e.abandon(u, r)
		}
	}
	return sup.Run(ctx)
}

// errNotStarted is what Start returns when it stopped the run itself.
var errNotStarted = errors.New("wasm: the run was stopped before the guest started")

// cacheSubdir is the directory, under the disk cache, of the code compiled
// with interrupt checks (or without).
func cacheSubdir(interrupt bool) string {
	if interrupt {
		return "checked"
	}
	return "unchecked"
}

// instantiate runs the module; a panic inside wazero becomes an error.
func instantiate(ctx context.Context, rt wazero.Runtime, mod wazero.CompiledModule, cfg wazero.ModuleConfig) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wazero panic: %v", p)
		}
	}()
	m, err := rt.InstantiateModule(ctx, mod, cfg)
	if m != nil {
		_ = m.Close(context.WithoutCancel(ctx))
	}
	return err
}

// exitStatus is how a guest that returned with err ended by itself: its
// exit code, Memory when it was refused memory and failed, a trap, or the
// error of a module that could not run (or of a closed Executor).
func (e *Executor) exitStatus(err error, mem *allocator, lim job.Limits) (job.Status, error) {
	var exit *sys.ExitError
	switch {
	case err == nil:
		return job.Status{}, nil
	case mem.denied.Load():
		return job.Status{Reason: job.Memory, Code: job.KilledExitCode, Detail: fmt.Sprintf("memory limit of %d bytes reached", lim.Memory)}, nil
	case errors.As(err, &exit):
		return job.Status{Code: int(exit.ExitCode())}, nil
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return job.Status{}, fmt.Errorf("wasm: run: %w", ErrClosed)
	}
	msg := err.Error()
	if strings.Contains(msg, "wasm error:") || strings.HasSuffix(msg, "failed: stack overflow") {
		return job.Status{Code: TrapExit, Detail: trapDetail(msg)}, nil
	}
	return job.Status{}, fmt.Errorf("wasm: instantiate: %v: %w", err, ErrInvalidModule)
}

// trapDetail turns wazero's trap error ("wasm error: unreachable\nwasm
// stack trace:\n\tmod.fn()\n...") into "trap: unreachable in fn", and its
// stack overflow ("module[] function[fn] failed: stack overflow") into
// "trap: stack overflow in function fn" (the function called first: wazero
// names no other).
func trapDetail(msg string) string {
	if before, ok := strings.CutSuffix(msg, " failed: stack overflow"); ok {
		if i := strings.LastIndex(before, "function["); i >= 0 && strings.HasSuffix(before, "]") {
			return "trap: stack overflow in function " + before[i+len("function["):len(before)-1]
		}
		return "trap: stack overflow"
	}
	lines := strings.Split(msg, "\n")
	what := strings.TrimSpace(strings.TrimPrefix(lines[0], "wasm error:"))
	if i := strings.Index(lines[0], "wasm error:"); i >= 0 {
		what = strings.TrimSpace(lines[0][i+len("wasm error:"):])
	}
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "wasm stack trace:") && i+1 < len(lines) {
			fn := strings.TrimSpace(lines[i+1])
			if j := strings.Index(fn, "("); j > 0 {
				fn = fn[:j]
			}
			if j := strings.Index(fn, "."); j >= 0 {
				fn = fn[j+1:]
			}
			return "trap: " + what + " in function " + fn
		}
	}
	return "trap: " + what
}

func (e *Executor) compileNow(ctx context.Context, bin []byte) (wazero.CompiledModule, error) {
	guarded, err := wasmbin.Guard(bin)
	if err != nil {
		return nil, err
	}
	rt, err := e.wazero(ctx)
	if err != nil {
		return nil, err
	}
	mod, err := rt.CompileModule(ctx, wasmbin.Pack(guarded))
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "EOF") || strings.Contains(msg, "unexpected end") {
			return nil, fmt.Errorf("wasm: compile: %v: %w", err, ErrTruncated)
		}
		return nil, fmt.Errorf("wasm: compile: %v: %w", err, ErrInvalidModule)
	}
	if _, ok := mod.ExportedFunctions()["_start"]; !ok {
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("wasm: compile: %w", ErrMissingStart)
	}
	return mod, nil
}

// nanosleep is the guest's sleep: ns, or until the run is stopped.
func nanosleep(runCtx context.Context, ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-runCtx.Done():
	}
}

// moduleConfig builds the guest's whole world: argv, env, mounts, stdin,
// clocks and randomness. The mounts' file systems share run, the run's
// state its WASI calls keep too (rootfs.WithRun). The returned func closes
// the mounts.
func (e *Executor) moduleConfig(runCtx context.Context, s Spec, name string, run *rootfs.Run) (wazero.ModuleConfig, func(), error) {
	cfg := wazero.NewModuleConfig().WithName("")
	for _, a := range s.Args {
		if a == "" || strings.IndexByte(a, 0) >= 0 {
			return nil, nil, fmt.Errorf("wasm: argument %q: empty or with NUL: %w", a, ErrInvalidSpec)
		}
	}
	cfg = cfg.WithArgs(append([]string{name}, s.Args...)...)
	for _, kv := range s.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return nil, nil, fmt.Errorf("wasm: env entry %q: want KEY=value: %w", kv, ErrInvalidSpec)
		}
		cfg = cfg.WithEnv(k, v)
	}
	// Deterministic runs keep wazero's defaults: a fake clock, no-op
	// sleeps, a seeded random source.
	if !s.Deterministic {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader).
			WithNanosleep(func(ns int64) { nanosleep(runCtx, ns) })
	}
	cfg = cfg.WithStdin(remote.Stdin(runCtx, s.Streams.Stdin))

	var roots []*os.Root
	var closers []io.Closer // the mounts' file systems that hold descriptors
	closeAll := func() {
		for _, c := range closers {
			_ = c.Close()
		}
		for _, r := range roots {
			_ = r.Close()
		}
	}
	if err := checkOverlap(s.Mounts); err != nil {
		return nil, nil, err
	}
	fsc := wazero.NewFSConfig()
	seen := map[string]bool{}
	for _, m := range s.Mounts {
		g := m.Guest
		if !path.IsAbs(g) {
			closeAll()
			return nil, nil, fmt.Errorf("wasm: mount %s: guest path not absolute: %w", m, ErrInvalidSpec)
		}
		g = path.Clean(g)
		if seen[g] {
			closeAll()
			return nil, nil, fmt.Errorf("wasm: mount %s: guest path mounted twice: %w", m, ErrInvalidSpec)
		}
		seen[g] = true
		if err := e.checkMountHost(m.Host); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("wasm: mount %s: %w", m, err)
		}
		r, err := os.OpenRoot(m.Host)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("wasm: mount %s: %v: %w", m, err, ErrInvalidSpec)
		}
		roots = append(roots, r)
		mfs, err := e.mountFS(r, m, run)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("wasm: mount %s: %w", m, err)
		}
		if c, ok := mfs.(io.Closer); ok {
			closers = append(closers, c)
		}
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(mfs, g)
	}
	return cfg.WithFSConfig(fsc), closeAll, nil
}

// confined is the file system of a mount: the host directory through
// os.Root, with a writable mount's protected paths guarded.
func confined(r *os.Root, m job.Mount, run *rootfs.Run) (esys.FS, error) {
	fs, err := rootfs.New(r, m, run)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrInvalidSpec)
	}
	return fs, nil
}

// checkOverlap refuses a read-only mount whose host directory is inside a
// writable one (or is the same): through the writable one the guest could
// change what was declared read-only.
func checkOverlap(mounts []job.Mount) error {
	real := make([]string, len(mounts))
	for i, m := range mounts {
		r, err := filepath.EvalSymlinks(m.Host)
		if err != nil {
			return fmt.Errorf("wasm: mount %s: %v: %w", m, err, ErrInvalidSpec)
		}
		real[i] = r
	}
	for i, ro := range mounts {
		for j, rw := range mounts {
			if !ro.Writable && rw.Writable && within(real[i], real[j]) {
				return fmt.Errorf("wasm: read-only mount %s lies inside writable mount %s: %w", ro, rw, ErrInvalidSpec)
			}
		}
	}
	return nil
}

// checkMountHost refuses a host directory that is not a directory or that
// overlaps the compilation cache (which holds native code the host runs).
func (e *Executor) checkMountHost(host string) error {
	real, err := filepath.EvalSymlinks(host)
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrInvalidSpec)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return fmt.Errorf("host path is not a directory: %w", ErrInvalidSpec)
	}
	if e.cacheDir != "" && (within(real, e.cacheDir) || within(e.cacheDir, real)) {
		return fmt.Errorf("host path overlaps the compilation cache %s: %w", e.cacheDir, ErrInvalidSpec)
	}
	return nil
}

// within reports whether p is dir or inside it (both absolute, clean).
func within(p, dir string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

// allocator backs each run's linear memory with a Go slice that never
// grows past limit: memory.grow beyond it fails (and is remembered, so the
// run ends with Reason Memory), whatever maximum the module declares.
type allocator struct {
	limit  uint64
	denied atomic.Bool

	mu      sync.Mutex
	release []func() // run once the guest has returned
}

// done releases what the run's memories hold. Call it only once the guest
// has returned.
func (a *allocator) done() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range a.release {
		f()
	}
	a.release = nil
}

func (a *allocator) Allocate(_, _ uint64) experimental.LinearMemory {
	if m := mmapMemory(a); m != nil {
		return m
	}
	return &linearMemory{a: a}
}

// linearMemory is the portable LinearMemory: a Go slice, copied as it grows.
type linearMemory struct {
	a   *allocator
	buf []byte
}

func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.a.limit {
		m.a.denied.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size] // never used before: still zero
		return m.buf
	}
	c := max(size, min(2*uint64(cap(m.buf)), m.a.limit))
	b := make([]byte, size, c)
	copy(b, m.buf)
	m.buf = b
	return b
}

func (m *linearMemory) Free() { m.buf = nil }
