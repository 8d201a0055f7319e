//go:build !linux

package wasm

import "github.com/tetratelabs/wazero/experimental"

// mmapMemory is only implemented on Linux; elsewhere memory is a Go slice.
func mmapMemory(*allocator) experimental.LinearMemory { return nil }
