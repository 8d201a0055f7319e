// Package engines gives a ccrun.Runtime the engines ccrun ships besides
// @shell's: @wasm, modules run in wazero (runtime/wasm), and @docker,
// hardened containers on the local Docker Engine (runtime/docker) or on
// Kubernetes (runtime/kube). They are backends added through the root's
// one seam, ccrun.WithBackend, so the root package links none of them,
// and a program that runs @shell alone pays nothing for their libraries
// at start (Go runs every linked package's init before main):
//
//	rt, err := ccrun.New(append([]ccrun.Option{ccrun.WithProjectDir(dir)}, engines.All()...)...)
//
// The environments keep what ccrun gives them whatever backend runs them:
// their ceiling (a grant for the project at most), their manifests, keys
// and prompt. A Runtime given no engine of @wasm or @docker refuses their
// calls before the gate, saying which option adds it.
//
// The options and what they return are safe for concurrent use; each
// Runtime makes its own backends from them on first use.
package engines

import (
	"context"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend/dockerenv"
	"github.com/ccrun/ccrun/internal/backend/wasmenv"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// Option configures the engines that All, Wasm and Docker add. Each
// engine takes the options of its own and ignores the others'.
type Option func(*config) error

// config is what the options said.
type config struct {
	wasm   []wasm.Option
	docker []docker.Option
	choice *choice // WithDockerEngine; nil: the settings files choose
}

func newConfig(opts []Option) (*config, error) {
	c := &config{}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WithWasmOptions passes options to the @wasm executor (runtime/wasm.New),
// after those of the environment (runtime/wasm.ServerFromEnv:
// CCRUN_WASM_SERVER=1 opts in to the warm server). Default: none, so a
// guest runs in the calling process, its compiled modules cached in the
// user's cache directory.
func WithWasmOptions(opts ...wasm.Option) Option {
	return func(c *config) error { c.wasm = append(c.wasm, opts...); return nil }
}

// WithDockerOptions passes options to the local Docker Engine's executor
// (runtime/docker.New), used when @docker runs there (EngineDocker).
// Default: none (DOCKER_HOST, else the local socket; no warm pool refill
// in a process of its own; no pull progress shown).
func WithDockerOptions(opts ...docker.Option) Option {
	return func(c *config) error { c.docker = append(c.docker, opts...); return nil }
}

// DockerOptions are a @docker call's options, for ccrun.Call.Options:
// its network ("" or "none": only loopback; "bridge" or "host", which
// loosen the sandbox: shown, audited, decided as a network call, and
// covered by a grant only with that network) and its pull policy ("" or
// "missing", "never", "always"). They hold on either engine (the local
// Docker Engine, Kubernetes: bridge at most). Given to a call of another
// environment, they are refused before anyone is asked:
//
//	rt.Exec(ctx, &ccrun.Call{Image: "busybox:1.36", Args: []string{"wget", "-qO-", "example.org"},
//		Options: engines.DockerOptions{Network: "bridge"}})
type DockerOptions = dockerenv.Options

// Wasm is the @wasm environment's engine, wazero, as a Runtime option:
// the backend that checks, keys and binds a module (by its bytes) and runs
// it, made on the Runtime's first @wasm call. It takes the options of
// WithWasmOptions.
func Wasm(opts ...Option) ccrun.Option {
	return func(r *ccrun.Runtime) error {
		c, err := newConfig(opts)
		if err != nil {
			return err
		}
		return ccrun.WithBackend(ceiling.Wasm, ceiling.AlwaysThisProject, func(context.Context) (*wasmenv.Backend, error) {
			return wasmenv.New(c.wasm...), nil
		})(r)
	}
}

// Docker is the @docker environment's engine as a Runtime option: the
// backend that binds a grant to the image's ID and runs hardened
// containers, made on the Runtime's first @docker call, on the engine
// WithDockerEngine chose, else the one the settings files the Runtime
// read choose (DockerEngine), else the local Docker Engine. It takes the
// options of WithDockerOptions and WithDockerEngine.
func Docker(opts ...Option) ccrun.Option {
	return func(r *ccrun.Runtime) error {
		c, err := newConfig(opts)
		if err != nil {
			return err
		}
		return ccrun.WithBackend(ceiling.Docker, ceiling.AlwaysThisProject, func(context.Context) (*dockerenv.Backend, error) {
			return dockerenv.New(func(ctx context.Context) (dockerenv.Engine, error) { return c.start(ctx, r) }), nil
		})(r)
	}
}

// All is every engine ccrun ships, @wasm's and @docker's, each with the
// options of its own: append(opts, engines.All()...) for ccrun.New.
func All(opts ...Option) []ccrun.Option {
	return []ccrun.Option{Wasm(opts...), Docker(opts...)}
}
