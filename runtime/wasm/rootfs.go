package wasm

import (
	"sync/atomic"

	"github.com/ccrun/ccrun/runtime/wasm/internal/rootfs"
)

// The confined file system of the mounts is internal/rootfs's.

// maxOpen is the most files one run may hold open, all its mounts
// together.
const maxOpen = rootfs.MaxOpen

// openBudget counts a run's open files, for rootfs.New.
type openBudget struct{ n atomic.Int64 }
