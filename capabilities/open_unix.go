//go:build unix

package capabilities

import (
	"os"
	"syscall"
)

// openFlags opens files to read without blocking on a FIFO put in place of
// a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
