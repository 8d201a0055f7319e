//go:build !linux

package remote

import (
	"fmt"
	"net"
	"runtime"
)

// peerUID fails on this OS: ccrun does not ask this kernel who is at the
// other end of a unix socket, so the warm server and its clients refuse
// every peer (fail closed) and a run goes in process instead.
func peerUID(*net.UnixConn) (int, error) {
	return -1, fmt.Errorf("wasm server: no peer credentials on %s: %w", runtime.GOOS, ErrUnsafeSocket)
}

// killPeer does nothing on this OS: no server is ever used (peerUID).
func killPeer(*net.UnixConn) {}
