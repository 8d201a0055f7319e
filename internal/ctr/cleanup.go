package ctr

import "context"

// Cleanup is a stack of undo steps for a sandbox, run last first by Run,
// deferred, on a context the caller's cancellation cannot cut short. It
// runs on success too (nothing disarms it): a step with nothing to undo
// once the run went well checks for that itself.
type Cleanup []func(context.Context)

// Push adds f to the top of the stack.
func (c *Cleanup) Push(f func(context.Context)) { *c = append(*c, f) }

// Run runs the steps, last pushed first.
func (c Cleanup) Run(ctx context.Context) {
	for i := len(c) - 1; i >= 0; i-- {
		c[i](ctx)
	}
}
