package capabilities

import (
	"strings"
	"testing"
)

const hostsManifest = `{
  "name": "npm-install",
  "description": "npm install",
  "environment": "@shell",
  "entry": {"command": "npm install"},
  "hosts": {"allow": ["registry.npmjs.org"], "deny": ["evil.npmjs.org"]}
}`

// dockerHostsManifest is hostsManifest's @docker twin.
var dockerHostsManifest = strings.Replace(strings.Replace(hostsManifest, `"@shell"`, `"@docker"`, 1),
	`{"command": "npm install"}`, `{"image": "node:22", "command": ["npm", "install"]}`, 1)

// TestHosts: a @shell or @docker manifest's hosts parse, show when
// asking, and are part of the digest: a host added asks again.
func TestHosts(t *testing.T) {
	for _, manifest := range []string{hostsManifest, dockerHostsManifest} {
		m, err := Parse("capability.json", []byte(manifest))
		if err != nil {
			t.Fatal(err)
		}
		if m.Hosts == nil || len(m.Hosts.Allow) != 1 || m.Hosts.Allow[0] != "registry.npmjs.org" || m.Hosts.Deny[0] != "evil.npmjs.org" {
			t.Fatalf("%s: hosts: %+v", m.Environment, m.Hosts)
		}
		shown := strings.Join(m.Loosens(), "\n")
		if !strings.Contains(shown, `network: may reach registry.npmjs.org`) || !strings.Contains(shown, `network: never evil.npmjs.org`) {
			t.Errorf("%s: the prompt does not show the hosts:\n%s", m.Environment, shown)
		}

		project := t.TempDir()
		dir := writeCap(t, project, "npm-install", manifest, nil)
		before, err := Digest(dir)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir+"/"+ManifestFile, strings.Replace(manifest, `["registry.npmjs.org"]`, `["registry.npmjs.org", "*.evil.example"]`, 1))
		after, err := Digest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if before == after {
			t.Errorf("%s: a host added to the manifest left its digest as it was: a grant would not ask again", m.Environment)
		}
	}
}

// TestHostsRefused: a malformed entry is an error at its place, @wasm has
// no hosts (no network), and @docker's cannot come with the engine's
// network.
func TestHostsRefused(t *testing.T) {
	cases := []struct{ manifest, want string }{
		{strings.Replace(hostsManifest, `"evil.npmjs.org"`, `"a*.npmjs.org"`, 1), `capability.json:6:55: /hosts/deny/0: a*.npmjs.org: a star stands only`},
		{strings.Replace(hostsManifest, `["registry.npmjs.org"]`, `["x.org:99999"]`, 1), `capability.json:6:23: /hosts/allow/0: x.org:99999: port "99999"`},
		{strings.Replace(hostsManifest, `"deny"`, `"denied"`, 1), `denied`},
		{strings.Replace(hostsManifest, `"allow": ["registry.npmjs.org"]`, `"allow": "registry.npmjs.org"`, 1), `hosts/allow`},
		{`{"name": "w", "description": "w", "environment": "@wasm", "entry": {"module": "w.wasm"}, "hosts": {"allow": ["x.org"]}}`, `hosts`},
		{`{"name": "d", "description": "d", "environment": "@docker", "entry": {"image": "busybox"}, "network": "bridge", "hosts": {"allow": ["x.org"]}}`,
			`/hosts: with network bridge: a tool whose hosts are named reaches them only through ccrun's proxy`},
	}
	for _, c := range cases {
		_, err := Parse("capability.json", []byte(c.manifest))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\ngot %v\nwant %q", c.manifest, err, c.want)
		}
	}
}
