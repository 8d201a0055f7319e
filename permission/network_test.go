package permission

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/errclass"
)

// TestNetworkSettings: the "network" member is read strictly, each error
// at its line and column, and never from a committed project file.
func TestNetworkSettings(t *testing.T) {
	ok := `{"network": {"allow": ["registry.npmjs.org", "*.golang.org", "x.org:8443"], "deny": ["evil.golang.org"]}}`
	for _, o := range []Origin{OriginManaged, OriginUser, OriginLocal} {
		s, err := ParseSettings([]byte(ok), "f.json", o)
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		if !slices.Equal(s.Network.Allow, []string{"registry.npmjs.org", "*.golang.org", "x.org:8443"}) || !slices.Equal(s.Network.Deny, []string{"evil.golang.org"}) {
			t.Errorf("%s: %+v", o, s.Network)
		}
	}
	bad := []struct {
		origin     Origin
		text, want string
	}{
		{OriginProject, ok, `f.json:1:13: network: the hosts a command may reach are set in the managed policy`},
		{OriginUser, `{"network": ["x.org"]}`, `f.json:1:13: network: want {"allow"`},
		{OriginUser, `{"network": {"allow": "x.org"}}`, `f.json:1:23: network.allow: want an array`},
		{OriginUser, "{\"network\": {\n  \"allow\": [\"x.org\", 7]}}", `f.json:2:22: network.allow: want a host name`},
		{OriginUser, `{"network": {"allow": ["a*.x.org"]}}`, `f.json:1:24: network.allow: "a*.x.org": a star stands only`},
		{OriginUser, `{"network": {"allow": ["127.1"]}}`, `f.json:1:24: network.allow: "127.1": host "127.1": the last label`},
		{OriginUser, `{"network": {"allow": ["x.org:0"]}}`, `network.allow: "x.org:0": port "0"`},
		{OriginUser, `{"network": {"allow": [""]}}`, `network.allow: want a host name`},
		{OriginUser, `{"network": {"hosts": []}}`, `f.json:1:14: network: unknown member "hosts" (want allow or deny)`},
		{OriginUser, `{"network": {"deny": [], "deny": []}}`, `f.json:1:26: network: member "deny" given twice`},
	}
	for _, c := range bad {
		_, err := ParseSettings([]byte(c.text), "f.json", c.origin)
		if err == nil || !errors.Is(err, errclass.InvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: got %v, want %q", c.origin, c.text, err, c.want)
		}
	}
}

// TestNetworkHosts: lists merge across layers, deny beats allow (so a
// managed deny is never lifted), the call's own hosts add to allow, and an
// untrusted project's ccrun.local.json counts for nothing.
func TestNetworkHosts(t *testing.T) {
	parse := func(text string, o Origin) *Settings {
		s, err := ParseSettings([]byte(text), string(o), o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	managed := parse(`{"network": {"deny": ["evil.example"]}}`, OriginManaged)
	user := parse(`{"network": {"allow": ["registry.npmjs.org", "evil.example"]}}`, OriginUser)
	local := parse(`{"network": {"allow": ["*.golang.org"]}}`, OriginLocal)
	if _, _, limited := NetworkHosts([]*Settings{parse(`{}`, OriginUser)}, nil); limited {
		t.Error("no layer says network, yet limited")
	}
	allow, deny, limited := NetworkHosts([]*Settings{managed, user, local}, []string{"proxy.golang.org"})
	if !limited || !slices.Equal(allow, []string{"*.golang.org", "evil.example", "proxy.golang.org", "registry.npmjs.org"}) || !slices.Equal(deny, []string{"evil.example"}) {
		t.Errorf("allow %q deny %q limited %v", allow, deny, limited)
	}
	allow, _, _ = NetworkHosts([]*Settings{managed, user, local.Untrusted()}, nil)
	if slices.Contains(allow, "*.golang.org") {
		t.Errorf("an untrusted ccrun.local.json's hosts count: %q", allow)
	}
	if _, _, limited := NetworkHosts(nil, []string{"x.org"}); !limited {
		t.Error("--allow-host alone does not limit")
	}
}
