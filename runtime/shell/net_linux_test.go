//go:build linux

package shell

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/internal/confine"
)

// The network client the tests run inside the sandbox: this test binary,
// started with CCRUN_NETTEST set to what it should try.
func init() {
	mode := os.Getenv("CCRUN_NETTEST")
	if mode == "" {
		return
	}
	if err := netClient(mode, os.Args[1:]); err != nil {
		fmt.Printf("%s: fail: %v\n", mode, err)
	} else {
		fmt.Printf("%s: ok\n", mode)
	}
	os.Exit(0)
}

// netClient tries one way out; nil means it got through.
func netClient(mode string, args []string) error {
	const wait = 2 * time.Second
	switch mode {
	case "tcp": // args: ADDR, connected to directly
		c, err := net.DialTimeout("tcp", args[0], wait)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(wait))
		_, err = c.Read(make([]byte, 1))
		return err
	case "setns": // args: ADDR, connected to directly after joining PID 1's network namespace (root)
		fd, err := unix.PidfdOpen(1, 0)
		if err != nil {
			return fmt.Errorf("pidfd_open: %w", err)
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		return netClient("tcp", args)
	case "caps": // a capability that leaves or widens the namespace (bounding, effective, permitted, inheritable, ambient)
		const keep = 1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<10 // chown, dac_override, fowner, fsetid, kill, setgid, setuid, net_bind_service
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var d [2]unix.CapUserData
		if err := unix.Capget(&hdr, &d[0]); err != nil {
			return nil // cannot tell: counted as through
		}
		var held uint64
		for i := range d {
			held |= uint64(d[i].Effective|d[i].Permitted|d[i].Inheritable) << (32 * i)
		}
		for c := 0; c < 64; c++ {
			if r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && r == 1 {
				held |= 1 << c
			}
			if r, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err == nil && r == 1 {
				held |= 1 << c
			}
		}
		if held&^keep != 0 {
			fmt.Printf("held %x\n", held&^keep)
			return nil
		}
		return fmt.Errorf("none beyond %x", keep)
	case "unshare": // a network or mount namespace of its own (root)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return unix.Unshare(unix.CLONE_NEWNS)
		}
		return nil
	case "rawsock": // a raw socket, made at all (root)
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	case "setnsproc": // args: ADDR, connected to directly after joining PID 1's network namespace by /proc (root)
		fd, err := unix.Open("/proc/1/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open: %w", err)
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		return netClient("tcp", args)
	case "unix": // args: the path of a unix socket of the host, connected to
		c, err := net.DialTimeout("unix", args[0], wait)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(wait))
		_, err = c.Read(make([]byte, 1))
		return err
	case "netlink": // a netlink socket: what moves an interface to another namespace (root)
		fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW, syscall.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		syscall.Close(fd)
		return nil
	case "udp": // args: ADDR, a datagram sent there
		c, err := net.Dial("udp", args[0])
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("escape"))
		return err
	case "raw": // args: an IPv4 address, an ICMP echo sent there from a raw socket
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		a := netip.MustParseAddr(args[0]).As4()
		echo := []byte{8, 0, 0xf7, 0xff, 0, 0, 0, 0} // type 8, checksum of the rest
		return syscall.Sendto(fd, echo, 0, &syscall.SockaddrInet4{Addr: a})
	case "dns": // args: a resolver's ADDR, asked for a name; and the system's
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "udp", args[0])
		}}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if _, err := r.LookupHost(ctx, "allowed.test"); err == nil {
			return nil
		}
		_, err := net.DefaultResolver.LookupHost(ctx, "example.com")
		return err
	case "sni": // args: HOST:PORT for CONNECT, the TLS server name sent in the tunnel
		pc, err := dialProxy()
		if err != nil {
			return err
		}
		defer pc.Close()
		fmt.Fprintf(pc, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", args[0], args[0])
		br := bufio.NewReader(pc)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("CONNECT: %s", resp.Status)
		}
		tc := tls.Client(pc, &tls.Config{ServerName: args[1], InsecureSkipVerify: true})
		tc.SetDeadline(time.Now().Add(wait))
		return tc.Handshake()
	case "host": // args: the absolute URI, the Host header sent with it
		pc, err := dialProxy()
		if err != nil {
			return err
		}
		defer pc.Close()
		fmt.Fprintf(pc, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", args[0], args[1])
		resp, err := http.ReadResponse(bufio.NewReader(pc), nil)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// dialProxy connects to the proxy HTTP_PROXY names.
func dialProxy() (net.Conn, error) {
	u, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("no HTTP_PROXY: %q", os.Getenv("HTTP_PROXY"))
	}
	return net.DialTimeout("tcp", u.Host, 2*time.Second)
}

// loopResolver resolves every name it knows to 127.0.0.1: the proxy's
// resolver in these tests.
type loopResolver map[string]bool

func (r loopResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if r[host] {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// netWorld is a workspace-tier spec whose network allows allowed.test on
// the ports of a local HTTP and a local TLS server, other.test on none.
type netWorld struct {
	confineWorld
	plain, secure string // HOST:PORT of the servers, 127.0.0.1
	udp           string // a UDP socket on the host's loopback that counts datagrams
	udpGot        *atomic.Int64
	unix          string // a unix socket of the host that says hello (a Docker Engine's, a resolver's)
}

func newNetWorld(t *testing.T) netWorld {
	t.Helper()
	w := newConfineWorld(t)
	if ns, err := confine.NewNetNS(); err != nil {
		if os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" {
			// where the kernel layer is required, so is its network
			// namespace (as root, or in a user namespace of its own)
			t.Fatalf("no network namespace here: %v", err)
		}
		t.Skipf("no network namespace here: %v", err)
	} else {
		ns.Close()
	}
	hello := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "hello from "+r.Host) })
	plain := httptest.NewServer(hello)
	secure := httptest.NewTLSServer(hello)
	t.Cleanup(plain.Close)
	t.Cleanup(secure.Close)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	got := new(atomic.Int64)
	go func() {
		b := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(b); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	sock := t.TempDir() + "/engine.sock"
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go http.Serve(ul, hello)
	os.Chmod(sock, 0o777)
	return netWorld{w, strings.TrimPrefix(plain.URL, "http://"), strings.TrimPrefix(secure.URL, "https://"), pc.LocalAddr().String(), got, sock}
}

func port(hp string) string { _, p, _ := net.SplitHostPort(hp); return p }

// spec is src in the workspace tier with the allowlist.
func (w netWorld) spec(t *testing.T, src string) Spec {
	t.Helper()
	c, _, err := WorkspaceConfinement(w.home, w.project, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Net = &Net{Allow: []string{"allowed.test:" + port(w.plain), "allowed.test:" + port(w.secure)},
		Resolver: loopResolver{"allowed.test": true, "other.test": true}, AllowInternal: true}
	s := w.confineWorld.spec(t, src)
	s.Confine = c
	s.Env = append(s.Env, "BIN="+os.Args[0])
	return s
}

// TestNetAllowlist: in the workspace tier with an allowlist, the allowed
// name answers over HTTP and TLS; the other name, resolved to the same
// address, is refused, and the refusal is in the result and on stderr.
func TestNetAllowlist(t *testing.T) {
	w := newNetWorld(t)
	src := fmt.Sprintf(`curl -sS -m 5 http://allowed.test:%[1]s/; echo
curl -sS -m 5 -k https://allowed.test:%[2]s/; echo
curl -sS -m 5 -o /dev/null -w '%%{http_code}\n' http://other.test:%[1]s/
curl -sS -m 5 -k https://other.test:%[2]s/ || echo refused-tls
env | grep -i _proxy= | sort`, port(w.plain), port(w.secure))
	res, err := newExecutor(t).Run(context.Background(), w.spec(t, src))
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	for _, want := range []string{"hello from allowed.test:" + port(w.plain), "hello from allowed.test:" + port(w.secure), "403\n", "refused-tls",
		"HTTP_PROXY=http://127.0.0.1:", "HTTPS_PROXY=http://127.0.0.1:", "ALL_PROXY=socks5h://127.0.0.1:", "NO_PROXY=\n", "no_proxy=\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", want, out, res.Stderr)
		}
	}
	if strings.Count(out, "hello from other.test") != 0 {
		t.Errorf("other.test answered:\n%s", out)
	}
	for _, s := range []string{string(res.Stderr), res.Detail} {
		if !strings.Contains(s, "network refused: other.test:"+port(w.plain)+" (http): not allowed") ||
			!strings.Contains(s, "network refused: other.test:"+port(w.secure)+" (connect): not allowed") {
			t.Errorf("the refusal is not reported: %q", s)
		}
	}
	if !strings.Contains(string(res.Stderr), "ccrun: network refused: other.test") {
		t.Errorf("no stderr line: %q", res.Stderr)
	}
}

// TestNetEscapes: every way around the proxy fails from inside.
func TestNetEscapes(t *testing.T) {
	w := newNetWorld(t)
	outside := "192.0.2.1" // TEST-NET-1: no route inside, whatever the host has
	for _, a := range hostAddrs() {
		outside = a // a real address of this machine: reachable from its own namespace
		break
	}
	cases := []struct{ name, src, want string }{
		{"direct TCP to the server", `CCRUN_NETTEST=tcp "$BIN" ` + w.plain, "tcp: fail"},
		{"direct TCP to the host's address", `CCRUN_NETTEST=tcp "$BIN" ` + net.JoinHostPort(outside, port(w.plain)), "tcp: fail"},
		{"setns to PID 1's namespace", `CCRUN_NETTEST=setns "$BIN" ` + w.plain, "setns: fail"},
		{"setns to PID 1's namespace by /proc", `CCRUN_NETTEST=setnsproc "$BIN" ` + w.plain, "setnsproc: fail"},
		{"a namespace of its own", `CCRUN_NETTEST=unshare "$BIN"`, "unshare: fail"},
		{"a raw socket at all", `CCRUN_NETTEST=rawsock "$BIN"`, "rawsock: fail"},
		{"a mount in a user namespace of its own", `unshare -Urnm sh -c 'mount -t tmpfs none "$TMPDIR" && echo mounted' || echo refused`, "refused"},
		{"setns back from a user namespace of its own", `unshare -Urn sh -c 'CCRUN_NETTEST=setns "$BIN" ` + w.plain + `' || echo refused`, ""},
		{"a capability beyond a build's", `CCRUN_NETTEST=caps "$BIN"`, "caps: fail"},
		{"a unix socket of the host", `CCRUN_NETTEST=unix "$BIN" ` + w.unix, "unix: fail"},
		{"a netlink socket", `CCRUN_NETTEST=netlink "$BIN"`, "netlink: fail"},
		{"UDP to the host's loopback", `CCRUN_NETTEST=udp "$BIN" ` + w.udp, ""},
		{"UDP out", `CCRUN_NETTEST=udp "$BIN" ` + net.JoinHostPort(outside, "53"), "udp: fail"},
		{"a raw socket", `CCRUN_NETTEST=raw "$BIN" ` + outside, "raw: fail"},
		{"DNS to a resolver", `CCRUN_NETTEST=dns "$BIN" ` + w.udp, "dns: fail"},
		{"CONNECT on another port", `curl -sS -m 5 -k https://allowed.test:` + port(w.udp) + `/ || echo refused`, "refused"},
		{"Host disagrees with the URI", `CCRUN_NETTEST=host "$BIN" http://allowed.test:` + port(w.plain) + `/ other.test:` + port(w.plain), "host: fail: 403"},
		{"SNI disagrees with CONNECT", `CCRUN_NETTEST=sni "$BIN" allowed.test:` + port(w.secure) + ` other.test`, "sni: fail"},
		{"NO_PROXY=*", `NO_PROXY='*' no_proxy='*' curl -sS -m 5 http://allowed.test:` + port(w.plain) + `/ || echo refused`, "refused"},
		{"--noproxy to the address", `curl -sS -m 5 --noproxy '*' http://` + w.plain + `/ || echo refused`, "refused"},
	}
	e := newExecutor(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := w.udpGot.Load()
			res, err := e.Run(context.Background(), w.spec(t, c.src))
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout)
			t.Logf("%s: %s %s", c.name, out, res.Stderr)
			if strings.Contains(out, "hello from") || (c.want != "" && !strings.Contains(out, c.want)) {
				t.Errorf("got through, or not as expected (want %q):\n%s\nstderr: %s", c.want, out, res.Stderr)
			}
			if n := w.udpGot.Load() - before; n != 0 {
				t.Errorf("%d datagram(s) reached the host's UDP socket", n)
			}
		})
	}
}

// hostAddrs are this machine's own IPv4 addresses other than loopback.
func hostAddrs() []string {
	var out []string
	as, _ := net.InterfaceAddrs()
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			out = append(out, p.Addr().String())
		}
	}
	return out
}

// TestNetAsUser runs TestNetAllowlist and TestNetEscapes again as an
// ordinary user (uid 65534), whose run's namespace is made in a user
// namespace of its own.
func TestNetAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to become another user")
	}
	newConfineWorld(t) // skips without Landlock
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ccrun-net-user-") // t.TempDir's parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := dir + "/shell.test"
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(dir, 65534, 65534)
	os.Chmod(dir, 0o755)
	cmd := exec.Command(bin, "-test.run", "^(TestNetAllowlist|TestNetEscapes)$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"TMPDIR=" + dir, "XDG_RUNTIME_DIR=" + dir, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNetAllowlist") || !strings.Contains(string(out), "--- PASS: TestNetEscapes") {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
}
