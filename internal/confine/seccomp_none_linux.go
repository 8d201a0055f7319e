//go:build linux && !amd64 && !arm64

package confine

import "golang.org/x/sys/unix"

// hasSeccomp says whether this architecture gets the seccomp filter: not
// this one (its syscall table is not listed), so UDP and unix sockets stay
// open to confined programs here.
const hasSeccomp = false

func buildFilter(network, writable bool) []unix.SockFilter { return nil }

// helperBin is empty: no confinement helper is built for this
// architecture, so nothing is confined here (Prepare reports
// ErrUnavailable).
var helperBin []byte
