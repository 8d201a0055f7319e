package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"

	"github.com/ccrun/ccrun/runtime/docker/internal/relay"
	"github.com/ccrun/ccrun/runtime/job"
)

// Egress is how a container reaches the network by name only: through an
// egress proxy (internal/egress) that ccrun serves on a unix socket of the
// host, which checks every destination. See RunBehind.
type Egress struct {
	// Socket is the proxy's unix socket, absolute. The relay connects to
	// it as ccrun's own uid (root with every capability dropped when
	// ccrun runs as root), so a socket of ccrun's owner, mode 0600, is
	// enough.
	Socket string
	// Env is the environment that points a program at the proxy as it
	// reaches it at addr (HOST:PORT): egress.Proxy.Env.
	Env func(addr string) []string
}

// relayPort is the port the relay listens on in its container.
const relayPort = "3128"

// Where the relay and the proxy's socket are bound in the relay's
// container.
const (
	relayPath  = "/.ccrun-relay"
	socketPath = "/.ccrun-egress.sock"
)

// relayReady bounds how long the relay may take to say it listens.
const relayReady = 20 * time.Second

// behind is the internal network of a run behind the proxy, and the
// environment that points the program at the relay on it.
type behind struct {
	network string
	env     []string
}

type behindKey struct{}

// unreachableDNS is the resolver the network's own DNS server (the
// engine's, at 127.0.0.11 in the container) is told to forward to: an
// address of TEST-NET-1 (RFC 5737), never routed. An engine may forward to
// a resolver of the host's loopback (systemd-resolved's 127.0.0.53, which
// a container would otherwise inherit) from the host's namespace, which
// would let names out; to any other address it forwards from the
// container's, where nothing is reachable.
const unreachableDNS = "192.0.2.1"

// apply puts a container of the run on the network, pointed at the proxy,
// with no IPv6 (the network has none: a link-local address must not reach
// the host either) and no resolver that answers.
func (b *behind) apply(cfg *container.Config, hc *container.HostConfig) {
	cfg.Env = append(cfg.Env, b.env...)
	hc.NetworkMode = container.NetworkMode(b.network)
	hc.Sysctls = map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
	hc.DNS, hc.DNSSearch, hc.DNSOptions = []string{unreachableDNS}, nil, nil
}

// RunBehind runs s as Run does, but with a network whose only way out is
// the egress proxy listening on eg.Socket: the container sits on an
// internal Docker network of its own (internal: the engine routes nothing
// off it; and the host's bridge on it has no IPv4 address, so nothing on
// the host is reachable either: not the proxy's host, not its other
// services, not a resolver) whose only other member is a relay container
// (runtime/docker/internal/relay, ccrun's static program, run from the
// call's own image, bound read-only) that hands every connection to its
// port, byte for byte, to the proxy. HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and
// NO_PROXY (eg.Env) name the relay. A program that ignores them reaches
// nothing: no direct TCP, no UDP, no DNS. The network and the relay are
// removed when the run ends. s.Network must be "" or "none", and s is
// never pooled.
func (e *Executor) RunBehind(ctx context.Context, s Spec, eg Egress) (*job.Result, error) {
	if s.Network != "" && s.Network != DefaultNetwork {
		return nil, newError(ErrInvalidArgument, nil, "docker: spec: network %q behind an egress proxy: want none (the proxy is the only way out)", s.Network)
	}
	if eg.Env == nil || !strings.HasPrefix(eg.Socket, "/") {
		return nil, newError(ErrInvalidArgument, nil, "docker: egress: want the proxy's absolute socket path and its Env, got %q", eg.Socket)
	}
	if _, err := os.Stat(eg.Socket); err != nil {
		return nil, newError(ErrInvalidArgument, err, "docker: egress: the proxy's socket")
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	s.Pool = false
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	name := "ccrun-egress-" + randHex(6)
	nw, err := e.eng.NetworkCreate(kctx, name, network.CreateOptions{Driver: "bridge", Internal: true, EnableIPv6: new(bool),
		Options: map[string]string{"com.docker.network.bridge.inhibit_ipv4": "true"}, Labels: e.labels()})
	if err != nil {
		return nil, classify(e.host, "create the egress network", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = e.eng.NetworkRemove(rctx, nw.ID)
	}()
	addr, stop, err := e.startRelay(ctx, s, name, eg.Socket)
	if err != nil {
		return nil, err
	}
	defer stop()
	return e.Run(context.WithValue(ctx, behindKey{}, &behind{network: name, env: eg.Env(addr)}), s)
}

// startRelay starts the relay on network, from the call's image, and
// returns its address there once it listens, and how to remove it.
func (e *Executor) startRelay(ctx context.Context, s Spec, network, socket string) (addr string, stop func(), err error) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relayReady)
	defer cancel()
	if _, _, err := e.onceCode(); err != nil { // the engine's architecture, asked
		return "", nil, newError(ErrUnavailable, err, "docker: egress: no relay for the engine")
	}
	arch := goArch(e.arch.machine)
	path, err := e.programFile("relay", arch, relay.ELF(arch))
	if err != nil {
		return "", nil, err
	}
	pids := int64(512) // a process a connection: a package manager opens dozens at once
	cfg := &container.Config{Image: s.Image, Entrypoint: []string{relayPath}, Cmd: []string{relayPort, socketPath},
		User: fmt.Sprintf("%d:%d", os.Geteuid(), os.Getegid()), AttachStdout: true, AttachStderr: true, Labels: e.labels()}
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(network), ReadonlyRootfs: true, CapDrop: []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"}, AutoRemove: true, LogConfig: container.LogConfig{Type: "none"},
		Sysctls: map[string]string{"net.ipv6.conf.all.disable_ipv6": "1"}, DNS: []string{unreachableDNS},
		Resources: container.Resources{Memory: 64 << 20, MemorySwap: 64 << 20, NanoCPUs: 1e9, PidsLimit: &pids},
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: path, Target: relayPath, ReadOnly: true},
			{Type: mount.TypeBind, Source: socket, Target: socketPath, ReadOnly: true},
		},
	}
	id, err := e.create(kctx, cfg, hc, "")
	if err != nil {
		return "", nil, err
	}
	stop = func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = e.eng.ContainerRemove(rctx, id, container.RemoveOptions{Force: true})
	}
	fail := func(err error) (string, func(), error) { stop(); return "", nil, err }
	hj, err := e.eng.ContainerAttach(kctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return fail(classify(e.host, "attach to the relay", err))
	}
	defer hj.Close()
	if err := e.eng.ContainerStart(kctx, id, container.StartOptions{}); err != nil {
		return fail(classify(e.host, "start the relay", err))
	}
	// The attach stream is multiplexed (no TTY): the word "ready" arrives
	// after an 8-byte frame header.
	line, err := bufio.NewReader(hj.Reader).ReadString('\n')
	if err != nil || !strings.HasSuffix(line, "ready\n") {
		return fail(newError(ErrUnavailable, err, "docker: egress: the relay did not start (it said %q)", line))
	}
	ins, err := e.eng.ContainerInspect(kctx, id)
	if err != nil {
		return fail(classify(e.host, "inspect the relay", err))
	}
	ep := ins.NetworkSettings.Networks[network]
	if ep == nil || ep.IPAddress == "" {
		return fail(newError(ErrUnavailable, nil, "docker: egress: the relay has no address on %s", network))
	}
	return ep.IPAddress + ":" + relayPort, stop, nil
}
