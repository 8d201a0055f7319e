package wasm

import "github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"

// CheckModule says whether bin can be run at all, so that it is refused
// before anyone is asked to approve it: it is a WebAssembly binary module
// (ErrNotWasm, ErrTruncated) that the guard accepts (ErrInvalidModule: see
// Run). It does not compile the module: what only compilation finds (a
// missing _start, a type error) is found by Run. It is safe for concurrent
// use.
func CheckModule(bin []byte) error {
	if err := wasmbin.Header(bin); err != nil {
		return err
	}
	_, err := wasmbin.Guard(bin)
	return err
}
