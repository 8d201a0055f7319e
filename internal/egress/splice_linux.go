//go:build linux

package egress

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// spliceSize is the most one splice(2) call moves, and the size asked of
// its pipe (the default most an unprivileged pipe may have).
const spliceSize = 1 << 20

// spliceData moves what src reads to dst in the kernel, with splice(2)
// through a pipe, until src's end or an error; every move touches the
// connection it read or wrote, as conn's Read and Write do, so that the
// idle timeout sees the traffic. A deadline or Close of either ends it as
// it ends a Read or Write. It returns handled false, having moved nothing,
// when src or dst is not a socket it can splice (the caller copies then).
func spliceData(dst, src *conn) (handled bool, err error) {
	if len(src.prefix) > 0 {
		return false, nil // conn's Read serves it first
	}
	sr, ok := rawConn(src)
	if !ok {
		return false, nil
	}
	dr, ok := rawConn(dst)
	if !ok {
		return false, nil
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return false, nil
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	_, _ = unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, spliceSize) // smaller works, in more calls
	const flags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK
	for moved := false; ; moved = true {
		var n int64
		var serr error
		err := sr.Read(func(fd uintptr) bool {
			n, serr = unix.Splice(int(fd), nil, fds[1], nil, spliceSize, flags)
			return serr != unix.EAGAIN && serr != unix.EINTR
		})
		if err == nil {
			err = serr
		}
		if errors.Is(err, unix.EINVAL) && !moved {
			return false, nil // no splice for this socket: nothing was read
		}
		if err != nil || n == 0 {
			return true, err
		}
		src.touch()
		for n > 0 {
			var m int64
			err := dr.Write(func(fd uintptr) bool {
				m, serr = unix.Splice(fds[0], nil, int(fd), nil, int(n), flags)
				return serr != unix.EAGAIN && serr != unix.EINTR
			})
			if err == nil {
				err = serr
			}
			if err != nil {
				return true, err
			}
			n -= m
			dst.touch()
		}
	}
}

// rawConn is c's socket, when it is a TCP or a unix stream socket.
func rawConn(c *conn) (syscall.RawConn, bool) {
	var sc syscall.Conn
	switch nc := c.Conn.(type) {
	case *net.TCPConn:
		sc = nc
	case *net.UnixConn:
		if nc.LocalAddr().Network() != "unix" {
			return nil, false
		}
		sc = nc
	default:
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}
