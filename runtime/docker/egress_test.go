package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/ccrun/ccrun/internal/egress"
	"github.com/ccrun/ccrun/internal/egresstest"
	"github.com/ccrun/ccrun/runtime/job"
)

// names resolves the test's names to one address, as the proxy's resolver.
type names map[string]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// hostAddrs are the host's IPv4 addresses other than loopback: where a
// container that escapes its network would find the host.
func hostAddrs(t *testing.T) []string {
	t.Helper()
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

// TestRunBehind: a container behind the egress proxy reaches, through it,
// the allowed name of a server on the host and not another name of the same
// server (refused by the proxy and reported); it does not reach the server
// directly at any of the host's addresses, nor a UDP listener there, nor
// any resolver, whatever the environment says.
func TestRunBehind(t *testing.T) {
	e := executor(t)
	port := egresstest.Server(t)
	udp, err := net.ListenPacket("udp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var udpGot sync.Map
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			udpGot.Store(from.String(), string(buf[:n]))
		}
	}()
	uport := udp.LocalAddr().(*net.UDPAddr).Port

	var mu sync.Mutex
	var refused []egress.Refusal
	lo := netip.MustParseAddr("127.0.0.1")
	sock, p := egresstest.Proxy(t, egress.Policy{Allow: []string{fmt.Sprintf("allowed.test:%d", port)}, AllowInternal: true},
		egress.WithResolver(names{"allowed.test": lo, "refused.test": lo}),
		egress.WithReport(func(r egress.Refusal) { mu.Lock(); refused = append(refused, r); mu.Unlock() }))

	var script strings.Builder
	fmt.Fprintf(&script, `hp=${HTTP_PROXY#http://}; ph=${hp%%:*}; pp=${hp##*:}
for n in allowed.test refused.test; do
  { printf 'GET http://%%s:%d/ HTTP/1.0\r\n\r\n' $n; /bin/busybox sleep 2; } | /bin/busybox nc -w 5 $ph $pp | /bin/busybox tail -1 | /bin/busybox sed "s/^/$n nc: /"
done
`, port)
	// CONNECT, as HTTPS_PROXY is used: the allowed name on its port is
	// tunnelled, on another port or by the other name refused.
	for _, c := range []struct{ name, port, mark string }{{"allowed.test", fmt.Sprint(port), "connect allowed"},
		{"allowed.test", "1", "connect other port"}, {"refused.test", fmt.Sprint(port), "connect refused"}} {
		fmt.Fprintf(&script, `{ printf 'CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n'; /bin/busybox sleep 1; } | /bin/busybox nc -w 3 $ph $pp | /bin/busybox head -1 | /bin/busybox sed "s/^/%s: /"
`, c.name, c.port, c.name, c.port, c.mark)
	}
	script.WriteString(`NO_PROXY='*' no_proxy='*' /bin/busybox ping -c 1 -W 2 172.17.0.1 >/dev/null 2>&1 && echo "ping: answered"
`)
	addrs := hostAddrs(t)
	if !slices.Contains(addrs, "172.17.0.1") {
		addrs = append(addrs, "172.17.0.1") // the engine's default bridge
	}
	for _, a := range addrs {
		fmt.Fprintf(&script, `printf 'GET / HTTP/1.0\r\n\r\n' | /bin/busybox timeout 2 /bin/busybox nc -w 2 %s %d >/dev/null 2>&1 && echo "direct %s: reached"
echo udp | /bin/busybox timeout 2 /bin/busybox nc -u -w 1 %s %d >/dev/null 2>&1
/bin/busybox timeout 2 /bin/busybox nslookup allowed.test %s >/dev/null 2>&1 && echo "dns %s: answered"
`, a, port, a, a, uport, a, a)
	}
	script.WriteString(`/bin/busybox timeout 2 /bin/busybox nslookup allowed.test >/dev/null 2>&1 && echo "dns default: answered"
env | /bin/busybox grep -i _proxy= | /bin/busybox sort
echo done
`)
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.RunBehind(ctx, Spec{Image: testImage, Cmd: []string{"/bin/busybox", "sh", "-c", script.String()},
		Streams: job.Streams{Stdout: &out, Stderr: &errOut}}, Egress{Socket: sock, Env: p.Env})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	left, err := e.eng.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelPID+"="+strconv.Itoa(os.Getpid())))})
	for _, n := range left {
		if strings.HasPrefix(n.Name, "ccrun-egress-") && !strings.HasPrefix(n.Name, "ccrun-egress-gc-") {
			t.Errorf("network %s left after the run", n.Name)
		}
	}
	if err != nil {
		t.Error(err)
	}
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("exit %d\n%s\nstderr: %s", res.ExitCode, got, errOut.String())
		}
	}()
	for _, want := range []string{fmt.Sprintf("allowed.test nc: hello from allowed.test:%d", port), "refused.test nc: egress: refused refused.test",
		"connect allowed: HTTP/1.1 200", "connect other port: HTTP/1.1 403", "connect refused: HTTP/1.1 403", "HTTPS_PROXY=http://", "ALL_PROXY=socks5h://", "NO_PROXY=\n", "done"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the output", want)
		}
	}
	for _, bad := range []string{"reached", "answered", "hello from refused"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q in the output: the container got out", bad)
		}
	}
	udpGot.Range(func(k, v any) bool { t.Errorf("UDP from the container reached the host: %v %q", k, v); return true })
	mu.Lock()
	defer mu.Unlock()
	if len(refused) == 0 || refused[0].Host != "refused.test" {
		t.Errorf("refusals %v, want refused.test's reported", refused)
	}
}

// TestGCNetworks: an egress network whose owner is gone (a ccrun killed
// mid-run) is listed by Garbage and removed by GC; one of a live owner,
// this process, is left alone.
func TestGCNetworks(t *testing.T) {
	e := executor(t)
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	labels := e.labels()
	labels[LabelPID], labels[LabelStart] = strconv.Itoa(dead.Process.Pid), "1"
	gone, err := e.eng.NetworkCreate(ctx, "ccrun-egress-gc-"+randHex(4), network.CreateOptions{Driver: "bridge", Internal: true, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	live, err := e.eng.NetworkCreate(ctx, "ccrun-egress-gc-"+randHex(4), network.CreateOptions{Driver: "bridge", Internal: true, Labels: e.labels()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.eng.NetworkRemove(ctx, gone.ID); _ = e.eng.NetworkRemove(ctx, live.ID) })
	if g, err := e.Garbage(ctx, false); err != nil || !slices.Contains(g, gone.ID) || slices.Contains(g, live.ID) {
		t.Fatalf("Garbage: %v %v", g, err)
	}
	removed, err := e.GC(ctx)
	if err != nil || !slices.Contains(removed, gone.ID) || slices.Contains(removed, live.ID) {
		t.Fatalf("GC: %v %v; want %s removed, %s kept", removed, err, gone.ID, live.ID)
	}
}

// BenchmarkBehind: a run of `true` on its own and behind the egress proxy,
// side by side: what the internal network and the relay add to a call.
func BenchmarkBehind(b *testing.B) {
	e := executor(b)
	sock, p := egresstest.Proxy(b, egress.Policy{})
	s := Spec{Image: testImage, Cmd: []string{"/bin/busybox", "true"}}
	ctx := context.Background()
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if res, err := e.Run(ctx, s); err != nil || !res.OK() {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("behind", func(b *testing.B) {
		for b.Loop() {
			if res, err := e.RunBehind(ctx, s, Egress{Socket: sock, Env: p.Env}); err != nil || !res.OK() {
				b.Fatal(err, res)
			}
		}
	})
}
