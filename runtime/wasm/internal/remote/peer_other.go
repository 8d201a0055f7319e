//go:build !linux

package remote

import (
	"fmt"
	"net"

	"github.com/ccrun/ccrun/internal/usersock"
)

// peerUID fails on this OS: ccrun does not ask this kernel who is at the
// other end of a unix socket, so the warm server and its clients refuse
// every peer (fail closed) and a run goes in process instead.
func peerUID(c *net.UnixConn) (int, error) {
	uid, err := usersock.PeerUID(c)
	if err != nil {
		return -1, fmt.Errorf("wasm server: %w", err)
	}
	return uid, nil
}

// killPeer does nothing on this OS: no server is ever used (peerUID).
func killPeer(*net.UnixConn) {}
