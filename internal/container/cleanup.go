package container

import "context"

// Cleanup is a stack of undo steps for a half-built sandbox, released
// last first (by Release, on a context the caller's cancellation cannot
// cut short).
type Cleanup []func(context.Context)

// Push adds f to the top of the stack.
func (c *Cleanup) Push(f func(context.Context)) { *c = append(*c, f) }

// Release runs the steps, last pushed first.
func (c Cleanup) Release(ctx context.Context) {
	for i := len(c) - 1; i >= 0; i-- {
		c[i](ctx)
	}
}
