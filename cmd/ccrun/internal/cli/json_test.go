package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
)

// requiredKeys lists the JSON members of struct type t that are always
// present (no omitempty).
func requiredKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" || strings.Contains(opts, "omitempty") {
			continue
		}
		keys = append(keys, name)
	}
	return keys
}

// decodeStrict decodes out into a new value of want's type, refusing any
// member the documented shape does not have, and checks that every
// required member is there.
func decodeStrict(t *testing.T, name, out string, want any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	v := reflect.New(reflect.TypeOf(want)).Interface()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: the output does not decode as %T: %v\n%s", name, want, err, out)
	}
	if dec.More() {
		t.Errorf("%s: more than one JSON value:\n%s", name, out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, k := range requiredKeys(reflect.TypeOf(want)) {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: member %q missing:\n%s", name, k, out)
		}
	}
}

// Every --json output decodes into its documented shape (docs/cli.md),
// member for member.
func TestJSONOutputs(t *testing.T) {
	dir := t.TempDir()
	sd := filepath.Join(t.TempDir(), "sessions")
	t.Setenv("CCRUN_SESSION_DIR", sd)
	t.Setenv("CCRUN_SESSION", "")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	writeFiles(t, dir, map[string]string{
		"ccrun.json": `{"allowlist": {"run_docker:ccrun-test:busybox": "AlwaysThisProject", "run_command:git": "AlwaysThisProject"}}`,
		".ccrun/capabilities/broken/capability.json": `{"name": "broken"}`,
	})
	if _, stderr, code := ccrunIn(t, dir, "capability", "new", "hi", "--env", "@wasm"); code != 0 {
		t.Fatalf("scaffold: %s", stderr)
	}
	live, err := allowlist.StartSession(sd, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Add(allowlist.Entry{Pattern: keys.MustParsePattern("run_command:make"), Grant: ceiling.AlwaysThisSession}); err != nil {
		t.Fatal(err)
	}
	gone, err := allowlist.StartSession(sd, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := gone.End(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		session string
		args    []string
		shape   any
		code    int
		has     string
	}{
		{"version", "", []string{"version", "--json"}, versionReport{}, 0, `"version": "`},
		{"allowlist list", "", []string{"allowlist", "list", "--json"}, allowlistReport{}, 0, `"problem": "ceiling violation`},
		{"allowlist list in a session", live.ID(), []string{"allowlist", "list", "--json"}, allowlistReport{}, 0, `"key": "run_command:make"`},
		{"capability list", "", []string{"capability", "list", "--json"}, capabilitiesReport{}, exitConfig, `"name": "hi"`},
		{"session status, none", "", []string{"session", "status", "--json"}, sessionReport{}, 0, `"id": ""`},
		{"session status", live.ID(), []string{"session", "status", "--json"}, sessionReport{}, 0, `"active": true`},
		{"session status, ended", gone.ID(), []string{"session", "status", "--json"}, sessionReport{}, 0, `"active": false`},
		{"check", "", []string{"check", "--json", "--shell", "git push"}, checkReport{}, 0, `"decision": "ask"`},
		{"key", "", []string{"key", "--json", "make test && make lint"}, keyReport{}, 0, `"compound": true`},
		{"key, keyed by its whole text", "", []string{"key", "--json", "rm -rf build"}, keyReport{}, 0, `"exact": true,
  "compound": false`},
		// No engine answers there: gc does the rest, and the report says
		// what it could not reach.
		{"gc", "", []string{"gc", "--json"}, gcReport{}, 0, `"containers not collected`},
		{"gc --dry-run", "", []string{"gc", "--dry-run", "--json"}, gcReport{}, 0, `"dry_run": true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CCRUN_SESSION", tc.session)
			out, stderr, code := ccrunIn(t, dir, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			decodeStrict(t, tc.name, out, tc.shape)
			if !strings.Contains(out, tc.has) {
				t.Errorf("output lacks %q:\n%s", tc.has, out)
			}
		})
	}
}

// The shapes docs/cli.md documents are the shapes printed: every member of
// every report type is named in the page.
func TestJSONShapesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{versionReport{}, entryReport{}, sessionReport{}, allowlistReport{}, capabilityReport{},
		capabilitiesReport{}, gcReport{}, gcPlan{}, keyReport{}, checkReport{}} {
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if !bytes.Contains(doc, []byte(`"`+name+`"`)) {
				t.Errorf("docs/cli.md does not document member %q of %s", name, rt.Name())
			}
		}
	}
}
