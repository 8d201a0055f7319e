// Command netfwd makes the test cluster's API server, which listens only
// inside the cluster's own network namespace, reachable from this host's
// loopback: it listens on -listen (a loopback address) and copies each
// connection to -to, dialled from inside the network namespace -netns.
// With -reverse it goes the other way: it listens on -listen inside
// -netns (a node's loopback) and dials -to from the host's own namespace,
// so that a node's containerd reaches a registry a test runs on the
// host's loopback. No address outside that namespace and the host's
// loopback is used.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"syscall"
)

// dialer dials from inside a network namespace: one goroutine, locked to
// an OS thread that entered the namespace and never leaves it.
type dialer struct{ req chan chan result }

type result struct {
	c   net.Conn
	err error
}

func newDialer(netns, to string) (*dialer, error) {
	d := &dialer{req: make(chan chan result)}
	ready := make(chan error)
	go func() {
		// Never unlocked: the thread is in another namespace, so it dies
		// with this goroutine rather than going back to the pool.
		runtime.LockOSThread()
		f, err := os.Open(netns)
		if err != nil {
			ready <- err
			return
		}
		if _, _, e := syscall.RawSyscall(sysSetns, f.Fd(), syscall.CLONE_NEWNET, 0); e != 0 {
			ready <- fmt.Errorf("setns %s: %w", netns, e)
			return
		}
		f.Close()
		ready <- nil
		for r := range d.req {
			c, err := net.Dial("tcp", to)
			r <- result{c, err}
		}
	}()
	return d, <-ready
}

func (d *dialer) dial() (net.Conn, error) {
	r := make(chan result, 1)
	d.req <- r
	res := <-r
	return res.c, res.err
}

func main() {
	listen := flag.String("listen", "127.0.0.1:16443", "loopback address to listen on")
	netns := flag.String("netns", "", "network namespace file to dial from (/run/netns/NAME)")
	to := flag.String("to", "", "address to dial inside that namespace")
	reverse := flag.Bool("reverse", false, "listen inside -netns, dial -to from this host's namespace")
	flag.Parse()
	if ip, _, err := net.SplitHostPort(*listen); err != nil || !net.ParseIP(ip).IsLoopback() {
		log.Fatalf("netfwd: -listen %q: want a loopback address and port", *listen)
	}
	var (
		dial func() (net.Conn, error)
		l    net.Listener
		err  error
	)
	if *reverse {
		if ip, _, err := net.SplitHostPort(*to); err != nil || !net.ParseIP(ip).IsLoopback() {
			log.Fatalf("netfwd: -reverse -to %q: want a loopback address and port of this host", *to)
		}
		dial = func() (net.Conn, error) { return net.Dial("tcp", *to) }
		l, err = listenIn(*netns, *listen)
	} else {
		var d *dialer
		if d, err = newDialer(*netns, *to); err == nil {
			dial = d.dial
			l, err = net.Listen("tcp", *listen)
		}
	}
	if err != nil {
		log.Fatalf("netfwd: %v", err)
	}
	for {
		c, err := l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		} else if err != nil {
			log.Printf("netfwd: accept: %v", err)
			continue
		}
		go func() {
			defer c.Close()
			up, err := dial()
			if err != nil {
				log.Printf("netfwd: dial %s: %v", *to, err)
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(up, c)
				if tc, ok := up.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(c, up)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			<-done
		}()
	}
}

// listenIn listens on addr inside the network namespace netns: from a
// thread that entered it, which is never given back (a socket keeps the
// namespace it was made in, so the listener serves from any thread).
func listenIn(netns, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ready := make(chan result)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(netns)
		if err != nil {
			ready <- result{nil, err}
			return
		}
		if _, _, e := syscall.RawSyscall(sysSetns, f.Fd(), syscall.CLONE_NEWNET, 0); e != 0 {
			ready <- result{nil, fmt.Errorf("setns %s: %w", netns, e)}
			return
		}
		f.Close()
		l, err := net.Listen("tcp", addr)
		ready <- result{l, err}
		select {} // the thread stays in netns, unused, until the process ends
	}()
	r := <-ready
	return r.l, r.err
}

// sysSetns is setns(2) on linux/amd64 (the syscall package has no name for it).
const sysSetns = 308
