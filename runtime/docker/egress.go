package docker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/ccrun/ccrun/runtime/job"
)

// Egress is how a container reaches the network by name only: through an
// egress proxy (internal/egress) that ccrun serves on a unix socket of the
// host, which checks every destination. See RunBehind.
type Egress struct {
	// Socket is the proxy's unix socket, absolute. The relay connects to
	// it as ccrun's own uid (root with every capability dropped when
	// ccrun runs as root), so a socket of ccrun's owner, mode 0600, is
	// enough. RunBehind hard-links it into the directory of the relay
	// that serves the run, for the run: best on the file system of the
	// temporary directory (os.TempDir), else the run has a relay of its
	// own.
	Socket string
	// Env is the environment that points a program at the proxy as it
	// reaches it at addr (HOST:PORT): egress.Proxy.Env.
	Env func(addr string) []string
}

// relayPort is the port the relay listens on, on its loopback, which a
// call's container shares.
const relayPort = "3128"

// Where the relay, and the directory where each call's proxy socket is
// linked, are bound in the relay's container.
const (
	relayPath  = "/.ccrun-relay"
	relayDir   = "/.ccrun-egress"
	socketName = "egress.sock"
)

// relayReady bounds how long the relay may take to say it listens, at its
// start or after a reset.
const relayReady = 20 * time.Second

// maxIdleRelays is how many relays an Executor keeps for the next calls.
const maxIdleRelays = 2

// behind is the network of a run behind the proxy: the relay's network
// namespace, which the run's container joins, and the environment that
// points the program at the relay there. id is the run's container, once
// created.
type behind struct {
	relay string
	env   []string
	id    string
}

type behindKey struct{}

// unreachableDNS is the resolver the relay's container (and so a call's,
// which shares its /etc/resolv.conf) is given: an address of TEST-NET-1
// (RFC 5737), never routed, and unreachable anyway from a network
// namespace with nothing but loopback. Without it the container would
// name the host's resolver.
const unreachableDNS = "192.0.2.1"

// apply puts a container of the run in the relay's network namespace,
// pointed at the relay. No DNS may be set with that network mode: the
// relay's resolver is the container's.
func (b *behind) apply(cfg *container.Config, hc *container.HostConfig) {
	cfg.Env = append(cfg.Env, b.env...)
	hc.NetworkMode = container.NetworkMode("container:" + b.relay)
	hc.DNS, hc.DNSSearch, hc.DNSOptions = nil, nil, nil
}

// RunBehind runs s as Run does, but with a network whose only way out is
// the egress proxy listening on eg.Socket. The container joins the network
// namespace of a relay container (runtime/docker/internal/relay, ccrun's
// static program, run with network none: nothing but loopback, so nothing
// of the host is reachable, not the proxy's host, not its other services,
// not a resolver) which hands every connection to its port on loopback,
// byte for byte, to the proxy. HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and
// NO_PROXY (eg.Env) name the relay. A program that ignores them reaches
// nothing: no direct TCP, no UDP, no DNS. s.Network must be "" or "none",
// and s is never pooled.
//
// The relay is kept for the next call: it serves one call at a time, and
// reaches only the proxy of the call it serves (eg.Socket is hard-linked
// into the relay's directory for the run, and removed after). Before it
// serves another, the run's container is seen gone and the relay is reset:
// every connection of the run is killed and its listener made again, so
// nothing of one call reaches another call's proxy or container. Relays
// of different calls at once are different network namespaces. Close
// removes the idle relays; a relay whose ccrun is gone ends by itself (its
// stdin closes), and GC removes what is left. Where the socket cannot be
// linked there (another file system), the run gets a relay of its own,
// bound to the socket, removed after it.
func (e *Executor) RunBehind(ctx context.Context, s Spec, eg Egress) (*job.Result, error) {
	if s.Network != "" && s.Network != DefaultNetwork {
		return nil, newError(ErrInvalidArgument, nil, "docker: spec: network %q behind an egress proxy: want none (the proxy is the only way out)", s.Network)
	}
	if eg.Env == nil || !strings.HasPrefix(eg.Socket, "/") {
		return nil, newError(ErrInvalidArgument, nil, "docker: egress: want the proxy's absolute socket path and its Env, got %q", eg.Socket)
	}
	if fi, err := os.Stat(eg.Socket); err != nil || fi.Mode().Type() != fs.ModeSocket {
		return nil, newError(ErrInvalidArgument, err, "docker: egress: the proxy's socket %s", eg.Socket)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	s.Pool = false
	r, link, err := e.takeRelay(ctx, s, eg.Socket)
	if err != nil {
		return nil, err
	}
	b := &behind{relay: r.id, env: eg.Env("127.0.0.1:" + relayPort)}
	res, err := e.Run(context.WithValue(ctx, behindKey{}, b), s)
	if link != "" {
		if rmErr := os.Remove(link); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			// the call's proxy would stay reachable through it: this
			// relay serves no other call
			e.dropRelay(r)
			return res, err
		}
	}
	e.putRelay(r, b.id)
	return res, err
}
