package usersock

import (
	"net"

	"golang.org/x/sys/unix"
)

// PeerCred returns the credentials of the process at the other end of c,
// from the kernel (SO_PEERCRED).
func PeerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = peerCred(int(fd)) }); err != nil {
		return nil, err
	}
	return cred, cerr
}

func peerCred(fd int) (*unix.Ucred, error) {
	return unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
}

// PeerUIDFD is PeerUID of the socket fd, for a socket used without the
// net package.
func PeerUIDFD(fd int) (int, error) {
	cred, err := peerCred(fd)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

// PeerUID returns the uid of the process at the other end of c.
func PeerUID(c *net.UnixConn) (int, error) {
	cred, err := PeerCred(c)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
