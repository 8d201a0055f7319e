//go:build !unix

package capabilities

import "os"

const openFlags = os.O_RDONLY
