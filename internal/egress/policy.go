package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
)

// Policy says which destinations a call's connections may reach. The zero
// Policy allows nothing.
//
// An entry of Allow or Deny is HOST or HOST:PORT, where HOST is
//
//   - a host name: "registry.npmjs.org" (matched after lowercasing both
//     sides and dropping one trailing dot; names are ASCII, an
//     internationalized name is written in its xn-- form);
//   - "*.SUFFIX": every name that ends in ".SUFFIX" with at least one label
//     before it — "*.golang.org" matches "proxy.golang.org" and
//     "a.b.golang.org", never "golang.org" itself (list both to allow both);
//     the star stands only as the whole first label;
//   - "*": every host name (not an IP literal);
//   - an IP literal: "192.0.2.7", "[2001:db8::1]" (an IPv4-mapped IPv6
//     address is the IPv4 address).
//
// A connection to an IP literal is allowed only by an entry naming that very
// address: no wildcard matches an address. PORT is 1–65535. An Allow entry
// without a port allows ports 80 and 443 only; a Deny entry without a port
// denies every port. Deny beats Allow.
type Policy struct {
	// Allow lists the destinations a connection may reach. Default: none.
	Allow []string
	// Deny lists destinations refused even when Allow matches them.
	// Default: none.
	Deny []string
	// AllowInternal lets an allowed name lead to an internal address:
	// loopback, private (RFC 1918, unique-local), shared (100.64.0.0/10),
	// link-local (so the cloud metadata address 169.254.169.254),
	// unspecified, multicast or reserved. Default false: such an address is
	// never connected to for a name, so that a name someone else resolves
	// cannot lead the sandbox to the host's own services or the local
	// network. An IP literal allowed literally is connected to whatever its
	// class.
	AllowInternal bool
}

// Reason says why a connection was refused.
type Reason string

// The reasons of a Refusal.
const (
	ReasonDenied     Reason = "denied"               // a Deny entry names the host
	ReasonNotAllowed Reason = "not allowed"          // no Allow entry names the host
	ReasonPort       Reason = "port not allowed"     // Allow names the host, with other ports
	ReasonIPLiteral  Reason = "ip literal"           // an address no Allow entry names literally
	ReasonInvalid    Reason = "invalid"              // not a host name, or not a request the proxy serves
	ReasonMismatch   Reason = "host mismatch"        // the Host header names another host than the request
	ReasonSNI        Reason = "sni mismatch"         // the TLS server name is not the tunnel's host
	ReasonInternal   Reason = "internal address"     // the name resolves only to internal addresses
	ReasonUnresolved Reason = "unresolved"           // the name does not resolve
	ReasonAskDenied  Reason = "denied when asked"    // the ask hook said no
	ReasonNoAnswer   Reason = "no answer when asked" // the ask hook did not answer in time
)

// defaultPorts are the ports an Allow entry without a port allows.
var defaultPorts = []uint16{80, 443}

// entry is one compiled Allow or Deny entry.
type entry struct {
	text   string
	ip     netip.Addr // an IP literal, when valid
	name   string     // an exact name
	suffix string     // ".x.org" for "*.x.org"
	any    bool       // "*"
	port   uint16     // 0: none given
}

// compiled is a Policy checked and parsed by compile.
type compiled struct {
	allow, deny   []entry
	allowInternal bool
}

func compile(p Policy) (compiled, error) {
	c := compiled{allowInternal: p.AllowInternal}
	for _, s := range p.Allow {
		e, err := parseEntry(s)
		if err != nil {
			return c, fmt.Errorf("egress: allow %q: %w", s, err)
		}
		c.allow = append(c.allow, e)
	}
	for _, s := range p.Deny {
		e, err := parseEntry(s)
		if err != nil {
			return c, fmt.Errorf("egress: deny %q: %w", s, err)
		}
		c.deny = append(c.deny, e)
	}
	return c, nil
}

// CheckEntry reports whether s is an entry a Policy's Allow or Deny may
// hold (HOST, *.DOMAIN, *, HOST:PORT, an IP literal), and if not, why, as
// an error of class errdefs.ErrInvalidArgument: for the readers of
// settings files and manifests, which place it at its line and column.
func CheckEntry(s string) error {
	_, err := parseEntry(s)
	return err
}

func parseEntry(s string) (entry, error) {
	e := entry{text: s}
	host, port, err := splitEntry(s)
	if err != nil {
		return e, err
	}
	if port != "" {
		if e.port, err = parsePort(port); err != nil {
			return e, err
		}
	}
	switch {
	case host == "*":
		e.any = true
	case strings.HasPrefix(host, "*."):
		name, isIP, err := normalizeHost(host[2:])
		if err != nil || isIP {
			return e, fmt.Errorf("want *.NAME: %w", errdefs.ErrInvalidArgument)
		}
		e.suffix = "." + name
	case strings.Contains(host, "*"):
		return e, fmt.Errorf("a star stands only as the whole first label (*.x.org) or alone: %w", errdefs.ErrInvalidArgument)
	default:
		h, isIP, err := normalizeHost(host)
		if err != nil {
			return e, err
		}
		if isIP {
			e.ip = netip.MustParseAddr(h)
		} else {
			e.name = h
		}
	}
	return e, nil
}

// splitEntry splits HOST[:PORT], HOST being a name, a bracketed IPv6
// literal, or a bare IPv6 literal (which then has no port).
func splitEntry(s string) (host, port string, err error) {
	if s == "" {
		return "", "", fmt.Errorf("empty: %w", errdefs.ErrInvalidArgument)
	}
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]")
		if i < 0 {
			return "", "", fmt.Errorf("unclosed [: %w", errdefs.ErrInvalidArgument)
		}
		host, rest := s[:i+1], s[i+1:]
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("want [IPv6]:PORT: %w", errdefs.ErrInvalidArgument)
		}
		return host, rest[1:], nil
	}
	if strings.Count(s, ":") > 1 {
		return s, "", nil // a bare IPv6 literal
	}
	if i := strings.LastIndex(s, ":"); i >= 0 {
		return s[:i], s[i+1:], nil
	}
	return s, "", nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '+' {
		return 0, fmt.Errorf("port %q: want 1-65535: %w", s, errdefs.ErrInvalidArgument)
	}
	return uint16(n), nil
}

// normalizeHost returns the canonical form of a destination host: an IP
// literal (brackets removed, IPv4-mapped IPv6 unmapped) in netip's text,
// or a host name lowercased, without its trailing dot. A name is ASCII
// letters, digits, '-' and '_' in dot-separated labels of 1–63 characters,
// at most 253 in all, and its last label starts with a letter: so that no
// numeric form a C resolver would read as an address ("127.1",
// "2130706433", "0x7f.1") passes as a name.
func normalizeHost(s string) (host string, isIP bool, err error) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		a, err := netip.ParseAddr(s[1 : len(s)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false, fmt.Errorf("host %q: want [IPv6]: %w", s, errdefs.ErrInvalidArgument)
		}
		return a.Unmap().String(), true, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return "", false, fmt.Errorf("host %q: an address with a zone: %w", s, errdefs.ErrInvalidArgument)
		}
		return a.Unmap().String(), true, nil
	}
	name := strings.TrimSuffix(s, ".")
	if name == "" || len(name) > 253 {
		return "", false, fmt.Errorf("host %q: want a host name: %w", s, errdefs.ErrInvalidArgument)
	}
	b := []byte(name)
	label := 0
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case c == '.':
			if label == 0 {
				return "", false, fmt.Errorf("host %q: empty label: %w", s, errdefs.ErrInvalidArgument)
			}
			label = 0
			continue
		default:
			return "", false, fmt.Errorf("host %q: want letters, digits, '-', '_' and '.': %w", s, errdefs.ErrInvalidArgument)
		}
		label++
		if label > 63 {
			return "", false, fmt.Errorf("host %q: a label longer than 63: %w", s, errdefs.ErrInvalidArgument)
		}
	}
	last := b[strings.LastIndexByte(string(b), '.')+1:]
	if len(last) == 0 || last[0] < 'a' || last[0] > 'z' {
		return "", false, fmt.Errorf("host %q: the last label must start with a letter: %w", s, errdefs.ErrInvalidArgument)
	}
	return string(b), false, nil
}

// parseHostPort splits and normalizes HOST[:PORT]; a missing port is
// defPort, or an error when defPort is 0.
func parseHostPort(s string, defPort uint16) (host string, isIP bool, port uint16, err error) {
	h, ps, err := net.SplitHostPort(s)
	if err != nil {
		if defPort == 0 {
			return "", false, 0, fmt.Errorf("want HOST:PORT: %w", errdefs.ErrInvalidArgument)
		}
		h, ps = s, ""
	}
	port = defPort
	if ps != "" {
		if port, err = parsePort(ps); err != nil {
			return "", false, 0, err
		}
	} else if defPort == 0 {
		return "", false, 0, fmt.Errorf("want HOST:PORT: %w", errdefs.ErrInvalidArgument)
	}
	host, isIP, err = normalizeHost(h)
	return host, isIP, port, err
}

// matches says whether e names host (normalized) on port.
func (e entry) matches(host string, isIP bool, port uint16, ports []uint16) bool {
	if !e.matchesHost(host, isIP) {
		return false
	}
	if e.port != 0 {
		return e.port == port
	}
	if ports == nil {
		return true
	}
	for _, p := range ports {
		if p == port {
			return true
		}
	}
	return false
}

func (e entry) matchesHost(host string, isIP bool) bool {
	if isIP {
		return e.ip.IsValid() && e.ip.String() == host
	}
	switch {
	case e.any:
		return true
	case e.suffix != "":
		return len(host) > len(e.suffix) && strings.HasSuffix(host, e.suffix)
	default:
		return e.name == host
	}
}

// check decides host (normalized) and port by the lists alone: "" when
// allowed, else why not.
func (c compiled) check(host string, isIP bool, port uint16) Reason {
	for _, e := range c.deny {
		if e.matches(host, isIP, port, nil) {
			return ReasonDenied
		}
	}
	for _, e := range c.allow {
		if e.matches(host, isIP, port, defaultPorts) {
			return ""
		}
	}
	for _, e := range c.allow {
		if e.matchesHost(host, isIP) {
			return ReasonPort
		}
	}
	if isIP {
		return ReasonIPLiteral
	}
	return ReasonNotAllowed
}

// internal are the address ranges a name may not lead to unless
// Policy.AllowInternal (an IPv4-mapped address is unmapped first).
var internal = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",      // "this network": 0.0.0.0 reaches the host
		"10.0.0.0/8",     // private
		"100.64.0.0/10",  // shared: carrier-grade NAT, tailnets
		"127.0.0.0/8",    // loopback
		"169.254.0.0/16", // link-local: the cloud metadata address
		"172.16.0.0/12",  // private
		"192.0.0.0/24",   // protocol assignments
		"192.168.0.0/16", // private
		"198.18.0.0/15",  // benchmarking
		"224.0.0.0/4",    // multicast
		"240.0.0.0/4",    // reserved, and the broadcast address
		"::/128",         // unspecified
		"::1/128",        // loopback
		"64:ff9b::/96",   // NAT64: embeds any IPv4 address
		"64:ff9b:1::/48", // local-use NAT64
		"2001::/32",      // Teredo: embeds an IPv4 address
		"2002::/16",      // 6to4: embeds any IPv4 address
		"fc00::/7",       // unique-local
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// isInternal says whether a is in one of the internal ranges.
func isInternal(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range internal {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// hostPort is HOST:PORT for host normalized, bracketing an IPv6 literal.
func hostPort(host string, port uint16) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
