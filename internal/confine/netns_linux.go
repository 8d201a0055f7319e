//go:build linux

package confine

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"

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
// The namespace is held by one OS thread of ccrun, locked, that entered it
// and never leaves it: Start forks from that thread (a child is born in
// the namespace of the thread that forks it) and Listen opens its socket
// there. When Close ends that goroutine the runtime ends its thread, and
// the namespace goes once the run's programs and sockets are gone.
//
// Making one needs CAP_SYS_ADMIN (ccrun run as root): NewNetNS fails with
// ErrUnavailable otherwise, and a run that needs it then starts nothing.
type NetNS struct {
	reqs chan func()
	done chan struct{}
}

// NewNetNS makes a network namespace with loopback up and nothing else.
func NewNetNS() (*NetNS, error) {
	n := &NetNS{reqs: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go n.hold(ready)
	if err := <-ready; err != nil {
		<-n.done
		return nil, err
	}
	return n, nil
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
		ready <- fmt.Errorf("confine: a network namespace (unshare): %w: %w (a network allowlist needs ccrun run as root, for now)", ErrUnavailable, err)
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
// reach on their loopback.
func (n *NetNS) Listen(network, address string) (l net.Listener, err error) {
	if !n.do(func() { l, err = net.Listen(network, address) }) {
		return nil, fmt.Errorf("confine: listen in a network namespace: %w", ErrClosed)
	}
	return l, err
}

// Start starts cmd inside the namespace: confined by rs when rs is not
// nil (as Ruleset.Start does, but with only AF_INET and AF_INET6 sockets:
// a unix socket's path, a netlink or a vsock socket would lead out of the
// namespace), else as cmd.Start does.
func (n *NetNS) Start(rs *Ruleset, cmd *exec.Cmd) (err error) {
	if !n.do(func() {
		if rs != nil {
			err = rs.startLimited(cmd)
		} else {
			err = cmd.Start()
		}
	}) {
		return fmt.Errorf("confine: start %s in a network namespace: %w", cmd.Path, ErrClosed)
	}
	return err
}

// Close ends the namespace's thread. Programs started in it stay in it
// (and keep it) until they exit; nothing more can start there.
func (n *NetNS) Close() {
	select {
	case <-n.done:
		return
	default:
	}
	close(n.reqs)
	<-n.done
}
