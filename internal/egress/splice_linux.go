//go:build linux

package egress

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// spliceSize is the most one splice(2) call moves, and the size asked of
// a pipe (the default most an unprivileged pipe may have).
const spliceSize = 1 << 20

// spliceData moves what src reads to dst in the kernel, with splice(2)
// through a pipe, until src's end or an error; every move touches the
// connection it read or wrote, as conn's Read and Write do, so that the
// idle timeout sees the traffic. A deadline or Close of either ends it as
// it ends a Read or Write. The pipe is borrowed only while bytes come:
// an idle tunnel holds none. It returns ok false, src's rest unread and
// nothing lost, when src or dst is not a socket it can splice or no pipe
// is to be had: the caller copies the rest.
func spliceData(dst, src *conn) (ok bool, err error) {
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
	var pp *pipe
	defer func() {
		if pp != nil {
			pp.release()
		}
	}()
	for {
		var n int64
		var serr error
		err := sr.Read(func(fd uintptr) bool {
			if pp == nil {
				if pp = getPipe(); pp == nil {
					return true
				}
			}
			n, serr = spliceIn(fd, pp.w)
			if serr == unix.EAGAIN {
				pp.release() // empty: what is moved is pumped out before the next read
				pp = nil
				return false
			}
			return true
		})
		switch {
		case err != nil:
			return true, err
		case pp == nil:
			return false, nil // no pipe
		case errors.Is(serr, unix.EINVAL):
			return false, nil // no splice for this socket: nothing was read
		case serr != nil:
			return true, serr
		case n == 0:
			return true, nil // src's end
		}
		src.touch()
		pp.full = true
		for n > 0 {
			var m int64
			err := dr.Write(func(fd uintptr) bool {
				m, serr = spliceOut(pp.r, fd, n)
				return serr != unix.EAGAIN
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
		pp.full = false
	}
}

// spliceIn moves what socket fd has, up to spliceSize, into pipe w.
func spliceIn(fd uintptr, w int) (int64, error) {
	for {
		n, err := unix.Splice(int(fd), nil, w, nil, spliceSize, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// spliceOut moves up to n bytes of pipe r to socket fd.
func spliceOut(r int, fd uintptr, n int64) (int64, error) {
	for {
		m, err := unix.Splice(r, nil, int(fd), nil, int(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return m, err
		}
	}
}

// pipe is a pipe that splice moves bytes through.
type pipe struct {
	r, w    int
	full    bool // holds bytes: never lent again
	cleanup runtime.Cleanup
}

// pipes lends empty pipes; one the pool drops is closed when collected.
var pipes sync.Pool

// getPipe lends an empty pipe, nil when none can be made.
func getPipe() *pipe {
	if p, ok := pipes.Get().(*pipe); ok {
		return p
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil
	}
	// Smaller works, in more calls; an unprivileged user past the
	// per-user pipe limit gets a smaller one.
	_, _ = unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, spliceSize)
	p := &pipe{r: fds[0], w: fds[1]}
	p.cleanup = runtime.AddCleanup(p, closePipe, fds)
	return p
}

// release gives p back, or closes it when it holds bytes.
func (p *pipe) release() {
	if !p.full {
		pipes.Put(p)
		return
	}
	p.cleanup.Stop()
	closePipe([2]int{p.r, p.w})
}

func closePipe(fds [2]int) {
	unix.Close(fds[0])
	unix.Close(fds[1])
}

// rawConn is c's socket, when it is a TCP or a unix stream socket.
func rawConn(c *conn) (syscall.RawConn, bool) {
	var sc syscall.Conn
	switch nc := c.Conn.(type) {
	case *net.TCPConn:
		sc = nc
	case *net.UnixConn:
		sc = nc
	default:
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	typ, serr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { typ, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE) }); err != nil || serr != nil {
		return nil, false
	}
	return rc, typ == unix.SOCK_STREAM
}
