//go:build !linux

package wasm

import (
	"os"

	esys "github.com/tetratelabs/wazero/experimental/sys"
)

// setAppend is not implemented outside Linux.
func setAppend(*os.File, bool) esys.Errno { return esys.ENOSYS }

// futimens is not implemented outside Linux.
func futimens(*os.File, int64, int64) esys.Errno { return esys.ENOSYS }

// fileKey is not implemented outside Linux: modules given by path are
// read and hashed on every run.
func fileKey(string) string { return "" }

// flock is not implemented outside Linux: guests sharing a mount are not
// serialized.
func flock(*os.File) func() { return func() {} }
