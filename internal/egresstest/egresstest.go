// Package egresstest is for tests only: what the tests of a sandbox behind
// the egress proxy (internal/egress) set up: the proxy on a unix socket,
// and a server on the host that names the host it was asked for.
package egresstest

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun/internal/egress"
)

// Proxy serves a proxy of policy and opts on a unix socket until t ends,
// and returns the socket's path and the proxy.
func Proxy(t testing.TB, policy egress.Policy, opts ...egress.Option) (string, *egress.Proxy) {
	t.Helper()
	p, err := egress.New(policy, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	return sock, p
}

// Server serves, until t ends, on every address of the host (so that a
// sandbox that got out would find it at any of them), "hello from HOST"
// and a newline for a request of HOST, and returns its port.
func Server(t testing.TB) int {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello from "+r.Host) })}
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}
