package remote

import (
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/internal/usersock"
)

// peerUID returns the uid of the process at the other end of c, from the
// kernel (SO_PEERCRED).
func peerUID(c *net.UnixConn) (int, error) { return usersock.PeerUID(c) }

// killPeer ends, with SIGKILL, the process of this uid at the other end
// of c (a warm server that does not answer), through a pidfd opened while
// c is still open, so that a pid the kernel gave again is never
// signalled. It does nothing when the peer is this process or another
// user's, or the kernel has no pidfds.
func killPeer(c *net.UnixConn) {
	cred, err := usersock.PeerCred(c)
	if err != nil || int(cred.Uid) != os.Getuid() || int(cred.Pid) == os.Getpid() || cred.Pid <= 0 {
		return
	}
	fd, err := unix.PidfdOpen(int(cred.Pid), 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}
