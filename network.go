package ccrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/audit"
	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/internal/egress"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/shell"
)

// Network is the network a @shell call in the workspace tier, or a
// @docker call, would have (Runtime.Network): what `ccrun check` shows.
type Network struct {
	// Limited is true when some list names hosts (the settings'
	// "network", the capability's "hosts", the call's AllowHosts): an
	// approved command or container then reaches only Allow, never Deny,
	// through ccrun's egress proxy. False: the host's network for @shell,
	// as without lists; for @docker, the network the call asked for.
	Limited bool
	// Allow and Deny are the merged lists; deny beats allow.
	Allow, Deny []string
	// Ask is true when a host no list allows may be asked about
	// (net:HOST:PORT), because the Runtime has an approver.
	Ask bool
}

// String is the network as one line for a person.
func (n Network) String() string {
	if !n.Limited {
		return `the host's network (no "network" list in the settings)`
	}
	s := "only through ccrun's proxy, to: " + strings.Join(n.Allow, ", ")
	if len(n.Allow) == 0 {
		s = "only through ccrun's proxy, to no host"
	}
	if len(n.Deny) > 0 {
		s += "; never: " + strings.Join(n.Deny, ", ")
	}
	if n.Ask {
		s += "; another host is asked about (net:HOST:PORT)"
	} else {
		s += "; another host is refused"
	}
	return s
}

// Network returns the network c would have, were it a @shell call run in
// the workspace tier or a @docker call (whose container, Limited false,
// has the network it asked for: none by default): the settings' lists,
// the capability's hosts, c's AllowHosts. It runs nothing and asks nobody. `ccrun check` prints it
// (Network.String) for a @shell call; a read-only command has no network,
// and one the person runs unconfined the host's.
func (r *Runtime) Network(c *Call) (Network, error) {
	if err := checkHosts(c.AllowHosts); err != nil {
		return Network{}, err
	}
	var hosts *capabilities.Hosts
	if c.Capability != "" {
		capa, err := r.capability(c.Capability)
		if err != nil {
			return Network{}, err
		}
		hosts = capa.Manifest.Hosts
	}
	allow, deny, limited := r.networkHosts(c.AllowHosts, hosts)
	return Network{Limited: limited, Allow: allow, Deny: deny, Ask: limited && r.gate.Approver != nil}, nil
}

// networkHosts merges the settings' lists, a capability's hosts and the
// call's own.
func (r *Runtime) networkHosts(extra []string, capa *capabilities.Hosts) (allow, deny []string, limited bool) {
	if capa != nil {
		extra = append(slices.Clone(extra), capa.Allow...)
	}
	allow, deny, limited = permission.NetworkHosts(r.files, extra)
	if capa != nil {
		limited = true
		deny = append(deny, capa.Deny...)
		slices.Sort(deny)
		deny = slices.Compact(deny)
	}
	return allow, deny, limited
}

// checkHosts checks a call's AllowHosts.
func checkHosts(hosts []string) error {
	for _, h := range hosts {
		if err := egress.CheckEntry(h); err != nil {
			return fmt.Errorf("call: allow host %q: %v (want HOST, *.DOMAIN, HOST:PORT or an IP literal): %w", h, err, ErrInvalidCall)
		}
	}
	return nil
}

// describeHosts checks c's AllowHosts and says, for the person asked, what
// the lists give. For @shell, hosts a call adds to lists the settings
// already keep are a loosening; with no list, they are the only hosts (a
// narrowing). For @docker, whose default is no network, a network through
// ccrun's proxy is a loosening, and one of the engine's (bridge, host)
// cannot be combined with lists. No other environment has a network to
// limit.
func (r *Runtime) describeHosts(req *permission.Request, inv *Invocation, c *Call) error {
	if err := checkHosts(c.AllowHosts); err != nil {
		return err
	}
	var hosts *capabilities.Hosts
	if inv.Capability != nil {
		hosts = inv.Capability.Manifest.Hosts
	}
	switch inv.Environment {
	case ceiling.Shell:
		if len(c.AllowHosts) == 0 {
			return nil
		}
		if _, _, limited := r.networkHosts(nil, hosts); limited {
			req.Loosens = append(req.Loosens, "network: also "+strings.Join(c.AllowHosts, ", ")+" (the call's own allowed hosts)")
			req.Widens = "the call's own allowed hosts widen the network lists (" + strings.Join(c.AllowHosts, ", ") + "): no grant, rule or mode covers them; asked each time"
		}
	case ceiling.Docker:
		allow, deny, limited := r.networkHosts(c.AllowHosts, hosts)
		if !limited {
			return nil
		}
		if n := inv.Network; n != "" && n != "none" {
			return fmt.Errorf("call: network %q and a list of hosts (the settings' \"network\", the capability's \"hosts\" or the call's allowed hosts): "+
				"a container whose hosts are named reaches them only through ccrun's proxy, never the engine's network; drop the network %q (the lists then give the hosts) or the lists: %w",
				n, n, ErrInvalidCall)
		}
		n := Network{Limited: true, Allow: allow, Deny: deny, Ask: r.gate.Approver != nil}
		req.Loosens = append(req.Loosens, "network: "+n.String())
		if len(c.AllowHosts) > 0 {
			req.Widens = "the call's own allowed hosts give the container a network (" + strings.Join(c.AllowHosts, ", ") + "): no grant, rule or mode covers them; asked each time"
		}
	default:
		if len(c.AllowHosts) > 0 {
			return fmt.Errorf("call: allow hosts: only a @shell or @docker call's network is limited to named hosts, not %s's (it has no network): %w", inv.Environment, ErrInvalidCall)
		}
	}
	return nil
}

// limitNetwork gives an approved @shell command in the workspace tier the
// network the lists say (shell.Net), when any list names hosts; without
// one it keeps the host's network, as before lists existed, so that
// commands that need it (npm install, go mod download) do not break for a
// person who has named no host. A host no list allows is asked about
// where g has an approver, else refused.
func (r *Runtime) limitNetwork(g *permission.Gate, t *tracker, c *Call, req *permission.Request, inv *Invocation, d *permission.Decision) {
	var hosts *capabilities.Hosts
	if inv.Capability != nil {
		hosts = inv.Capability.Manifest.Hosts
	}
	allow, deny, limited := r.networkHosts(c.AllowHosts, hosts)
	if !limited {
		return
	}
	conf := inv.Confine
	if conf == nil || !conf.Network {
		if conf == nil {
			d.Diagnostics = append(d.Diagnostics, "the network lists are not enforced: the command runs outside the sandbox, with the host's network")
		}
		return // the read-only tier has no network at all
	}
	conf.Net = &shell.Net{Allow: allow, Deny: deny}
	if g.Approver != nil {
		conf.Net.Ask = func(ctx context.Context, host string, port uint16) bool {
			return r.askHost(ctx, g, t, req, host, port)
		}
	}
}

// askHost asks, under net:HOST:PORT, whether the call of req (@shell or
// @docker) may connect to host: a deny rule refuses, a session grant or an
// allow rule of it lets it through, otherwise the approver is asked with
// the ceiling of the call's environment (Once or the session). The mode alone never widens the lists.
// The decision gets its audit line.
func (r *Runtime) askHost(ctx context.Context, g *permission.Gate, t *tracker, of *permission.Request, host string, port uint16) bool {
	key := keys.NetKey(host, port)
	req := &permission.Request{Tool: keys.NetTool, Environment: of.Environment, Permission: permission.Ask(key),
		Class: permission.ClassNetwork, Dir: of.Dir,
		Display: fmt.Sprintf("connect to %s\nfrom: %s", net.JoinHostPort(host, strconv.Itoa(int(port))), of.Display)}
	d := g.Decide(req)
	switch {
	case d.Verdict == permission.Allow && d.Layer != permission.LayerSession && d.Layer != permission.LayerAllowRule:
		ask := *d
		ask.Verdict, ask.Reason, ask.Offer = permission.AskUser, "the mode does not widen the network lists", ceiling.Of(of.Environment)
		d = &ask
		fallthrough
	case d.Verdict == permission.AskUser:
		d, _ = g.Resolve(ctx, req, d) // a refusal is d's verdict
	}
	if r.audit != nil {
		rec := audit.Record{Kind: "decision", Call: t.out.ID, Tool: req.Tool, Key: key.String(), Environment: string(req.Environment),
			Decision: string(d.Verdict), Layer: string(d.Layer), Reason: d.Reason, Display: req.Display}
		if d.Layer == permission.LayerApprover {
			rec.Grant = d.Grant.String()
		}
		_ = r.audit.Write(rec)
	}
	return d.Allowed()
}

// startEgress puts an allowed @docker call whose lists name hosts behind
// an egress proxy of its own (inv.Egress): the lists' policy, a host no
// list allows asked about where g has an approver, served on a unix socket
// of mode 0600 in a private directory of the temporary one. It returns
// what ends the proxy once the run is over, saying each refusal in res (a
// stderr line, the detail, so the audit line) and removing the directory.
// A call without lists gets the engine's network as before (none unless
// it asked for one; describeHosts refused one with lists).
func (r *Runtime) startEgress(g *permission.Gate, t *tracker, c *Call, req *permission.Request, inv *Invocation) (func(res *job.Result), error) {
	if inv.Environment != ceiling.Docker {
		return func(*job.Result) {}, nil
	}
	var hosts *capabilities.Hosts
	if inv.Capability != nil {
		hosts = inv.Capability.Manifest.Hosts
	}
	allow, deny, limited := r.networkHosts(c.AllowHosts, hosts)
	if !limited {
		return func(*job.Result) {}, nil
	}
	refused := new(egress.Refusals)
	opts := []egress.Option{egress.WithReport(refused.Add)}
	if g.Approver != nil {
		opts = append(opts, egress.WithAsk(func(ctx context.Context, host string, port uint16) bool {
			return r.askHost(ctx, g, t, req, host, port)
		}, 0))
	}
	p, err := egress.New(egress.Policy{Allow: allow, Deny: deny}, opts...)
	if err != nil {
		return nil, fmt.Errorf("@docker: the network allowlist: %w", err)
	}
	dir, err := os.MkdirTemp("", "ccrun-egress-")
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("@docker: the network proxy's directory: %w", err)
	}
	sock := filepath.Join(dir, "egress.sock")
	l, err := listenPrivate(sock)
	if err != nil {
		p.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("@docker: the network proxy: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = p.Serve(l); close(done) }()
	inv.Egress = &backend.Egress{Socket: sock, Env: p.Env}
	return func(res *job.Result) {
		p.Close()
		<-done
		os.RemoveAll(dir)
		if res == nil {
			return
		}
		for _, m := range refused.Lines() {
			line := "ccrun: " + m + "\n"
			res.Stderr = append(res.Stderr, line...)
			if w := inv.Streams.Stderr; w != nil {
				_, _ = io.WriteString(w, line)
			}
			res.Detail = strings.TrimPrefix(res.Detail+"; "+m, "; ")
		}
	}, nil
}

// listenPrivate listens on the unix socket path and makes it mode 0600;
// path's directory must be private (MkdirTemp's 0700), which keeps others
// from the socket before its mode is set.
func listenPrivate(path string) (net.Listener, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
