package shell

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ccrun/ccrun/internal/confine"
	"github.com/ccrun/ccrun/internal/egress"
)

// Net, set as Confinement.Net, limits a confined run's network to named
// hosts: every program of the run starts in a network namespace of its
// own with nothing but loopback, where the only thing listening is an
// egress proxy ccrun runs for the run (HTTP CONNECT, plain HTTP, SOCKS5;
// internal/egress), and HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY
// (each in lower case too) point there. The proxy resolves names itself
// and lets a connection through only to a host Allow names and Deny does
// not; a program that ignores the variables reaches nothing (no route, no
// resolver, UDP and raw sockets only on loopback). Each refused
// connection is said on the run's stderr ("ccrun: network refused: …")
// and in the Result's detail. docs/network.md.
//
// As root the namespace is made on a thread of ccrun; as an ordinary user
// in a user namespace of its own (confine.NetNS). Either way the programs
// keep no capability that leaves or widens it. Where it cannot be made
// (no user namespaces), the run starts nothing (job.Refused), rather than
// run with the host's network.
type Net struct {
	// Allow and Deny are host entries ("registry.npmjs.org",
	// "*.golang.org", "x.org:8443", an IP literal): deny beats allow; an
	// entry without a port allows 80 and 443.
	Allow, Deny []string
	// Ask, when set, is asked about a host no Allow entry names (never
	// about a denied one): yes lets connections to that host and port
	// through for the rest of the run. It must return when ctx is done.
	Ask func(ctx context.Context, host string, port uint16) bool
	// Resolver, when set, resolves names for the proxy (the system's
	// resolver otherwise).
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// AllowInternal lets an allowed name lead to an internal address
	// (loopback, private, link-local): a service of this machine or the
	// local network. Off, such names are refused ("internal address").
	AllowInternal bool
}

// netRun is a run's namespace and proxy.
type netRun struct {
	ns    *confine.NetNS
	proxy *egress.Proxy
	env   []string
	done  chan struct{} // Serve returned

	refused egress.Refusals
}

// start makes n's namespace and proxy.
func (n *Net) start() (*netRun, error) {
	nr := &netRun{done: make(chan struct{})}
	opts := []egress.Option{egress.WithReport(nr.refused.Add)}
	if n.Resolver != nil {
		opts = append(opts, egress.WithResolver(n.Resolver))
	}
	if n.Ask != nil {
		opts = append(opts, egress.WithAsk(n.Ask, 0))
	}
	p, err := egress.New(egress.Policy{Allow: n.Allow, Deny: n.Deny, AllowInternal: n.AllowInternal}, opts...)
	if err != nil {
		return nil, fmt.Errorf("the network allowlist: %w", err)
	}
	ns, err := confine.NewNetNS()
	if err != nil {
		p.Close()
		return nil, err
	}
	l, err := ns.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ns.Close()
		p.Close()
		return nil, fmt.Errorf("the network proxy: %w", err)
	}
	nr.ns, nr.proxy, nr.env = ns, p, p.Env(l.Addr().String())
	go func() { _ = p.Serve(l); close(nr.done) }()
	return nr, nil
}

// lines returns the lines that say what the run's proxy refused.
func (nr *netRun) lines() []string {
	if nr == nil {
		return nil
	}
	return nr.refused.Lines()
}

// close ends the proxy (every connection) and the namespace's thread.
func (nr *netRun) close() {
	if nr == nil {
		return
	}
	nr.proxy.Close()
	<-nr.done
	nr.ns.Close()
}

// startNet makes the run's namespace and proxy when c limits the network.
func (r *run) startNet(c *Confinement) error {
	if c == nil || c.Net == nil {
		return nil
	}
	if !c.Network {
		return nil // no network at all: nothing to limit
	}
	nr, err := c.Net.start()
	if err != nil {
		return err
	}
	r.net = nr
	return nil
}

// environ is the proxy's environment for the run's programs.
func (nr *netRun) environ() []string {
	if nr == nil {
		return nil
	}
	return nr.env
}
