package egress

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// TestHalfClose: a client that shuts its writing side once it has sent
// its request (busybox nc does) still gets the upstream's answer, for a
// plain request as for a tunnel: the end of what a client sends is not the
// end of what it waits for.
func TestHalfClose(t *testing.T) {
	t.Parallel()
	s := newServers(t)
	var rep reports
	_, addr := namedProxy(t, &rep, hostPort("allowed.test", s.httpPort))
	for _, tc := range []struct{ name, req string }{
		{"absolute URI", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", s.httpPort, s.httpPort)},
		{"HTTP/1.0", fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.0\r\n\r\n", s.httpPort)},
		{"tunnel", connectReq(hostPort("allowed.test", s.httpPort)) +
			fmt.Sprintf("GET / HTTP/1.0\r\nHost: allowed.test:%d\r\n\r\n", s.httpPort)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.httpHits.hits()
			c := dialProxy(t, addr)
			if _, err := io.WriteString(c, tc.req); err != nil {
				t.Fatal(err)
			}
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("hello http via allowed.test:%d", s.httpPort)
			if !strings.Contains(string(got), want) {
				t.Errorf("got %q, want the upstream's %q", got, want)
			}
			if s.httpHits.hits() == before {
				t.Error("the upstream was never called")
			}
		})
	}
}
