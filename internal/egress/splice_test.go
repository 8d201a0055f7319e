package egress

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// payload is n bytes of a stream seeded by seed.
func payload(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
	return b
}

// TestTunnelRelay: a tunnel carries 16 MiB each way at once, byte for
// byte, the client's first bytes sent with its CONNECT request (before
// the answer: they wait in the proxy's reader), each side's end passed on
// as a half-close; for a client on TCP and on a unix socket.
func TestTunnelRelay(t *testing.T) {
	t.Parallel()
	const size = 16 << 20
	up, down := payload(1, size), payload(2, size)
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	got := make(chan []byte, 1)
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				wrote := make(chan struct{})
				go func() {
					defer close(wrote)
					c.Write(down)
					c.(*net.TCPConn).CloseWrite()
				}()
				b, _ := io.ReadAll(c)
				<-wrote
				got <- b
			}()
		}
	}()
	port := portOf(t, ul.Addr().String())
	pol := Policy{Allow: []string{hostPort("allowed.test", port)}, AllowInternal: true}
	_, tcpAddr := startProxy(t, pol, WithResolver(newResolver("allowed.test")))
	sock := unixProxy(t, pol, WithResolver(newResolver("allowed.test")))
	for _, tc := range []struct{ network, addr string }{{"tcp", tcpAddr}, {"unix", sock}} {
		t.Run(tc.network, func(t *testing.T) {
			c, err := net.DialTimeout(tc.network, tc.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			sent := make(chan error, 1)
			go func() {
				req := connectReq(hostPort("allowed.test", port))
				_, err := c.Write(append([]byte(req), up[:1000]...))
				if err == nil {
					_, err = c.Write(up[1000:])
				}
				if err == nil {
					err = c.(interface{ CloseWrite() error }).CloseWrite()
				}
				sent <- err
			}()
			b, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			const ok = "HTTP/1.1 200 Connection established\r\n\r\n"
			if !bytes.HasPrefix(b, []byte(ok)) || !bytes.Equal(b[len(ok):], down) {
				t.Errorf("the client got %d bytes, not the answer and the upstream's %d", len(b), size)
			}
			if b := <-got; !bytes.Equal(b, up) {
				t.Errorf("the upstream got %d bytes, not the client's %d", len(b), size)
			}
		})
	}
}

// TestSpliceData: between two sockets, TCP or unix, spliceData moves
// everything in the kernel, and each move counts for the idle timeout of
// both connections.
func TestSpliceData(t *testing.T) {
	t.Parallel()
	p := spliceProxy(t)
	data := payload(3, 4<<20)
	for _, from := range []string{"tcp", "unix"} {
		for _, to := range []string{"tcp", "unix"} {
			t.Run(from+" to "+to, func(t *testing.T) {
				in, src := connPair(t, from)
				dst, out := connPair(t, to)
				s, d := p.track(src, false), p.track(dst, false)
				s.last.Store(-1)
				d.last.Store(-1)
				go func() {
					in.Write(data)
					in.Close()
				}()
				res := make(chan []byte, 1)
				go func() {
					b, _ := io.ReadAll(out)
					res <- b
				}()
				ok, err := spliceData(d, s)
				if !ok || err != nil {
					t.Fatalf("spliceData: ok %v, %v", ok, err)
				}
				d.closeWrite()
				if b := <-res; !bytes.Equal(b, data) {
					t.Errorf("got %d bytes, not the %d sent", len(b), len(data))
				}
				if s.last.Load() < 0 || d.last.Load() < 0 {
					t.Errorf("a connection's last move was not noted: %d, %d", s.last.Load(), d.last.Load())
				}
			})
		}
	}
}

// TestSpliceNotStream: a unix socket of datagrams or of packets is not
// spliced (their messages' bounds would be lost): the caller copies.
func TestSpliceNotStream(t *testing.T) {
	t.Parallel()
	p := spliceProxy(t)
	tc, _ := connPair(t, "tcp")
	pc, _ := connPair(t, "unixpacket")
	gc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "g"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	stream := p.track(tc, false)
	for _, nc := range []net.Conn{pc, gc} {
		c := p.track(nc, false)
		if ok, err := spliceData(stream, c); ok || err != nil {
			t.Errorf("%T from: ok %v, %v; want false, nil", nc, ok, err)
		}
		if ok, err := spliceData(c, stream); ok || err != nil {
			t.Errorf("%T to: ok %v, %v; want false, nil", nc, ok, err)
		}
	}
}

// spliceProxy is a Proxy for the test to track connections of, closed at
// its end; the test is skipped where there is no splice(2).
func spliceProxy(t *testing.T) *Proxy {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("splice(2) is Linux's")
	}
	p, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestCloseMidSplice: Close ends a tunnel whose bytes are on their way in
// both directions, with the client reading none of them and the upstream
// none of what it is sent: Close returns, and the client's connection
// ends.
func TestCloseMidSplice(t *testing.T) {
	t.Parallel()
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	block := payload(4, 1<<20)
	go func() {
		c, err := ul.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for {
			if _, err := c.Write(block); err != nil {
				return
			}
		}
	}()
	port := portOf(t, ul.Addr().String())
	p, addr, done := listenProxy(t, Policy{Allow: []string{hostPort("allowed.test", port)}, AllowInternal: true}, WithResolver(newResolver("allowed.test")))
	st, c, br := rawRequest(t, addr, connectReq(hostPort("allowed.test", port)))
	if st != 200 {
		t.Fatalf("CONNECT: got %d", st)
	}
	go func() {
		for {
			if _, err := c.Write(block); err != nil {
				return
			}
		}
	}()
	if _, err := io.ReadFull(br, make([]byte, 1<<20)); err != nil {
		t.Fatal(err) // the tunnel carries bytes
	}
	p.Close()
	if err := <-done; err != ErrClosed {
		t.Errorf("Serve: got %v, want ErrClosed", err)
	}
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the client's connection: %v, want its end", err)
	}
}

// connPair is the two ends of a connection of network ("tcp", "unix",
// "unixpacket"), on loopback or in the test's directory, closed at the
// end of the test.
func connPair(t *testing.T, network string) (net.Conn, net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network != "tcp" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := net.Dial(network, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
