package wasm

import "context"

// CompileFunc is told about a run that waits for its module to compile:
// compiling true when the wait begins, false when it ends (compiled,
// failed, or given up). module is the run's Spec.Name (argv[0]). A large
// module's first compilation takes seconds; later runs find it compiled
// (in memory, or in the cache directory) and are not told.
type CompileFunc func(module string, compiling bool)

type compileKey struct{}

// WithCompileFunc returns a context whose runs tell f when they wait for
// a compilation, so that a caller can say why nothing seems to happen (the
// CLI's status line says "compiling MODULE"). f is called on the run's
// goroutine and must not block. A run in a worker process or the warm
// server (WithWorker, WithServer) compiles there, and is not told.
func WithCompileFunc(ctx context.Context, f CompileFunc) context.Context {
	return context.WithValue(ctx, compileKey{}, f)
}

// compileNotice returns what tells ctx's CompileFunc about module, or a
// func that does nothing.
func compileNotice(ctx context.Context, module string) func(compiling bool) {
	f, _ := ctx.Value(compileKey{}).(CompileFunc)
	if f == nil {
		return func(bool) {}
	}
	return func(compiling bool) { f(module, compiling) }
}
