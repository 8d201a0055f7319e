package rootfs

import (
	"context"
	"sync/atomic"
)

// Run is what one run (one module instance) shares between its mounts'
// file systems (New) and its WASI calls (WithRun): the files it holds
// open, counted against MaxOpen; its table of descriptors (files); and
// whether the WASI call under way asked not to follow a symbolic link at
// the end of its path (path_filestat_set_times without symlink_follow:
// see pathFilestatSetTimes). The zero Run is not ready: use NewRun.
//
// A run's WASI calls come one at a time (the guest is suspended during a
// host call, and ccrun does not enable threads); the table is locked all
// the same.
type Run struct {
	open     budget
	noFollow atomic.Bool
	files    files
}

// NewRun returns the state of a new run.
func NewRun() *Run {
	return &Run{files: files{sync: map[uint32]uint16{}, alias: map[uint32]uint32{}, moved: map[uint32]uint32{}}}
}

// WithRun returns a context for run's module instance: its WASI calls keep
// run's table of descriptors. Without one, the wrapped functions answer as
// they do on their own (no synchronization flags reported, no descriptor
// of wazero's preopens moved, a symbolic link followed by
// path_filestat_set_times as by wazero).
func WithRun(ctx context.Context, run *Run) context.Context {
	return context.WithValue(ctx, runKey{}, run)
}

type runKey struct{}

// runOf is the Run of ctx; nil when WithRun gave it none.
func runOf(ctx context.Context) *Run {
	r, _ := ctx.Value(runKey{}).(*Run)
	return r
}

// runFiles is the descriptor table of ctx's run; nil when there is none.
func runFiles(ctx context.Context) *files {
	if r := runOf(ctx); r != nil {
		return &r.files
	}
	return nil
}
