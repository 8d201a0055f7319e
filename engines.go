//go:build !ccrunfront

package ccrun

import (
	"context"
	"fmt"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend/dockerenv"
	"github.com/ccrun/ccrun/internal/backend/wasmenv"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// engines is the configuration of the @docker and @wasm engines. The
// front build (the ccrunfront tag, engines_front.go) has none: it links
// the gate and @shell alone, and hands every other command to the whole
// ccrun (cmd/ccrun, front.go).
type engines struct {
	docker []docker.Option
	kube   *kubeConfig // the @docker engine (kube.go)
	wasm   []wasm.Option
}

// WithDockerOptions passes options to the default @docker executor.
func WithDockerOptions(opts ...docker.Option) Option {
	return func(r *Runtime) error { r.engines.docker = append(r.engines.docker, opts...); return nil }
}

// WithWasmOptions passes options to the default @wasm executor.
func WithWasmOptions(opts ...wasm.Option) Option {
	return func(r *Runtime) error { r.engines.wasm = append(r.engines.wasm, opts...); return nil }
}

// engineBackends returns the makers of the built-in @wasm and @docker
// backends.
func (r *Runtime) engineBackends() map[ceiling.Environment]func(context.Context) (Backend, error) {
	return map[ceiling.Environment]func(context.Context) (Backend, error){
		ceiling.Wasm:   func(context.Context) (Backend, error) { return wasmenv.New(r.engines.wasm...), nil },
		ceiling.Docker: func(context.Context) (Backend, error) { return dockerenv.New(r.dockerStart), nil },
	}
}

// dockerStart starts the @docker engine WithDockerEngine or the settings
// files chose (kube.go).
func (r *Runtime) dockerStart(ctx context.Context) (dockerenv.Engine, error) {
	c, err := r.dockerEngine()
	if err != nil {
		return nil, fmt.Errorf("@docker: %w", err)
	}
	if c.engine == EngineKubernetes {
		return dockerenv.Kubernetes(ctx, c.opts...)
	}
	return dockerenv.Docker(ctx, r.engines.docker...)
}
