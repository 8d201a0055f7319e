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

// TestHosts: a @shell manifest's hosts parse, show when asking, and are
// part of the digest: a host added asks again.
func TestHosts(t *testing.T) {
	m, err := Parse("capability.json", []byte(hostsManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Hosts == nil || len(m.Hosts.Allow) != 1 || m.Hosts.Allow[0] != "registry.npmjs.org" || m.Hosts.Deny[0] != "evil.npmjs.org" {
		t.Fatalf("hosts: %+v", m.Hosts)
	}
	shown := strings.Join(m.Loosens(), "\n")
	if !strings.Contains(shown, `network: may reach registry.npmjs.org`) || !strings.Contains(shown, `network: never evil.npmjs.org`) {
		t.Errorf("the prompt does not show the hosts:\n%s", shown)
	}

	project := t.TempDir()
	dir := writeCap(t, project, "npm-install", hostsManifest, nil)
	before, err := Digest(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir+"/"+ManifestFile, strings.Replace(hostsManifest, `["registry.npmjs.org"]`, `["registry.npmjs.org", "*.evil.example"]`, 1))
	after, err := Digest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Error("a host added to the manifest left its digest as it was: a grant would not ask again")
	}
}

// TestHostsRefused: a malformed entry is an error at its place, and only
// @shell has hosts.
func TestHostsRefused(t *testing.T) {
	cases := []struct{ manifest, want string }{
		{strings.Replace(hostsManifest, `"evil.npmjs.org"`, `"a*.npmjs.org"`, 1), `capability.json:6:55: /hosts/deny/0: a*.npmjs.org: a star stands only`},
		{strings.Replace(hostsManifest, `["registry.npmjs.org"]`, `["x.org:99999"]`, 1), `capability.json:6:23: /hosts/allow/0: x.org:99999: port "99999"`},
		{strings.Replace(hostsManifest, `"deny"`, `"denied"`, 1), `denied`},
		{strings.Replace(hostsManifest, `"allow": ["registry.npmjs.org"]`, `"allow": "registry.npmjs.org"`, 1), `hosts/allow`},
		{`{"name": "w", "description": "w", "environment": "@wasm", "entry": {"module": "w.wasm"}, "hosts": {"allow": ["x.org"]}}`, `hosts`},
		{`{"name": "d", "description": "d", "environment": "@docker", "entry": {"image": "busybox"}, "hosts": {"allow": ["x.org"]}}`, `hosts`},
	}
	for _, c := range cases {
		_, err := Parse("capability.json", []byte(c.manifest))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\ngot %v\nwant %q", c.manifest, err, c.want)
		}
	}
}
