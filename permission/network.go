package permission

import (
	"fmt"
	"slices"

	"github.com/ccrun/ccrun/internal/egress"
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/internal/jsonpos"
)

// NetworkSettings is the "network" member of a settings file: the hosts an
// approved @shell command of the workspace tier may reach, through ccrun's
// egress proxy. {"network": {"allow": ["registry.npmjs.org",
// "*.golang.org"], "deny": ["evil.example"]}}. Each entry is HOST,
// *.DOMAIN, HOST:PORT or an IP literal (docs/network.md); deny beats allow.
// The managed policy, the user config and a trusted project's
// ccrun.local.json may say it; a committed ccrun.json may not (which hosts
// a command reaches is not the repository's choice).
type NetworkSettings struct {
	Allow, Deny []string
}

// parseNetwork reads the "network" member v of the file name, strictly:
// exact member names, each once, arrays of strings, each error at its line
// and column. The entries' own syntax is checked where the policy is made
// (egress.New): the settings only carry them.
func parseNetwork(data []byte, v *jsonpos.Value, name string, origin Origin) (*NetworkSettings, error) {
	bad := func(off int, format string, args ...any) error {
		return fmt.Errorf("%s:%s: network%s: %w", name, jsonpos.Position(data, off), fmt.Sprintf(format, args...), errclass.InvalidConfig)
	}
	if origin == OriginProject {
		return nil, bad(v.Start, ": the hosts a command may reach are set in the managed policy, the user config or ccrun.local.json, not in a committed project file")
	}
	ms, err := members(v, bad, `{"allow": ["HOST", …], "deny": ["HOST", …]}`)
	if err != nil {
		return nil, err
	}
	n := &NetworkSettings{}
	for _, m := range ms {
		var list *[]string
		switch m.Name {
		case "allow":
			list = &n.Allow
		case "deny":
			list = &n.Deny
		default:
			return nil, bad(m.At, ": unknown member %q (want allow or deny)", m.Name)
		}
		if m.Value.Kind != jsonpos.Array {
			return nil, bad(m.Value.Start, ".%s: want an array of host names", m.Name)
		}
		for _, e := range m.Value.Elems {
			text, ok := e.Text()
			if !ok || text == "" {
				return nil, bad(e.Start, ".%s: want a host name (HOST, *.DOMAIN, HOST:PORT), got %s", m.Name, e.Raw)
			}
			if err := egress.CheckEntry(text); err != nil {
				return nil, bad(e.Start, ".%s: %q: %v", m.Name, text, err)
			}
			*list = append(*list, text)
		}
	}
	return n, nil
}

// NetworkHosts is the network the layers give an approved @shell command:
// the hosts every layer's "network" allows, plus extra (a call's own,
// --allow-host), and the hosts any layer denies. Deny beats allow, so a
// host the managed policy denies no other layer can allow; any layer may
// deny more. limited is false when no layer says "network" and extra is
// empty: the command then keeps the host's network, as before allowlists.
// The untrusted project's ccrun.local.json does not count: Untrusted drops
// it.
func NetworkHosts(layers []*Settings, extra []string) (allow, deny []string, limited bool) {
	for _, s := range layers {
		if s == nil || s.Network == nil {
			continue
		}
		limited = true
		allow = append(allow, s.Network.Allow...)
		deny = append(deny, s.Network.Deny...)
	}
	if len(extra) > 0 {
		limited = true
		allow = append(allow, extra...)
	}
	slices.Sort(allow)
	slices.Sort(deny)
	return slices.Compact(allow), slices.Compact(deny), limited
}
