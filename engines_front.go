//go:build ccrunfront

package ccrun

import (
	"context"
	"fmt"

	"github.com/ccrun/ccrun/ceiling"
)

// ErrFront is the error of a call the front build cannot run: it links the
// gate and @shell alone (engines.go). cmd/ccrun's front hands such a
// command to the whole ccrun before anything is decided, so that a person
// never meets this error; it is the guard behind that choice.
var ErrFront = fmt.Errorf("this ccrun is the front build (the gate and @shell only): %w", ErrInvalidCall)

// engines is empty in the front build.
type engines struct{}

// engineBackends returns makers of @wasm and @docker backends that refuse.
func (r *Runtime) engineBackends() map[ceiling.Environment]func(context.Context) (Backend, error) {
	refuse := func(env ceiling.Environment) func(context.Context) (Backend, error) {
		return func(context.Context) (Backend, error) { return nil, fmt.Errorf("%s: %w", env, ErrFront) }
	}
	return map[ceiling.Environment]func(context.Context) (Backend, error){
		ceiling.Wasm:   refuse(ceiling.Wasm),
		ceiling.Docker: refuse(ceiling.Docker),
	}
}
