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
