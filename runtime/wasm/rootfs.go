package wasm

import "github.com/ccrun/ccrun/runtime/wasm/internal/rootfs"

// The confined file system of the mounts is internal/rootfs's.

// maxOpen is the most files one run may hold open, all its mounts
// together.
const maxOpen = rootfs.MaxOpen
