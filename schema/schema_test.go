package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// resolved compiles the published schema in file.
func resolved(t *testing.T, file string) *jsonschema.Resolved {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s does not resolve: %v", file, err)
	}
	return rs
}

// validate checks the JSON text data against rs.
func validate(rs *jsonschema.Resolved, data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return rs.Validate(v)
}

// TestCapabilitySchemaIsTheEmbeddedOne: the published capability schema
// is, byte for byte, the one ccrun validates manifests with.
func TestCapabilitySchemaIsTheEmbeddedOne(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("capability.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, capabilities.Schema()) {
		t.Fatal("schema/capability.schema.json differs from capabilities/capability.schema.json (embedded): copy it over")
	}
}

// TestSchemaIDs: each schema's $id names where it is published.
func TestSchemaIDs(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{
		"ccrun.schema.json":      "https://github.com/ccrun/ccrun/schema/ccrun.schema.json",
		"capability.schema.json": capabilities.SchemaID,
	} {
		if got := resolved(t, file).Schema().ID; got != want {
			t.Errorf("%s: $id = %q; want %q", file, got, want)
		}
	}
}

// jsonBlocks returns the ```json blocks of a Markdown file, with the line
// each starts on.
func jsonBlocks(t *testing.T, file string) map[int][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]byte{}
	var cur *bytes.Buffer
	start := 0
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```json":
			cur, start = new(bytes.Buffer), i+2
		case cur != nil && strings.TrimSpace(line) == "```":
			out[start] = cur.Bytes()
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

// elided stands for a digest the documents shorten to "sha256:…".
var elided = regexp.MustCompile(`"sha256:…"`)

// TestDocumentedFiles validates every ccrun.json and capability.json the
// README and docs/ show against the published schemas, and checks that
// ccrun itself reads them. A block is a capability.json when it has
// "environment", a settings file when it has "permissions", "allowlist"
// or "mode"; other blocks (--json outputs, other programs' files) are not
// ccrun's files. Digests shortened to "sha256:…" count as written out.
func TestDocumentedFiles(t *testing.T) {
	t.Parallel()
	settings := resolved(t, "ccrun.schema.json")
	manifest := resolved(t, "capability.schema.json")
	docs, _ := filepath.Glob("../docs/*.md")
	counts := map[string]int{}
	for _, file := range append([]string{"../README.md"}, docs...) {
		for line, block := range jsonBlocks(t, file) {
			var top map[string]json.RawMessage
			if json.Unmarshal(block, &top) != nil {
				continue // a shape with placeholders, not a file
			}
			block = elided.ReplaceAll(block, []byte(`"sha256:`+strings.Repeat("0", 64)+`"`))
			where := filepath.Base(file) + ":" + strconv.Itoa(line)
			switch {
			case top["environment"] != nil:
				counts[file+" capability"]++
				if err := validate(manifest, block); err != nil {
					t.Errorf("%s: the capability.json shown does not match schema/capability.schema.json: %v", where, err)
				}
				if _, err := capabilities.Parse(where, block); err != nil {
					t.Errorf("%s: ccrun does not read the capability.json shown: %v", where, err)
				}
			case top["permissions"] != nil || top["allowlist"] != nil || top["mode"] != nil:
				counts[file+" settings"]++
				if err := validate(settings, block); err != nil {
					t.Errorf("%s: the ccrun.json shown does not match schema/ccrun.schema.json: %v", where, err)
				}
				if _, err := permission.ParseSettings(block, where, permission.OriginProject); err != nil {
					t.Errorf("%s: ccrun does not read the ccrun.json shown: %v", where, err)
				}
			}
		}
	}
	if counts["../README.md capability"] == 0 || counts["../README.md settings"] == 0 {
		t.Errorf("found %v; want the README's example ccrun.json and capability.json", counts)
	}
}

// TestManifestFilesMatchSchema: the example capabilities and the valid
// test manifests match the published schema.
func TestManifestFilesMatchSchema(t *testing.T) {
	t.Parallel()
	rs := resolved(t, "capability.schema.json")
	examples, _ := filepath.Glob("../examples/.ccrun/capabilities/*/capability.json")
	valid, _ := filepath.Glob("../capabilities/testdata/manifests/valid/*.json")
	if len(examples) == 0 || len(valid) == 0 {
		t.Fatalf("no manifests: examples %v, valid %v", examples, valid)
	}
	for _, f := range append(examples, valid...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(rs, data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// settingsOrigin is the layer a file of a testscript archive is read as.
func settingsOrigin(name string) (permission.Origin, bool) {
	switch name {
	case "ccrun.json":
		return permission.OriginProject, true
	case "ccrun.local.json":
		return permission.OriginLocal, true
	case ".config/ccrun/config.json":
		return permission.OriginUser, true
	}
	return "", false
}

// TestScriptSettingsMatchSchema: every settings file of the CLI's
// testscripts that ccrun reads matches the published schema (the schema is
// never stricter than ccrun), and each one ccrun refuses for a reason the
// schema can say is refused by the schema too.
func TestScriptSettingsMatchSchema(t *testing.T) {
	t.Parallel()
	rs := resolved(t, "ccrun.schema.json")
	scripts, _ := filepath.Glob("../cmd/ccrun/internal/cli/testdata/script/*.txtar")
	n := 0
	for _, script := range scripts {
		a, err := txtar.ParseFile(script)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			origin, ok := settingsOrigin(f.Name)
			if !ok {
				continue
			}
			n++
			where := filepath.Base(script) + ": " + f.Name
			if _, err := permission.ParseSettings(f.Data, f.Name, origin); err != nil {
				continue // meant to be refused: TestSchemaRefuses covers the schema's side
			}
			if err := validate(rs, f.Data); err != nil {
				t.Errorf("%s: ccrun reads it, the schema refuses it: %v", where, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no settings files in the testscripts")
	}
}

// TestSchemaRefuses: files ccrun refuses for their shape, the schema
// refuses too; files that differ from them only where ccrun allows it,
// both accept.
func TestSchemaRefuses(t *testing.T) {
	t.Parallel()
	rs := resolved(t, "ccrun.schema.json")
	digest := `"sha256:` + strings.Repeat("ab", 32) + `"`
	tests := []struct {
		name, data string
		ok         bool
	}{
		{"empty", `{}`, true},
		{"$schema", `{"$schema": "https://github.com/ccrun/ccrun/schema/ccrun.schema.json"}`, true},
		{"every member", `{"mode": "accept-edits", "permissions": {"allow": ["capability:fmt"], "ask": ["run_command:git:*"], "deny": ["web_fetch"]},
			"env": {"pass": ["GOFLAGS"]}, "flags": "no-loosening", "docker": {"engine": "kubernetes", "namespace": "ccrun", "context": "kind", "kubeconfig": "/k", "pool": 4, "pull_secrets": ["regcred", "team-b.ro"]},
			"allowlist": {"capability:fmt": {"grant": "AlwaysThisProject", "digest": ` + digest + `}, "run_docker:ccrun-test:busybox": "AlwaysThisProject", "run_wasm:x.wasm": {"grant": "project"}}}`, true},
		{"top-level allow", `{"allow": ["run_command:git"]}`, false},
		{"unknown permissions member", `{"permissions": {"allwo": []}}`, false},
		{"rule not a string", `{"permissions": {"deny": [42]}}`, false},
		{"unknown mode", `{"mode": "lenient"}`, false},
		{"mode not a string", `{"mode": 1}`, false},
		{"env unknown member", `{"env": {"keep": ["X"]}}`, false},
		{"env.pass not strings", `{"env": {"pass": [1]}}`, false},
		{"flags", `{"flags": "loose"}`, false},
		{"session grant in the project allowlist", `{"allowlist": {"capability:fmt": "AlwaysThisSession"}}`, false},
		{"allowlist entry unknown member", `{"allowlist": {"capability:fmt": {"grant": "AlwaysThisProject", "sha": "x"}}}`, false},
		{"allowlist entry without grant", `{"allowlist": {"capability:fmt": {"digest": ` + digest + `}}}`, false},
		{"short digest", `{"allowlist": {"capability:fmt": {"grant": "AlwaysThisProject", "digest": "sha256:abc"}}}`, false},
		{"allowlist not an object", `{"allowlist": ["capability:fmt"]}`, false},
		{"docker engine", `{"docker": {"engine": "podman"}}`, false},
		{"docker unknown member", `{"docker": {"engnie": "docker"}}`, false},
		{"docker negative pool", `{"docker": {"pool": -1}}`, false},
		{"docker pull secrets not a list", `{"docker": {"pull_secrets": "regcred"}}`, false},
		{"docker pull secret not a name", `{"docker": {"pull_secrets": ["Reg/Cred"]}}`, false},
		{"docker pull secret ending in a dash", `{"docker": {"pull_secrets": ["regcred-"]}}`, false},
		{"shell", `{"shell": {"sandbox": "required", "writable": ["~/.cache/go-build", "/opt/cache"]}}`, true},
		{"shell sandbox unknown", `{"shell": {"sandbox": "maybe"}}`, false},
		{"shell sandbox not a string", `{"shell": {"sandbox": true}}`, false},
		{"shell sandbox null", `{"shell": {"sandbox": null}}`, false},
		{"shell member in another case", `{"shell": {"Sandbox": "off"}}`, false},
		{"shell unknown member", `{"shell": {"sandbox": "on", "tier": "workspace"}}`, false},
		{"shell writable relative", `{"shell": {"writable": ["cache"]}}`, false},
		{"shell writable not a list", `{"shell": {"writable": "/opt/cache"}}`, false},
		{"shell not an object", `{"shell": "off"}`, false},
		{"env.pass empty name", `{"env": {"pass": [""]}}`, false},
		{"env.pass null", `{"env": {"pass": null}}`, false},
		{"env member in another case", `{"env": {"Pass": ["X"]}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			schemaErr := validate(rs, []byte(tt.data))
			if (schemaErr == nil) != tt.ok {
				t.Errorf("schema: err = %v; want ok %v", schemaErr, tt.ok)
			}
			// ccrun agrees: the user config may say all of this, and a
			// project allowlist is read by OpenProject.
			_, err := permission.ParseSettings([]byte(tt.data), "x.json", permission.OriginUser)
			if err == nil && strings.Contains(tt.data, `"allowlist"`) {
				err = openProjectAllowlist(t, tt.data)
			}
			if (err == nil) != tt.ok {
				t.Errorf("ccrun: err = %v; want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, errclass.InvalidConfig) {
				t.Errorf("ccrun: err = %v; want ErrInvalidConfig", err)
			}
		})
	}
}

// openProjectAllowlist reads data as a project's ccrun.json, allowlist
// included.
func openProjectAllowlist(t *testing.T, data string) error {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := allowlist.LoadProject(filepath.Join(dir, "ccrun.json"))
	return err
}
