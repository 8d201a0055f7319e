//go:build !ccrunfront

package ccrun

import (
	"context"

	"github.com/ccrun/ccrun/runtime/wasm"
)

// WithCompileProgress returns a context whose @wasm calls tell f when they
// wait for their module to compile: compiling true when the wait begins,
// false when it ends. module is the module's name (argv[0]). A large
// module's first compilation takes seconds, later runs find it compiled
// and are not told; the CLI's status line says "compiling MODULE" from
// it. f runs on the call's goroutine and must not block. Calls that run
// in a worker process or the warm server compile there, untold.
func WithCompileProgress(ctx context.Context, f func(module string, compiling bool)) context.Context {
	return wasm.WithCompileFunc(ctx, f)
}
