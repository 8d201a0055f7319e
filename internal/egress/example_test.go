package egress_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"

	"github.com/ccrun/ccrun/internal/egress"
)

// resolver resolves every name to the loopback address.
type resolver struct{}

func (resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// A proxy that lets a program reach one name: another, though it resolves
// to the very same address, is refused and reported.
func ExampleNew() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer upstream.Close()
	_, port, _ := net.SplitHostPort(upstream.Listener.Addr().String())

	p, err := egress.New(egress.Policy{
		Allow:         []string{"registry.example:" + port},
		AllowInternal: true, // the test server is on the loopback
	},
		egress.WithResolver(resolver{}),
		egress.WithReport(func(r egress.Refusal) { fmt.Println("refused:", r.Host, r.Reason) }),
	)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0") // or a unix socket a sandbox is bridged to
	if err != nil {
		panic(err)
	}
	go p.Serve(l)

	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: l.Addr().String()})}}
	for _, host := range []string{"registry.example", "elsewhere.example"} {
		resp, err := c.Get("http://" + host + ":" + port + "/")
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(host, resp.Status)
	}
	// Output:
	// registry.example 200 OK
	// refused: elsewhere.example not allowed
	// elsewhere.example 403 Forbidden
}
