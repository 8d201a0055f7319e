//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace with nothing in it but loopback, made for
// the programs of one run whose network is limited to named hosts: a
// program started by Start is in it, and so is everything it forks, and
// the only thing listening there is what Listen made (ccrun's egress
// proxy). The listener's socket belongs to the namespace, while the proxy
// that accepts on it dials from ccrun's own namespace: the socket is the
// bridge, with no process and no copy between. A program there that
// ignores the proxy reaches nothing: there is no route but loopback, no
// resolver, and UDP and raw sockets see only loopback too.
//
// With CAP_SYS_ADMIN (ccrun run as root) the namespace is held by one OS
// thread of ccrun, locked, that entered it and never leaves it: Start
// forks from that thread (a child is born in the namespace of the thread
// that forks it) and Listen opens its socket there. When Close ends that
// goroutine the runtime ends its thread, and the namespace goes once the
// run's programs and sockets are gone.
//
// Without it (an ordinary user) the namespace is made with a user
// namespace of its own, owned by ccrun's user, that maps only that user's
// uid and gid: a holder process (the helper as "ccrun-netns", started in
// both new namespaces with CAP_NET_ADMIN there) brings loopback up, opens
// a listener on 127.0.0.1 and its two namespaces, sends them to ccrun over
// a socket pair and exits; the namespaces' files keep them. Listen then
// hands out that listener (tcp, 127.0.0.1:0, once), and Start starts the
// helper as "ccrun-confine-join", which enters the user namespace and then
// the network namespace before it confines itself as ever.
//
// Either way a program started there keeps none of the capabilities that
// would let it leave or widen the namespace (helper/helper.c: KEEP_CAPS;
// as root it keeps owners, modes, permissions, setuid, signals and low
// ports), beside no_new_privs, Landlock and the seccomp filter.
//
// Where neither can be made, NewNetNS fails with ErrUnavailable, and a run
// that needs it then starts nothing.
type NetNS struct {
	reqs chan func()
	done chan struct{}

	// an ordinary user's namespace: its files and the holder's listener
	files    *nsFiles
	mu       sync.Mutex
	listener net.Listener // until Listen takes it
	closed   bool
}

// nsFiles are the user and network namespaces a program joins (both nil:
// it is forked in the network namespace, from the thread in it).
type nsFiles struct {
	user, net *os.File
}

// NewNetNS makes a network namespace with loopback up and nothing else.
func NewNetNS() (*NetNS, error) {
	n := &NetNS{reqs: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go n.hold(ready)
	err := <-ready
	if err == nil {
		return n, nil
	}
	<-n.done
	if !errors.Is(err, unix.EPERM) {
		return nil, err
	}
	// no CAP_SYS_ADMIN: in a user namespace of its own
	u, uerr := newUserNetNS()
	if uerr != nil {
		return nil, fmt.Errorf("%w; in a user namespace: %w", err, uerr)
	}
	return u, nil
}

// hold locks a goroutine to a thread that is not the main one (the
// runtime never ends the main thread, so it must not be changed) and
// serves the namespace there.
func (n *NetNS) hold(ready chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		n.serve(ready) // never unlocked: the thread ends with the goroutine
		return
	}
	go n.hold(ready) // it cannot get this thread, locked here
	<-n.done
	runtime.UnlockOSThread()
}

// serve enters a new network namespace on the locked thread, brings its
// loopback up, and runs what do hands it until Close.
func (n *NetNS) serve(ready chan<- error) {
	defer close(n.done)
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		ready <- fmt.Errorf("confine: a network namespace (unshare): %w: %w", ErrUnavailable, err)
		return
	}
	if err := loopbackUp(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range n.reqs {
		f()
	}
}

// newUserNetNS makes the namespace in a user namespace of its own, by the
// holder (see NetNS).
func newUserNetNS() (*NetNS, error) {
	h, err := helperFiles()
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("confine: the namespace's holder: %w: %w", ErrUnavailable, err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "netns-holder"), os.NewFile(uintptr(pair[1]), "netns-holder")
	uid, gid := os.Getuid(), os.Getgid()
	cmd := &exec.Cmd{Path: h.path, Args: []string{"ccrun-netns"}, Dir: "/", Env: []string{}, ExtraFiles: []*os.File{theirs},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNET,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			AmbientCaps: []uintptr{unix.CAP_NET_ADMIN},
		}}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("confine: a user and network namespace: %w: %w", ErrUnavailable, err)
	}
	defer func() {
		mine.Close() // the holder exits when it reads the end
		_ = cmd.Wait()
	}()
	var msg [8]byte
	oob := make([]byte, unix.CmsgSpace(3*4))
	var m, oobn int
	err = ignoringEINTR(func() (err error) {
		m, oobn, _, _, err = unix.Recvmsg(int(mine.Fd()), msg[:], oob, unix.MSG_CMSG_CLOEXEC)
		return err
	})
	if err != nil || m != len(msg) {
		return nil, fmt.Errorf("confine: the namespace's holder ended without a word (%v): %w", err, ErrUnavailable)
	}
	var fds []int
	if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, cm := range cms {
			if got, err := unix.ParseUnixRights(&cm); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if step := binary.NativeEndian.Uint32(msg[:4]); step != 0 || len(fds) != 3 {
		closeAll()
		name := "unknown step"
		if int(step) < len(stepNames) {
			name = stepNames[step]
		}
		return nil, fmt.Errorf("confine: the namespace's holder: %s: %w: %w", name, ErrUnavailable, syscall.Errno(binary.NativeEndian.Uint32(msg[4:])))
	}
	lf := os.NewFile(uintptr(fds[0]), "netns-listener")
	l, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		unix.Close(fds[1])
		unix.Close(fds[2])
		return nil, fmt.Errorf("confine: the namespace's listener: %w: %w", ErrUnavailable, err)
	}
	n := &NetNS{files: &nsFiles{user: os.NewFile(uintptr(fds[1]), "netns-user"), net: os.NewFile(uintptr(fds[2]), "netns-net")}, listener: l}
	return n, nil
}

// loopbackUp brings up lo in the calling thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("confine: loopback: %w: %w", ErrUnavailable, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("confine: loopback: %w: %w", ErrUnavailable, err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("confine: loopback up: %w: %w", ErrUnavailable, err)
	}
	return nil
}

// do runs f on the namespace's thread; false after Close.
func (n *NetNS) do(f func()) bool {
	ran := make(chan struct{})
	select {
	case n.reqs <- func() { f(); close(ran) }:
		<-ran
		return true
	case <-n.done:
		return false
	}
}

// Listen opens a listener (net.Listen's network and address) inside the
// namespace: "tcp", "127.0.0.1:0" for a port the namespace's programs
// reach on their loopback. In an ordinary user's namespace only that, and
// once: it is the holder's listener.
func (n *NetNS) Listen(network, address string) (l net.Listener, err error) {
	if n.files != nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch {
		case n.closed:
			return nil, fmt.Errorf("confine: listen in a network namespace: %w", ErrClosed)
		case network != "tcp" || address != "127.0.0.1:0":
			return nil, fmt.Errorf("confine: listen on %s %s in a user's network namespace: only tcp 127.0.0.1:0: %w", network, address, ErrInvalidPolicy)
		case n.listener == nil:
			return nil, fmt.Errorf("confine: listen in a user's network namespace: its one listener is taken: %w", ErrInvalidPolicy)
		}
		l, n.listener = n.listener, nil
		return l, nil
	}
	if !n.do(func() { l, err = net.Listen(network, address) }) {
		return nil, fmt.Errorf("confine: listen in a network namespace: %w", ErrClosed)
	}
	return l, err
}

// Start starts cmd inside the namespace: confined by rs when rs is not
// nil (as Ruleset.Start does, but with only AF_INET and AF_INET6 sockets:
// a unix socket's path, a netlink or a vsock socket would lead out of the
// namespace, and with the capabilities dropped), else as cmd.Start does
// (where ccrun holds the namespace on a thread: an ordinary user's
// namespace is entered by the helper only).
func (n *NetNS) Start(rs *Ruleset, cmd *exec.Cmd) (err error) {
	if n.files != nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch {
		case n.closed:
			return fmt.Errorf("confine: start %s in a network namespace: %w", cmd.Path, ErrClosed)
		case rs == nil:
			return fmt.Errorf("confine: start %s unconfined in a user's network namespace: %w", cmd.Path, ErrUnavailable)
		}
		return rs.startLimited(cmd, n.files)
	}
	if !n.do(func() {
		if rs != nil {
			err = rs.startLimited(cmd, &nsFiles{})
		} else {
			err = cmd.Start()
		}
	}) {
		return fmt.Errorf("confine: start %s in a network namespace: %w", cmd.Path, ErrClosed)
	}
	return err
}

// Close ends the namespace's thread (or lets go of an ordinary user's
// namespace). Programs started in it stay in it (and keep it) until they
// exit; nothing more can start there.
func (n *NetNS) Close() {
	if n.files != nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.closed {
			return
		}
		n.closed = true
		n.files.user.Close()
		n.files.net.Close()
		if n.listener != nil {
			n.listener.Close()
		}
		return
	}
	select {
	case <-n.done:
		return
	default:
	}
	close(n.reqs)
	<-n.done
}
