package ccrun

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/internal/backend/shellenv"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// Backend prepares the calls of one environment for the gate and runs
// them. The built-in @shell backend, and the @wasm and @docker ones of
// package engines, are Backends registered as a Go program's own are
// (WithBackend), and a Runtime starts each on first use.
//
// Prepare is given the call validated (its environment variables, input
// and mounts; for a capability, its manifest and input checked) and says
// what the person is shown, what a grant covers (the key) and binds it to
// (the digest of the content that runs), and what the call loosens; it
// may set inv's Args, Dir and Plan. It runs before
// the gate, so it must not have side effects; it refuses a call it cannot
// run with an error of class ErrInvalidCall or ErrNotFound. Run runs inv
// once the gate allowed it; an error means the call could not run at
// all, and a program's own failure is a Result. Both must be safe for
// concurrent use.
//
// Run is supervised (runtime/job's Supervisor): it is given a context
// that ends at the call's timeout (Limits.Timeout, default 10 minutes),
// when the caller cancels, or when what it writes to inv.Streams passes
// the output cap (Limits.Output, default 4 MiB per stream); the result
// then says Timeout, Cancelled or OutputCap whatever Run returned, and its
// output is what Run wrote to inv.Streams. A Run that has not returned 5
// seconds after it was stopped is left behind, its output cut off, and
// the call ends. A Backend whose Run enforces the limits itself (the
// built-in ones) says so with a method EnforcesLimits() bool returning
// true.
//
// A Backend may also be a Binder, a Scaffolder, and an io.Closer (Close
// releases it with the Runtime).
type Backend interface {
	Prepare(ctx context.Context, inv *Invocation) (*Prepared, error)
	Run(ctx context.Context, inv *Invocation) (*job.Result, error)
}

// Binder is a Backend whose binding of a grant to content needs work that
// a refusal makes needless, such as looking an image up. Bind runs after
// Prepare and before the gate asks anyone, only for a call the gate does
// not refuse outright; it rewrites p.Digest (and may add to p.Display) and
// inv.Plan. It binds to what is on this machine and must send nothing off
// it (no pull, no registry lookup, no DNS query): a call nobody allowed yet
// reaches nowhere. When what runs must be fetched first, Bind says so in
// p.Fetch (and from where) and leaves the digest unbound; Fetch then runs
// once the call is allowed — after the person said yes, before the grant
// is kept — fetches it and binds p to what arrived, so that the grant is
// bound to the content that runs. An error of Bind or Fetch fails the
// call (Check notes Bind's and decides without the binding).
type Binder interface {
	Bind(ctx context.Context, inv *Invocation, p *Prepared) error
	Fetch(ctx context.Context, inv *Invocation, p *Prepared) error
}

// Scaffolder is a Backend of a new environment (WithBackend) that says
// what a new capability of it is, for Runtime.Scaffold (`ccrun capability
// new NAME --env ENV`): the entry's target and args and the files beside
// capability.json, which must load and run as written.
type Scaffolder interface {
	Scaffold(name string) capabilities.Template
}

// Scaffold writes a new capability called name of environment env into
// the project and returns its directory: capabilities.Scaffold's for a
// built-in environment, and for one of WithBackend what its backend says
// (a Scaffolder; capabilities.ScaffoldTarget). An environment r does not
// run, and a backend that is no Scaffolder, are errors of class
// ErrInvalidArgument.
func (r *Runtime) Scaffold(ctx context.Context, name string, env ceiling.Environment) (string, error) {
	if err := r.Environments().Require(env); err != nil {
		return "", fmt.Errorf("capability %s: %w", name, err)
	}
	if env.Builtin() {
		return capabilities.Scaffold(r.dir, name, env)
	}
	b, err := r.backend(ctx, env)
	if err != nil {
		return "", err
	}
	s, ok := b.(Scaffolder)
	if !ok {
		return "", fmt.Errorf("capability %s: the %s backend writes no scaffold (it is no Scaffolder); write its capability.json by hand (entry: target, args): %w", name, env, ErrInvalidArgument)
	}
	return capabilities.ScaffoldTarget(r.dir, name, env, s.Scaffold(name))
}

// Invocation is one call as its backend sees it: what runs, where, with
// what (see internal/backend.Invocation for its fields).
type Invocation = backend.Invocation

// Prepared is what a backend tells the gate and the person asked about a
// call (see internal/backend.Prepared).
type Prepared = backend.Prepared

// ContentDigest binds an ad-hoc grant to what runs (the content, or its
// sha256), what it may reach, and the arguments and environment it is
// given, for a Backend's Prepared.Digest. It is the one the built-in
// backends bind with: a Backend of a Go program's own uses it so that its
// grants are bound as theirs are (a digest of the content alone would let
// a grant cover any mounts, network, arguments and environment).
func ContentDigest(content []byte, mounts []job.Mount, network string, args, env []string) string {
	return backend.ContentDigest(content, mounts, network, args, env)
}

// WithBackend registers the backend mk makes for environment env, started
// on the first call of env: the one way to add or replace an environment.
// For @shell, @wasm or @docker it gives that environment its engine (the
// @shell one New has, or those of package engines, replaced) which keeps
// the environment's ceiling, manifests and prompt (the Go program that
// registers it vouches that it confines as the environment does). Any
// other env is a new environment of this Runtime alone (Environments):
// reached by Call.Environment and Call.Target, and by the capabilities
// whose manifest names it (entry {"target", "args"}: Invocation.Target
// and the head of Invocation.Args, with Invocation.Capability set), whose
// tools may be granted at most ceilingOf (Once or AlwaysThisSession; a
// sandbox's AlwaysThisProject belongs to @wasm and @docker:
// ceiling.Set.With). The key of an ad-hoc call of a new environment @NAME
// names the tool run_NAME (Prepared.Key), so that a grant names its
// environment. ceilingOf is ignored for a built-in environment. Registering env again in one Runtime replaces its
// backend and must keep its ceiling. Default: @shell's backend only (no
// engine of @wasm or @docker: package engines adds them); a call of an
// environment this Runtime has no backend for is refused before the gate,
// naming the environments it has a backend for and how to add one.
func WithBackend[B Backend](env ceiling.Environment, ceilingOf ceiling.Grant, mk func(context.Context) (B, error)) Option {
	return func(r *Runtime) error {
		if mk == nil {
			return fmt.Errorf("backend for %s: no constructor: %w", env, ErrInvalidCall)
		}
		if !env.Builtin() {
			if adHocTool(env) == keys.ShellTool {
				// its keys would be @shell's
				return fmt.Errorf("backend: environment %s: its tool would be %s, @shell's: %w", env, keys.ShellTool, ErrInvalidCall)
			}
			envs, err := r.gate.Environments.With(env, ceilingOf)
			if err != nil {
				return fmt.Errorf("backend: %w", err)
			}
			r.gate.Environments = envs
		}
		r.makers[env] = func(ctx context.Context) (Backend, error) {
			b, err := mk(ctx)
			if err != nil || isNil(b) {
				return nil, err
			}
			return b, nil
		}
		return nil
	}
}

// isNil reports whether b is nil, or a nil pointer, map, slice, func or
// channel in an interface.
func isNil(b any) bool {
	if b == nil {
		return true
	}
	switch v := reflect.ValueOf(b); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Environments are the environments r runs calls of, each with its
// ceiling: the built-in ones and those of WithBackend. Another Runtime of
// the process has its own: an environment registered there is not here.
func (r *Runtime) Environments() ceiling.Set { return r.gate.Environments }

// adHocTool is the tool an ad-hoc call of a new environment @NAME is keyed
// under: run_NAME (WithBackend).
func adHocTool(env ceiling.Environment) string { return "run_" + strings.TrimPrefix(string(env), "@") }

// checkKey refuses the key of an ad-hoc call of a new environment that
// does not name that environment's tool (adHocTool): a grant of one
// environment never covers a call of another.
func checkKey(env ceiling.Environment, k keys.Key) error {
	if env.Builtin() || k.Tool == adHocTool(env) {
		return nil
	}
	return fmt.Errorf("call: %s: the backend's key %s names the tool %s; a key of %s names %s: %w", env, k, k.Tool, env, adHocTool(env), ErrInvalidCall)
}

// builtinBackends registers the built-in backend of @shell unless a
// WithBackend option took it. It is made on first use, with the
// Runtime's configuration as it then is (env.pass of a trusted project).
// @wasm and @docker have none built in: their engines link libraries
// (wazero, the Docker and Kubernetes clients) that a program running
// @shell alone should not pay for at start, so package engines adds them.
func (r *Runtime) builtinBackends() {
	if _, ok := r.makers[ceiling.Shell]; !ok {
		r.makers[ceiling.Shell] = func(context.Context) (Backend, error) { return shellenv.New(r.envPass...) }
	}
}

// backend returns the backend of env, making it on first use. An
// environment r does not know is ceiling.ErrUnknownEnvironment's error,
// listing those it has; one it knows but has no backend for (@wasm or
// @docker without package engines) is noBackend's.
func (r *Runtime) backend(ctx context.Context, env ceiling.Environment) (Backend, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.backends[env]; ok {
		return b, nil
	}
	mk, ok := r.makers[env]
	if !ok {
		if err := r.gate.Environments.Require(env); err != nil {
			return nil, fmt.Errorf("call: %w", err)
		}
		return nil, r.noBackend(r.gate.Environments, env)
	}
	b, err := mk(ctx)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("%s: the backend's constructor returned none: %w", env, ErrUnavailable)
	}
	r.backends[env] = b
	if c, ok := b.(interface{ Close() error }); ok {
		r.closers = append(r.closers, c.Close)
	}
	return b, nil
}

// noBackend is the error of a call of env, an environment r knows (its
// ceiling, its manifests) but has no backend for: it names env, the
// environments r has a backend for, and the option that adds env's. The
// root cannot add it itself: it links no engine.
func (r *shared) noBackend(envs ceiling.Set, env ceiling.Environment) error {
	var have []string
	for _, e := range envs.List() {
		if r.runs(e) {
			have = append(have, string(e))
		}
	}
	add := "ccrun.WithBackend"
	switch env {
	case ceiling.Wasm:
		add = "engines.Wasm (or engines.All) of package github.com/ccrun/ccrun/engines"
	case ceiling.Docker:
		add = "engines.Docker (or engines.All) of package github.com/ccrun/ccrun/engines"
	}
	return fmt.Errorf("call: %s: this Runtime has no backend for it (it has one for %s): give ccrun.New %s: %w",
		env, strings.Join(have, ", "), add, ErrUnavailable)
}

// runs reports whether r has a backend for env, started or not. The
// makers are fixed once New returned, so no lock is needed.
func (r *shared) runs(env ceiling.Environment) bool {
	_, ok := r.makers[env]
	return ok
}

// limitEnforcer is a Backend whose Run enforces the call's limits itself.
type limitEnforcer interface{ EnforcesLimits() bool }

// abandonAfter is how long a supervised Run may take to return once it
// was stopped.
const abandonAfter = 5 * time.Second

// supervise runs inv on b under runtime/job's Supervisor, the lifecycle
// every executor shares, unless b enforces the limits itself: Run's
// context ends at the timeout, the caller's cancel or the output cap
// (what Run writes to inv.Streams is captured and capped), and the
// Supervisor says how the run ended, whatever Run claimed.
func supervise(ctx context.Context, b Backend, inv *Invocation) (*job.Result, error) {
	if le, ok := b.(limitEnforcer); ok && le.EnforcesLimits() {
		return b.Run(ctx, inv)
	}
	type ran struct {
		res *job.Result
		err error
	}
	done := make(chan ran, 1)
	var stdout, stderr cutWriter
	s := &job.Supervisor{Limits: inv.Limits.WithDefaults(), Streams: inv.Streams, KillGrace: abandonAfter}
	s.Start = func(ctx context.Context, out *job.Capture) error {
		stdout.w, stderr.w = out.Stdout, out.Stderr
		own := *inv
		own.Streams.Stdout, own.Streams.Stderr = &stdout, &stderr
		go func() {
			res, err := b.Run(ctx, &own)
			done <- ran{res, err}
		}()
		return nil
	}
	s.Wait = func() (job.Status, error) {
		r := <-done
		switch {
		case r.err != nil:
			return job.Status{}, r.err
		case r.res == nil:
			return job.Status{}, fmt.Errorf("%s: the backend returned no result: %w", inv.Environment, ErrUnavailable)
		}
		st := job.Status{Code: r.res.ExitCode, Detail: r.res.Detail, Truncated: r.res.Truncated}
		if r.res.Reason == job.Memory || r.res.Reason == job.Refused {
			st.Reason = r.res.Reason
		}
		return st, nil
	}
	s.Abandon = func(job.Result) {
		// the run goes on: nothing it writes reaches the call any more
		stdout.cut()
		stderr.cut()
	}
	return s.Run(ctx)
}

// cutWriter passes writes on until cut, then drops them.
type cutWriter struct {
	mu   sync.Mutex
	w    io.Writer
	gone bool
}

func (c *cutWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone || c.w == nil {
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *cutWriter) cut() {
	c.mu.Lock()
	c.gone = true
	c.mu.Unlock()
}
