package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// TestPolicyCheck: the lists' semantics — names, wildcards, ports, IP
// literals, deny beats allow.
func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		policy Policy
		cases  map[string]Reason // HOST:PORT as a client sends it → want
	}{
		{
			name: "names and wildcards",
			policy: Policy{
				Allow: []string{"registry.npmjs.org", "*.golang.org", "x.org:8443", "192.0.2.7", "[2001:db8::1]:443"},
				Deny:  []string{"bad.golang.org", "*.evil.golang.org:443"},
			},
			cases: map[string]Reason{
				"registry.npmjs.org:443":   "",
				"registry.npmjs.org:80":    "",
				"REGISTRY.npmjs.ORG.:443":  "",
				"registry.npmjs.org:8080":  ReasonPort,
				"npmjs.org:443":            ReasonNotAllowed,
				"xregistry.npmjs.org:443":  ReasonNotAllowed,
				"proxy.golang.org:443":     "",
				"a.b.golang.org:443":       "",
				"golang.org:443":           ReasonNotAllowed, // *.x matches subdomains, not x
				"xgolang.org:443":          ReasonNotAllowed,
				"golang.org.evil.test:443": ReasonNotAllowed,
				"proxy.golang.org:22":      ReasonPort,
				"bad.golang.org:443":       ReasonDenied,
				"bad.golang.org:22":        ReasonDenied, // a deny without a port denies every port
				"a.bad.golang.org:443":     "",           // an exact deny is exact
				"x.evil.golang.org:443":    ReasonDenied,
				"x.evil.golang.org:80":     "", // a deny with a port denies that port
				"evil.golang.org:443":      "",
				"x.org:8443":               "",
				"x.org:443":                ReasonPort, // a port given is the only port
				"192.0.2.7:443":            "",
				"[::ffff:192.0.2.7]:80":    "",
				"192.0.2.7:22":             ReasonPort,
				"192.0.2.8:443":            ReasonIPLiteral,
				"[2001:db8::1]:443":        "",
				"[2001:DB8:0::1]:443":      "",
				"[2001:db8::1]:80":         ReasonPort,
			},
		},
		{
			name:   "any name",
			policy: Policy{Allow: []string{"*"}, Deny: []string{"x.org"}},
			cases: map[string]Reason{
				"anything.example:443": "",
				"localhost:80":         "",
				"x.org:443":            ReasonDenied,
				"a.x.org:443":          "",
				"anything.example:22":  ReasonPort,
				"1.2.3.4:443":          ReasonIPLiteral, // a wildcard never matches an address
				"[::1]:443":            ReasonIPLiteral,
			},
		},
		{
			name:   "deny beats allow",
			policy: Policy{Allow: []string{"*.x.org", "a.x.org:8080", "10.0.0.1"}, Deny: []string{"*", "10.0.0.1:443"}},
			cases: map[string]Reason{
				"a.x.org:443":   ReasonDenied,
				"a.x.org:8080":  ReasonDenied,
				"10.0.0.1:443":  ReasonDenied,
				"10.0.0.1:80":   "", // "*" denies names, not addresses
				"[::1]:80":      ReasonIPLiteral,
				"x.org:443":     ReasonDenied,
				"b.a.x.org:443": ReasonDenied,
			},
		},
		{
			name:   "nothing",
			policy: Policy{},
			cases: map[string]Reason{
				"registry.npmjs.org:443": ReasonNotAllowed,
				"127.0.0.1:80":           ReasonIPLiteral,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := compile(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			for hp, want := range tc.cases {
				host, isIP, port, err := parseHostPort(hp, 0)
				if err != nil {
					t.Errorf("%s: %v", hp, err)
					continue
				}
				if got := c.check(host, isIP, port); got != want {
					t.Errorf("%s: got %q, want %q", hp, got, want)
				}
			}
		})
	}
}

// TestInternalRanges: what a name may not lead to without AllowInternal.
func TestInternalRanges(t *testing.T) {
	t.Parallel()
	for a, want := range map[string]bool{
		"127.0.0.1": true, "127.255.0.9": true, "10.1.2.3": true, "172.16.0.1": true, "172.32.0.1": false,
		"192.168.1.1": true, "169.254.169.254": true, "100.64.0.1": true, "0.0.0.0": true, "0.1.2.3": true,
		"224.0.0.1": true, "255.255.255.255": true, "::": true, "::1": true, "fe80::1": true, "fd00::1": true,
		"ff02::1": true, "::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true, "64:ff9b::a00:1": true, "2002:a00:1::": true,
		"8.8.8.8": false, "151.101.0.1": false, "2a04:4e42::1": false, "::ffff:8.8.8.8": false,
	} {
		if got := isInternal(netip.MustParseAddr(a)); got != want {
			t.Errorf("%s: got %v, want %v", a, got, want)
		}
	}
}

// FuzzNormalizeHost: a normalized host is a fixed point; a name is
// lowercase, no address, and its last label begins with a letter; no
// input makes an entry or a check panic.
func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{
		"registry.npmjs.org", "REGISTRY.NPMJS.ORG.", "*.golang.org", "127.0.0.1", "[::1]", "::ffff:1.2.3.4",
		"2130706433", "0x7f.1", "127.1", "a..b", "fe80::1%eth0", "xn--bcher-kva.example", "_srv.x.org",
	} {
		f.Add(s)
	}
	pol, err := compile(Policy{Allow: []string{"*.golang.org", "x.org:8443", "127.0.0.1"}, Deny: []string{"bad.golang.org"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseEntry(s)
		host, isIP, err := normalizeHost(s)
		if err != nil {
			return
		}
		again, againIP, err := normalizeHost(host)
		if err != nil || again != host || againIP != isIP {
			t.Fatalf("%q → %q → %q %v", s, host, again, err)
		}
		if !isIP {
			if _, err := netip.ParseAddr(host); err == nil {
				t.Fatalf("%q: a name that is an address: %q", s, host)
			}
			if host != strings.ToLower(host) {
				t.Fatalf("%q: not lowercase: %q", s, host)
			}
			last := host[strings.LastIndexByte(host, '.')+1:]
			if last[0] < 'a' || last[0] > 'z' {
				t.Fatalf("%q: last label %q", s, last)
			}
		}
		pol.check(host, isIP, 443)
	})
}
