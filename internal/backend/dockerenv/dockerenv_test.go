package dockerenv

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/internal/egress"
	"github.com/ccrun/ccrun/internal/egresstest"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/runtime/job"
)

type loopback struct{}

func (loopback) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestEgressOnDocker: an invocation the root gave an egress proxy runs on
// the Docker Engine behind it: an allowed name answers through the proxy,
// and the server is not reached at the host's bridge address directly.
func TestEgressOnDocker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testimage.Ensure(ctx); err != nil {
		testimage.NoEngine(t, err)
	}
	port := egresstest.Server(t)
	sock, p := egresstest.Proxy(t, egress.Policy{Allow: []string{fmt.Sprintf("allowed.test:%d", port)}, AllowInternal: true}, egress.WithResolver(loopback{}))

	e, err := Docker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	script := fmt.Sprintf(`hp=${HTTP_PROXY#http://}
{ printf 'GET http://allowed.test:%d/ HTTP/1.0\r\n\r\n'; /bin/busybox sleep 2; } | /bin/busybox nc -w 5 ${hp%%:*} ${hp##*:} | /bin/busybox tail -1
printf 'GET / HTTP/1.0\r\n\r\n' | /bin/busybox timeout 3 /bin/busybox nc -w 2 172.17.0.1 %d >/dev/null 2>&1 && echo reached directly
echo done`, port, port)
	var out bytes.Buffer
	inv := &backend.Invocation{Args: []string{"/bin/busybox", "sh", "-c", script}, Streams: job.Streams{Stdout: &out},
		Egress: &backend.Egress{Socket: sock, Env: p.Env}}
	if _, err := e.Run(ctx, inv, testimage.Name, "never", false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, fmt.Sprintf("hello from allowed.test:%d", port)) || strings.Contains(got, "reached") || !strings.Contains(got, "done") {
		t.Fatalf("behind the proxy: %q; want the allowed name answered, nothing reached directly", got)
	}
}
