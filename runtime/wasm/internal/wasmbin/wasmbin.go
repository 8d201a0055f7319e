// Package wasmbin reads and rewrites a WebAssembly module's bytes before
// wazero decodes them: the header check (Header), the guard against
// declared counts that wazero would turn into host memory before any
// limit applies (Guard), and the joining of a module's data segments
// (Pack). It runs nothing and is safe for concurrent use.
package wasmbin

import (
	"bytes"
	"fmt"

	"github.com/containerd/errdefs"
)

// Error classes of a module's bytes. runtime/wasm re-exports them with
// the rest of its classes; test them with errors.Is.
var (
	// ErrNotWasm: the bytes are not a WebAssembly binary module.
	ErrNotWasm = errdefs.ErrInvalidArgument.WithMessage("not a wasm module")
	// ErrTruncated: the module ends before its sections do.
	ErrTruncated = errdefs.ErrInvalidArgument.WithMessage("truncated wasm module")
	// ErrInvalidModule: the module does not decode, validate or link (an
	// import that is neither WASI preview 1 nor satisfied, for example).
	ErrInvalidModule = errdefs.ErrInvalidArgument.WithMessage("invalid wasm module")
)

var magic = []byte("\x00asm")

// Header sorts out what is not a wasm binary before wazero looks.
func Header(bin []byte) error {
	n := min(len(bin), 4)
	if !bytes.Equal(bin[:n], magic[:n]) {
		return fmt.Errorf("wasm: %w: no \\0asm magic number", ErrNotWasm)
	}
	if len(bin) < 8 {
		return fmt.Errorf("wasm: %w: %d bytes", ErrTruncated, len(bin))
	}
	if !bytes.Equal(bin[4:8], []byte{1, 0, 0, 0}) {
		return fmt.Errorf("wasm: %w: binary version %x, want 1 (a core module, not a component)", ErrNotWasm, bin[4:8])
	}
	return nil
}
