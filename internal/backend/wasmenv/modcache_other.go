//go:build !linux

package wasmenv

import "os"

// sysID cannot tell a file's identity on this OS without its stat layout
// (no change time through os.FileInfo): every run reads and hashes the
// module again, which is correct and only slower.
func sysID(os.FileInfo) (fileID, bool) { return fileID{}, false }
