package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
)

// TestThroughTheProxy: the allowed name answers over plain HTTP, HTTPS by
// CONNECT, and both through SOCKS5; the other name, resolved to the same
// address, is refused and reported, and its server sees nothing.
func TestThroughTheProxy(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	_, addr := namedProxy(t, &rep, hostPort("allowed.test", s.httpPort), hostPort("allowed.test", s.tlsPort))

	for _, tc := range []struct {
		scheme, via string // the client's proxy scheme, and how the proxy says it was asked
		tlsVia      string
	}{
		{"http", "http", "connect"},
		{"socks5", "socks5", "socks5"},
	} {
		t.Run(tc.scheme, func(t *testing.T) {
			c := client(t, tc.scheme, addr, s.ca)
			httpURL := fmt.Sprintf("http://allowed.test:%d/", s.httpPort)
			status, body, err := get(c, httpURL)
			if err != nil || status != 200 || body != fmt.Sprintf("hello http via allowed.test:%d", s.httpPort) {
				t.Errorf("GET %s: got %d %q %v, want 200 hello", httpURL, status, body, err)
			}
			tlsURL := fmt.Sprintf("https://allowed.test:%d/", s.tlsPort)
			status, body, err = get(c, tlsURL)
			if err != nil || status != 200 || body != fmt.Sprintf("hello tls via allowed.test:%d", s.tlsPort) {
				t.Errorf("GET %s: got %d %q %v, want 200 hello", tlsURL, status, body, err)
			}

			before := s.httpHits.hits() + s.tlsHits.hits()
			other := fmt.Sprintf("http://other.test:%d/", s.httpPort)
			status, _, err = get(c, other)
			if err == nil && status != http.StatusForbidden {
				t.Errorf("GET %s: got %d, want refused", other, status)
			}
			if r := rep.want(t, "other.test", ReasonNotAllowed, tc.via); r.Port != s.httpPort {
				t.Errorf("refusal port: got %d, want %d", r.Port, s.httpPort)
			}
			otherTLS := fmt.Sprintf("https://other.test:%d/", s.tlsPort)
			if _, _, err := get(c, otherTLS); err == nil {
				t.Errorf("GET %s: got through", otherTLS)
			}
			rep.want(t, "other.test", ReasonNotAllowed, tc.tlsVia)
			if got := s.httpHits.hits() + s.tlsHits.hits(); got != before {
				t.Errorf("the servers saw %d requests for other.test", got-before)
			}
		})
	}
}

// TestHostMismatch: an absolute-URI request whose Host header names
// another host than its URI is refused; one that agrees (however spelled)
// goes through.
func TestHostMismatch(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	_, addr := namedProxy(t, &rep, hostPort("allowed.test", s.httpPort), hostPort("other.test", s.tlsPort), hostPort("allowed.test", s.tlsPort))
	hp, tp := s.httpPort, s.tlsPort
	for _, tc := range []struct {
		name, req string
		want      int
	}{
		{"other host", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: other.test:%d\r\n\r\n", hp, hp), 403},
		{"other port", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", hp, hp+1), 403},
		{"default port", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", hp), 403},
		{"an address", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", hp, hp), 403},
		{"lowercase host field", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nhost: other.test:%d\r\n\r\n", hp, hp), 403},
		{"bare LF", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\nHost: other.test:%d\n\n", hp, hp), 403},
		{"two Host fields", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nHost: other.test:%d\r\n\r\n", hp, hp, hp), 400},
		{"CONNECT, other host", fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\nHost: other.test:%d\r\n\r\n", tp, tp), 403},
		{"agrees", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", hp, hp), 200},
		{"agrees, spelled otherwise", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: ALLOWED.test.:%d\r\n\r\n", hp, hp), 200},
		{"no Host, HTTP/1.0", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.0\r\n\r\n", hp), 200},
		{"CONNECT, no Host", fmt.Sprintf("CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", tp), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.httpHits.hits()
			got, _, _ := rawRequest(t, addr, tc.req)
			if got != tc.want {
				t.Fatalf("status: got %d, want %d", got, tc.want)
			}
			if got == 403 {
				rep.want(t, "allowed.test", ReasonMismatch, "")
				if n := s.httpHits.hits(); n != before {
					t.Errorf("the server saw the refused request")
				}
			}
		})
	}
}

// TestSNI: a tunnel whose ClientHello names another server than its
// CONNECT authority is refused before a byte reaches the server.
func TestSNI(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	_, addr := namedProxy(t, &rep, hostPort("allowed.test", s.tlsPort), hostPort("allowed.test", s.httpPort), hostPort("other.test", s.tlsPort))
	authority := hostPort("allowed.test", s.tlsPort)

	tunnel := func(t *testing.T, authority string) net.Conn {
		status, c, _ := rawRequest(t, addr, connectReq(authority))
		if status != 200 {
			t.Fatalf("CONNECT %s: got %d", authority, status)
		}
		return c
	}
	handshake := func(c net.Conn, cfg *tls.Config) error {
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			return err
		}
		fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}

	t.Run("disagrees", func(t *testing.T) {
		before := s.tlsHellos.Load()
		c := tunnel(t, authority)
		if err := handshake(c, &tls.Config{ServerName: "other.test", RootCAs: s.ca.pool}); err == nil {
			t.Fatal("a ClientHello for other.test went through a tunnel to allowed.test")
		}
		r := rep.want(t, "allowed.test", ReasonSNI, "connect")
		if !strings.Contains(r.Detail, "other.test") {
			t.Errorf("detail: got %q, want the server name", r.Detail)
		}
		if got := s.tlsHellos.Load(); got != before {
			t.Errorf("the server read %d ClientHellos of a refused tunnel", got-before)
		}
	})
	t.Run("agrees", func(t *testing.T) {
		c := tunnel(t, authority)
		if err := handshake(c, &tls.Config{ServerName: "ALLOWED.TEST", RootCAs: s.ca.pool}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no server name", func(t *testing.T) {
		c := tunnel(t, authority)
		if err := handshake(c, &tls.Config{InsecureSkipVerify: true}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("not TLS", func(t *testing.T) {
		c := tunnel(t, hostPort("allowed.test", s.httpPort))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status: got %d", resp.StatusCode)
		}
	})
	t.Run("malformed ClientHello", func(t *testing.T) {
		c := tunnel(t, authority)
		c.Write([]byte{0x16, 3, 1, 0, 5, 1, 0, 0, 1, 0})
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("the tunnel stayed open")
		}
		rep.want(t, "allowed.test", ReasonInvalid, "connect")
	})
	t.Run("pipelined", func(t *testing.T) {
		// The ClientHello sent with the CONNECT request, in one write, is
		// checked all the same, and not lost when it agrees.
		for _, tc := range []struct {
			name string
			ok   bool
		}{{"other.test", false}, {"allowed.test", true}} {
			c := dialProxy(t, addr)
			pc := &pipelined{Conn: c, req: connectReq(authority), br: bufio.NewReader(c)}
			err := handshake(pc, &tls.Config{ServerName: tc.name, RootCAs: s.ca.pool})
			if (err == nil) != tc.ok {
				t.Errorf("%s: got %v", tc.name, err)
			}
		}
		rep.want(t, "allowed.test", ReasonSNI, "connect")
	})
	t.Run("through SOCKS5", func(t *testing.T) {
		c := socksDial(t, addr, socksDomain("allowed.test"), s.tlsPort)
		if code := socksReplyCode(t, c); code != socksSucceeded {
			t.Fatalf("SOCKS5 reply %d", code)
		}
		if err := handshake(c, &tls.Config{ServerName: "other.test", RootCAs: s.ca.pool}); err == nil {
			t.Fatal("a ClientHello for other.test went through a tunnel to allowed.test")
		}
		rep.want(t, "allowed.test", ReasonSNI, "socks5")
	})
}

// pipelined sends req with its first write, and reads past the response
// to it first.
type pipelined struct {
	net.Conn
	req     string
	br      *bufio.Reader
	sent    bool
	skipped bool
}

func (c *pipelined) Write(b []byte) (int, error) {
	if !c.sent {
		c.sent = true
		if _, err := c.Conn.Write(append([]byte(c.req), b...)); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *pipelined) Read(b []byte) (int, error) {
	if !c.skipped {
		c.skipped = true
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("CONNECT: %s", resp.Status)
		}
	}
	return c.br.Read(b)
}

// socksDomain and socksIP are a SOCKS5 request's address part.
func socksDomain(name string) []byte {
	return append([]byte{socksAtypDomain, byte(len(name))}, name...)
}

func socksIP(a netip.Addr) []byte {
	if a.Is4() {
		b := a.As4()
		return append([]byte{socksAtypIPv4}, b[:]...)
	}
	b := a.As16()
	return append([]byte{socksAtypIPv6}, b[:]...)
}

// socksDial opens a SOCKS5 CONNECT to dst (an address part) and port.
func socksDial(t *testing.T, addr string, dst []byte, port uint16) net.Conn {
	t.Helper()
	c := dialProxy(t, addr)
	req := []byte{5, 1, 0}
	req = append(req, 5, 1, 0)
	req = append(req, dst...)
	req = append(req, byte(port>>8), byte(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var m [2]byte
	if _, err := io.ReadFull(c, m[:]); err != nil || m != [2]byte{5, 0} {
		t.Fatalf("SOCKS5 method reply %v %v", m, err)
	}
	return c
}

// socksReplyCode reads a SOCKS5 reply, -1 when the connection closed first.
func socksReplyCode(t *testing.T, c net.Conn) int {
	var r [10]byte
	if _, err := io.ReadFull(c, r[:]); err != nil {
		return -1
	}
	return int(r[1])
}

// TestPorts: an allowed name on a port it is not allowed with is refused;
// a name without a port is allowed on 80 and 443 only.
func TestPorts(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	_, addr := namedProxy(t, &rep, hostPort("allowed.test", s.httpPort), "other.test")
	for _, tc := range []struct {
		authority string
		want      int
		host      string
	}{
		{hostPort("allowed.test", s.httpPort), 200, ""},
		{hostPort("allowed.test", s.tlsPort), 403, "allowed.test"},
		{hostPort("other.test", s.tlsPort), 403, "other.test"},
		{"allowed.test", 400, ""},
		{"allowed.test:0", 400, ""},
		{"allowed.test:99999", 400, ""},
	} {
		t.Run(tc.authority, func(t *testing.T) {
			got, _, _ := rawRequest(t, addr, connectReq(tc.authority))
			if got != tc.want {
				t.Fatalf("CONNECT %s: got %d, want %d", tc.authority, got, tc.want)
			}
			if tc.host != "" {
				rep.want(t, tc.host, ReasonPort, "connect")
			}
		})
	}
	t.Run("socks5", func(t *testing.T) {
		c := socksDial(t, addr, socksDomain("allowed.test"), s.tlsPort)
		if code := socksReplyCode(t, c); code != socksNotAllowed {
			t.Fatalf("SOCKS5 reply: got %d, want %d", code, socksNotAllowed)
		}
		rep.want(t, "allowed.test", ReasonPort, "socks5")
	})
}

// TestDenyBeatsAllow, through the proxy; TestPolicyCheck has the table.
func TestDenyBeatsAllow(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	_, addr := startProxy(t, Policy{
		Allow:         []string{"*.wild.test:" + fmt.Sprint(s.tlsPort), hostPort("allowed.test", s.tlsPort)},
		Deny:          []string{"deny.wild.test", hostPort("allowed.test", s.tlsPort)},
		AllowInternal: true,
	}, WithResolver(newResolver("a.wild.test", "deny.wild.test", "wild.test", "allowed.test")), WithReport(rep.add))
	c := client(t, "http", addr, s.ca)
	for _, tc := range []struct {
		host string
		why  Reason
	}{
		{"a.wild.test", ""},
		{"deny.wild.test", ReasonDenied},
		{"allowed.test", ReasonDenied},
		{"wild.test", ReasonNotAllowed},
	} {
		t.Run(tc.host, func(t *testing.T) {
			_, _, err := get(c, fmt.Sprintf("https://%s:%d/", tc.host, s.tlsPort))
			if tc.why == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("got through")
			}
			rep.want(t, tc.host, tc.why, "connect")
		})
	}
}

// TestIPLiteral: an address is reached only when allowed literally (in any
// spelling of it), and then whatever its class; a wildcard never matches one.
func TestIPLiteral(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	_, addr := startProxy(t, Policy{
		Allow: []string{"*", hostPort("127.0.0.1", s.httpPort)},
	}, WithResolver(newResolver()), WithReport(rep.add))
	for _, tc := range []struct {
		authority string
		want      int
	}{
		{hostPort("127.0.0.1", s.httpPort), 200},
		{fmt.Sprintf("[::ffff:127.0.0.1]:%d", s.httpPort), 200},
		{hostPort("127.0.0.1", s.tlsPort), 403},
		{hostPort("127.0.0.2", s.httpPort), 403},
		{fmt.Sprintf("[::1]:%d", s.httpPort), 403},
		{fmt.Sprintf("2130706433:%d", s.httpPort), 400},
		{fmt.Sprintf("127.1:%d", s.httpPort), 400},
		{fmt.Sprintf("0x7f.0.0.1:%d", s.httpPort), 400},
	} {
		t.Run(tc.authority, func(t *testing.T) {
			got, _, _ := rawRequest(t, addr, connectReq(tc.authority))
			if got != tc.want {
				t.Fatalf("CONNECT %s: got %d, want %d", tc.authority, got, tc.want)
			}
		})
	}
	rep.want(t, "127.0.0.2", ReasonIPLiteral, "connect")
	rep.want(t, "::1", ReasonIPLiteral, "connect")
	rep.want(t, "127.0.0.1", ReasonPort, "connect")
	t.Run("socks5", func(t *testing.T) {
		c := socksDial(t, addr, socksIP(netip.MustParseAddr("127.0.0.1")), s.httpPort)
		if code := socksReplyCode(t, c); code != socksSucceeded {
			t.Fatalf("SOCKS5 reply: got %d", code)
		}
		c = socksDial(t, addr, socksIP(netip.MustParseAddr("127.0.0.3")), s.httpPort)
		if code := socksReplyCode(t, c); code != socksNotAllowed {
			t.Fatalf("SOCKS5 reply: got %d, want %d", code, socksNotAllowed)
		}
		rep.want(t, "127.0.0.3", ReasonIPLiteral, "socks5")
		c = socksDial(t, addr, socksDomain("127.0.0.4"), s.httpPort)
		if code := socksReplyCode(t, c); code != socksNotAllowed {
			t.Fatalf("SOCKS5 reply: got %d, want %d", code, socksNotAllowed)
		}
		rep.want(t, "127.0.0.4", ReasonIPLiteral, "socks5")
	})
	t.Run("plain http", func(t *testing.T) {
		wantStatus(t, client(t, "http", addr, s.ca), fmt.Sprintf("http://127.0.0.5:%d/", s.httpPort), 403)
		rep.want(t, "127.0.0.5", ReasonIPLiteral, "http")
	})
}

// TestInternal: an allowed name that resolves to an internal address is
// refused unless the Policy allows internal addresses.
func TestInternal(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	res := newResolver("allowed.test")
	res.m["mixed.test"] = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("::ffff:10.1.2.3")}
	_, addr := startProxy(t, Policy{Allow: []string{"*", "*:" + fmt.Sprint(s.httpPort)}}, WithResolver(res), WithReport(rep.add))
	for _, host := range []string{"allowed.test", "mixed.test"} {
		got, _, _ := rawRequest(t, addr, connectReq(hostPort(host, 443)))
		if got != 403 {
			t.Errorf("CONNECT %s: got %d, want 403", host, got)
		}
		rep.want(t, host, ReasonInternal, "connect")
	}
	got, _, _ := rawRequest(t, addr, connectReq("unknown.test:443"))
	if got != 502 {
		t.Errorf("CONNECT unknown.test: got %d, want 502", got)
	}
	rep.want(t, "unknown.test", ReasonUnresolved, "connect")
	wantStatus(t, client(t, "http", addr, s.ca), fmt.Sprintf("http://allowed.test:%d/", s.httpPort), 403)
	rep.want(t, "allowed.test", ReasonInternal, "http")
}

// TestResolveOnce: a connection's name is resolved once, by the proxy's
// resolver, and connected to at the address that gave: here 127.0.0.2,
// where a second server listens.
func TestResolveOnce(t *testing.T) {
	t.Parallel()
	h := &hello{name: "second"}
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	port := portOf(t, l.Addr().String())
	res := &mapResolver{m: map[string][]netip.Addr{"allowed.test": {netip.MustParseAddr("127.0.0.2")}}, calls: map[string]int{}}
	_, addr := startProxy(t, Policy{Allow: []string{hostPort("allowed.test", port)}, AllowInternal: true}, WithResolver(res))
	for i, scheme := range []string{"http", "socks5"} {
		c := client(t, scheme, addr, newCA(t, "x"))
		status, body, err := get(c, fmt.Sprintf("http://allowed.test:%d/", port))
		if err != nil || status != 200 || !strings.HasPrefix(body, "hello second") {
			t.Fatalf("%s: got %d %q %v", scheme, status, body, err)
		}
		if got := res.count("allowed.test"); got != i+1 {
			t.Errorf("%s: lookups: got %d, want %d", scheme, got, i+1)
		}
	}
	status, _, _ := rawRequest(t, addr, connectReq(hostPort("allowed.test", port)))
	if status != 200 || res.count("allowed.test") != 3 {
		t.Errorf("CONNECT: got %d, %d lookups, want 200, 3", status, res.count("allowed.test"))
	}
	if h.hits() != 2 {
		t.Errorf("the server at the resolved address saw %d requests, want 2", h.hits())
	}
}

// TestSlowClients: a client that sends nothing, or its request a byte at a
// time, or a tunnel's first bytes never, is dropped at the handshake
// timeout; a tunnel idle for the idle timeout is closed.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	_, addr := startProxy(t, Policy{Allow: []string{hostPort("allowed.test", s.httpPort)}, AllowInternal: true},
		WithResolver(newResolver("allowed.test")),
		WithHandshakeTimeout(300*time.Millisecond), WithIdleTimeout(400*time.Millisecond))
	// dropped says whether the proxy closed c within 10 s while drip, if
	// any, kept sending.
	dropped := func(t *testing.T, c net.Conn, drip []byte) {
		t.Helper()
		stop := make(chan struct{})
		defer close(stop)
		if drip != nil {
			go func() {
				for _, b := range drip {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					if _, err := c.Write([]byte{b}); err != nil {
						return
					}
				}
			}()
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 512)
		for {
			_, err := c.Read(buf)
			if err == nil {
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("still open after 10 s")
			}
			return
		}
	}
	dial := func(t *testing.T) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	long := []byte(strings.Repeat("X-Slow: loris\r\n", 100))
	t.Run("silent", func(t *testing.T) { dropped(t, dial(t), nil) })
	t.Run("slowloris", func(t *testing.T) {
		c := dial(t)
		fmt.Fprintf(c, "GET http://allowed.test:%d/ HTTP/1.1\r\n", s.httpPort)
		dropped(t, c, long)
	})
	t.Run("slow CONNECT", func(t *testing.T) {
		c := dial(t)
		fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\n", s.httpPort)
		dropped(t, c, long)
	})
	t.Run("slow SOCKS5", func(t *testing.T) {
		c := dial(t)
		c.Write([]byte{5})
		dropped(t, c, []byte{1, 0, 5, 1, 0, 3, 200})
	})
	t.Run("tunnel never speaks", func(t *testing.T) {
		st, c, _ := rawRequest(t, addr, connectReq(hostPort("allowed.test", s.httpPort)))
		if st != 200 {
			t.Fatalf("CONNECT: got %d", st)
		}
		dropped(t, c, nil)
	})
	t.Run("slow ClientHello", func(t *testing.T) {
		st, c, _ := rawRequest(t, addr, connectReq(hostPort("allowed.test", s.httpPort)))
		if st != 200 {
			t.Fatalf("CONNECT: got %d", st)
		}
		c.Write([]byte{0x16, 3, 1, 0x10, 0})
		dropped(t, c, long)
	})
	t.Run("idle tunnel", func(t *testing.T) {
		st, c, br := rawRequest(t, addr, connectReq(hostPort("allowed.test", s.httpPort)))
		if st != 200 {
			t.Fatalf("CONNECT: got %d", st)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		dropped(t, c, nil) // the server keeps the connection alive; the proxy does not
	})
}

// TestNotServed: what the proxy does not serve is refused: a request in
// origin form, an https:// absolute URI, SOCKS5 without "no
// authentication", BIND and UDP ASSOCIATE.
func TestNotServed(t *testing.T) {
	t.Parallel()
	var rep reports
	_, addr := startProxy(t, Policy{Allow: []string{"allowed.test"}}, WithResolver(newResolver("allowed.test")), WithReport(rep.add))
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT /x HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
	} {
		if got, _, _ := rawRequest(t, addr, req); got != http.StatusBadRequest {
			t.Errorf("%q: got %d, want 400", req, got)
		}
	}
	if n := len(rep.all()); n != 3 {
		t.Errorf("%d refusals reported, want 3: %v", n, rep.all())
	}
	for _, tc := range []struct {
		name string
		send []byte
		want []byte
	}{
		{"no acceptable method", []byte{5, 1, 2}, []byte{5, 0xff}},
		{"BIND", []byte{5, 1, 0, 5, 2, 0, 3, 12, 'a', 'l', 'l', 'o', 'w', 'e', 'd', '.', 't', 'e', 's', 't', 0, 80}, []byte{5, 0, 5, socksCmdUnsupported}},
		{"UDP ASSOCIATE", []byte{5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0}, []byte{5, 0, 5, socksCmdUnsupported}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialProxy(t, addr)
			c.Write(tc.send)
			got, _ := io.ReadAll(c)
			if len(got) < len(tc.want) || string(got[:len(tc.want)]) != string(tc.want) {
				t.Errorf("got % x, want % x…", got, tc.want)
			}
		})
	}
}

// TestHeaderBound: a request header past 64 KiB is refused.
func TestHeaderBound(t *testing.T) {
	t.Parallel()
	_, addr := startProxy(t, Policy{Allow: []string{"allowed.test"}}, WithResolver(newResolver("allowed.test")))
	for _, method := range []string{"GET http://allowed.test/", "CONNECT allowed.test:443"} {
		req := method + " HTTP/1.1\r\nHost: allowed.test\r\nX-Big: " + strings.Repeat("x", 100<<10) + "\r\n\r\n"
		if got, _, _ := rawRequest(t, addr, req); got != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: got %d, want 431", method, got)
		}
	}
}

// TestConcurrent: 200 tunnels open at once, each then carrying a request.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	const n = 200
	_, addr := startProxy(t, Policy{Allow: []string{hostPort("allowed.test", s.httpPort)}, AllowInternal: true},
		WithResolver(newResolver("allowed.test")))
	var open, wg sync.WaitGroup
	open.Add(n)
	wg.Add(n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err != nil {
				open.Done()
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			br := bufio.NewReader(c)
			fmt.Fprint(c, connectReq(hostPort("allowed.test", s.httpPort)))
			resp, err := http.ReadResponse(br, nil)
			open.Done()
			if err != nil || resp.StatusCode != 200 {
				errs <- fmt.Errorf("%d: CONNECT: %v %v", i, resp, err)
				return
			}
			open.Wait() // all n tunnels are open now
			fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", i)
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				errs <- fmt.Errorf("%d: GET: %v", i, err)
				return
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil || !strings.HasPrefix(string(b), "hello http") {
				errs <- fmt.Errorf("%d: GET: %q %v", i, b, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMaxConns: past the limit a client waits until a connection ends.
func TestMaxConns(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	_, addr := startProxy(t, Policy{Allow: []string{hostPort("allowed.test", s.httpPort)}, AllowInternal: true},
		WithResolver(newResolver("allowed.test")), WithMaxConns(2))
	req := connectReq(hostPort("allowed.test", s.httpPort))
	var held []net.Conn
	for range 2 {
		st, c, _ := rawRequest(t, addr, req)
		if st != 200 {
			t.Fatalf("CONNECT: got %d", st)
		}
		held = append(held, c)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, req)
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatal("a third connection was served past the limit of 2")
	}
	held[0].Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after one ended: %v %v", resp, err)
	}
}

// TestAsk: a name no list allows is asked about, once; yes lets it
// through, no and silence refuse it; a denied name is never asked about.
func TestAsk(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	var mu sync.Mutex
	asked := map[string]int{}
	ask := func(ctx context.Context, host string, port uint16) bool {
		mu.Lock()
		asked[host]++
		mu.Unlock()
		switch host {
		case "yes.test":
			time.Sleep(50 * time.Millisecond) // the others wait for this answer
			return true
		case "silent.test":
			<-ctx.Done()
			return true
		}
		return false
	}
	_, addr := startProxy(t, Policy{Deny: []string{"denied.test"}, AllowInternal: true},
		WithResolver(newResolver("yes.test", "no.test", "silent.test", "denied.test")),
		WithReport(rep.add), WithAsk(ask, time.Second),
		WithIdleTimeout(300*time.Millisecond)) // shorter than an ask: asks are exempt
	c := client(t, "http", addr, s.ca)
	u := func(host string) string { return fmt.Sprintf("http://%s:%d/", host, s.httpPort) }
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, _, err := get(c, u("yes.test")); err != nil || st != 200 {
				t.Errorf("yes.test: got %d %v", st, err)
			}
		}()
	}
	wg.Wait()
	for _, tc := range []struct {
		host string
		why  Reason
	}{
		{"no.test", ReasonAskDenied},
		{"silent.test", ReasonNoAnswer},
		{"denied.test", ReasonDenied},
	} {
		wantStatus(t, c, u(tc.host), 403)
		rep.want(t, tc.host, tc.why, "http")
	}
	get(c, u("no.test"))
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]int{"yes.test": 1, "no.test": 1, "silent.test": 1}, asked); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
}

// TestUnixSocket: the proxy served on a unix socket, as a sandbox bridged
// to it reaches it.
func TestUnixSocket(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	sock := unixProxy(t, Policy{Allow: []string{hostPort("allowed.test", s.tlsPort)}, AllowInternal: true}, WithResolver(newResolver("allowed.test")))
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, "unix", sock)
		},
		TLSClientConfig: &tls.Config{RootCAs: s.ca.pool},
	}
	defer tr.CloseIdleConnections()
	st, body, err := get(&http.Client{Transport: tr}, fmt.Sprintf("https://allowed.test:%d/", s.tlsPort))
	if err != nil || st != 200 || !strings.HasPrefix(body, "hello tls") {
		t.Fatalf("got %d %q %v", st, body, err)
	}
}

// TestNoLeak: after Close, no goroutine of the proxy is left, whatever its
// connections were doing.
func TestNoLeak(t *testing.T) {
	s := newServers(t)
	base := runtime.NumGoroutine()
	var rep reports
	p, addr, _ := listenProxy(t, Policy{Allow: []string{hostPort("allowed.test", s.httpPort), hostPort("allowed.test", s.tlsPort)}, AllowInternal: true},
		WithResolver(newResolver("allowed.test", "other.test", "slow.test")), WithReport(rep.add),
		WithAsk(func(ctx context.Context, host string, _ uint16) bool {
			if host == "slow.test" {
				<-ctx.Done() // until Close
			}
			return false
		}, time.Hour),
		WithHandshakeTimeout(time.Hour))
	c := client(t, "http", addr, s.ca)
	get(c, fmt.Sprintf("http://allowed.test:%d/", s.httpPort))
	get(c, fmt.Sprintf("https://allowed.test:%d/", s.tlsPort))
	get(c, fmt.Sprintf("http://other.test:%d/", s.httpPort))
	get(client(t, "socks5", addr, s.ca), fmt.Sprintf("https://allowed.test:%d/", s.tlsPort))
	// Left open at Close: a silent client, a half request, an open tunnel,
	// a tunnel waiting for its ClientHello, a client waiting for an ask.
	var open []net.Conn
	for _, req := range []string{"", "GET http://allowed.test/ HTTP/1.1\r\n", "\x05\x01"} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(nc, req)
		open = append(open, nc)
	}
	st, tun, br := rawRequest(t, addr, connectReq(hostPort("allowed.test", s.httpPort)))
	if st != 200 {
		t.Fatalf("CONNECT: %d", st)
	}
	fmt.Fprintf(tun, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err == nil {
		io.Copy(io.Discard, resp.Body)
	}
	rawRequest(t, addr, connectReq(hostPort("allowed.test", s.tlsPort)))
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(slow, connectReq("slow.test:443"))
	time.Sleep(100 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(open, slow) {
		c.Close()
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeAfterClose: Serve on a closed Proxy returns ErrClosed and
// closes the listener.
func TestServeAfterClose(t *testing.T) {
	t.Parallel()
	p, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(l); !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve: got %v, want ErrClosed", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the listener is still open: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestEnv: the environment a program is pointed at the proxy with.
func TestEnv(t *testing.T) {
	t.Parallel()
	p, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := []string{
		"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "ALL_PROXY=socks5h://127.0.0.1:3128", "NO_PROXY=",
		"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "all_proxy=socks5h://127.0.0.1:3128", "no_proxy=",
	}
	if diff := cmp.Diff(want, p.Env("127.0.0.1:3128")); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
}

// TestCurl: curl, pointed at the proxy by Env alone, over each variable.
func TestCurl(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	s := newServers(t)
	var rep reports
	p, addr := namedProxy(t, &rep, hostPort("allowed.test", s.httpPort), hostPort("allowed.test", s.tlsPort))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, s.ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(only string) []string {
		e := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		for _, kv := range p.Env(addr) {
			if only == "" || strings.HasPrefix(kv, only+"=") {
				e = append(e, kv)
			}
		}
		return e
	}
	for _, tc := range []struct {
		name, only, url string
		ok              bool
	}{
		{"http_proxy", "", fmt.Sprintf("http://allowed.test:%d/", s.httpPort), true},
		{"https_proxy", "", fmt.Sprintf("https://allowed.test:%d/", s.tlsPort), true},
		{"all_proxy socks5h", "all_proxy", fmt.Sprintf("https://allowed.test:%d/", s.tlsPort), true},
		{"http_proxy, other", "", fmt.Sprintf("http://other.test:%d/", s.httpPort), false},
		{"https_proxy, other", "", fmt.Sprintf("https://other.test:%d/", s.tlsPort), false},
		{"all_proxy, other", "all_proxy", fmt.Sprintf("https://other.test:%d/", s.tlsPort), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(curl, "-sS", "-f", "--max-time", "20", "--cacert", caFile, tc.url)
			cmd.Env = env(tc.only)
			out, err := cmd.CombinedOutput()
			if tc.ok != (err == nil) {
				t.Fatalf("curl %s: %v\n%s", tc.url, err, out)
			}
			if tc.ok && !strings.HasPrefix(string(out), "hello") {
				t.Errorf("curl %s: %s", tc.url, out)
			}
		})
	}
	rep.want(t, "other.test", ReasonNotAllowed, "http")
	rep.want(t, "other.test", ReasonNotAllowed, "connect")
	rep.want(t, "other.test", ReasonNotAllowed, "socks5")
}

// TestNewInvalid: a malformed entry or option is an invalid argument.
func TestNewInvalid(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{
		"", "*x.org", "a.*.org", "*.", "*.*.org", "x.org:0", "x.org:65536", "x.org:http", "x.org:+80", "[::1", "[::1]x",
		"1.2.3", "2130706433", "exa mple.org", "ünicode.org", "a..b", ".x.org", "x.org..", "*.1.2.3.4", "fe80::1%eth0",
		"[127.0.0.1]", strings.Repeat("a", 64) + ".org", "x/y.org",
	} {
		if _, err := New(Policy{Allow: []string{entry}}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("allow %q: got %v, want an invalid argument", entry, err)
		}
		if _, err := New(Policy{Deny: []string{entry}}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("deny %q: got %v, want an invalid argument", entry, err)
		}
	}
	for _, opt := range []Option{WithResolver(nil), WithMaxConns(0), WithHandshakeTimeout(0), WithIdleTimeout(-1), WithDialTimeout(0), WithAsk(nil, -1)} {
		if _, err := New(Policy{}, opt); !errdefs.IsInvalidArgument(err) {
			t.Errorf("option: got %v, want an invalid argument", err)
		}
	}
	for _, entry := range []string{
		"registry.npmjs.org", "*.golang.org", "*", "*:8080", "127.0.0.1", "[::1]:8080", "::1", "x.org:8443", "X.ORG.", "under_score.example", "localhost",
	} {
		p, err := New(Policy{Allow: []string{entry}, Deny: []string{entry}})
		if err != nil {
			t.Errorf("%q: %v", entry, err)
			continue
		}
		p.Close()
	}
}
