package permission

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/google/go-cmp/cmp"
)

func TestParseSettings(t *testing.T) {
	t.Parallel()
	data := []byte(`{
  "$schema": "https://example.com/ccrun.schema.json",
  "mode": "default",
  "permissions": {
    "allow": ["write_file:docs/**"],
    "ask": ["run_command:npm:publish"],
    "deny": ["run_command:git:push", "web_fetch"]
  },
  "allowlist": {"capability:fmt": {"grant": "AlwaysThisProject"}},
  "env": {"pass": ["GOFLAGS"]}
}`)
	s, err := ParseSettings(data, "ccrun.json", OriginProject)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != ModeDefault {
		t.Errorf("mode = %s", s.Mode)
	}
	str := func(ps []keys.Pattern) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	if diff := cmp.Diff([]string{"run_command:git:push", "web_fetch:*"}, str(s.Deny)); diff != "" {
		t.Errorf("deny (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"write_file:docs/**"}, str(s.Allow)); diff != "" {
		t.Errorf("allow (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(s.Allowlist), "capability:fmt") || !strings.Contains(string(s.Env), "GOFLAGS") {
		t.Errorf("raw members lost: %s %s", s.Allowlist, s.Env)
	}
}

func TestParseSettingsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, where string
	}{
		{"syntax", "{\n  \"mode\": \"plan\",\n  \"permissions\": {\"deny\": [\"a:b\",]}\n}", "x.json:3:"},
		{"unknown member", "{\n  \"mode\": \"plan\",\n  \"allow\": [\"run_command:git\"]\n}", "x.json:3:3"},
		{"unknown permissions member", "{\"permissions\": {\n \"allwo\": []}}", "x.json:2:2"},
		{"bad rule", "{\"permissions\": {\"deny\": [\n   \"run_command:git:push\",\n   \"run_command:\"]}}", "x.json:3:4"},
		{"bad rule quoting", "{\"permissions\": {\"deny\": [\"run_command:git status\"]}}", "x.json:1:27"},
		{"rule not a string", "{\"permissions\": {\"deny\": [42]}}", "x.json:1:27"},
		{"bad mode", "{\"mode\": \"lenient\"}", "x.json:1:10"},
		{"duplicate", "{\"mode\": \"plan\",\n\"mode\": \"trust\"}", "x.json:2:1"},
		{"not an object", "[1]", "x.json:1:1"},
		{"trailing", "{} {}", "x.json:1:"},
		{"empty", "", "x.json:1:1"},
		{"permissions not an object", "{\"permissions\": []}", "x.json:1:17"},
		{"a byte order mark", "\ufeff{\"mode\": \"plan\"}", "x.json:1:1: malformed JSON: a byte order mark"},
		{"CRLF and runes before the error", "{\r\n  \"$schema\": \"ünï\", \"mode\": 7\r\n}", "x.json:2:29: mode must be a string"},
		{"multi-byte key unknown", "{\"ключ\": 1}", "x.json:1:2:"},
		{"shell member twice", "{\"shell\": {\"sandbox\": \"required\",\n \"sandbox\": \"off\"}}", "x.json:2:2: shell: member \"sandbox\" given twice"},
		{"shell member in another case", "{\"shell\": {\"Sandbox\": \"off\"}}", "x.json:1:12: shell: unknown member \"Sandbox\""},
		{"shell sandbox null", "{\"shell\": {\"sandbox\": null}}", "x.json:1:23: shell.sandbox"},
		{"shell writable relative", "{\"shell\": {\"writable\": [\"/ok\", \"cache\"]}}", "x.json:1:32: shell: writable \"cache\""},
		{"env member twice", "{\"env\": {\"pass\": [\"A\"], \"pass\": [\"B\"]}}", "x.json:1:25: env: member \"pass\" given twice"},
		{"env member in another case", "{\"env\": {\"PASS\": [\"A\"]}}", "x.json:1:10: env: unknown member \"PASS\""},
		{"env.pass null", "{\"env\": {\"pass\": null}}", "x.json:1:18: env.pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSettings([]byte(tt.data), "x.json", OriginUser)
			if !errors.Is(err, errclass.InvalidConfig) {
				t.Fatalf("error = %v, want errclass.InvalidConfig", err)
			}
			if !strings.HasPrefix(err.Error(), tt.where) {
				t.Errorf("error = %q, want it to start with %q", err, tt.where)
			}
		})
	}
}

func TestLoadLayers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loc := Locations{
		Managed: write("managed.json", `{"mode": "default", "permissions": {"deny": ["run_command:curl"]}}`),
		User:    filepath.Join(dir, "missing.json"),
		Project: write("ccrun.json", `{"permissions": {"allow": ["run_command:curl"]}}`),
		Local:   write("ccrun.local.json", `{"mode": "trust", "permissions": {"allow": ["run_command:curl"]}}`),
	}
	layers, err := LoadLayers(loc)
	if !errors.Is(err, errclass.InvalidConfig) {
		t.Fatalf("a project allow of run_command: error = %v, want errclass.InvalidConfig", err)
	}
	_ = layers
	loc.Project = write("ccrun.json", `{"permissions": {"ask": ["run_command:npm"]}}`)
	layers, err = LoadLayers(loc)
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 3 {
		t.Fatalf("%d layers, want 3 (user file missing)", len(layers))
	}
	p, err := NewPolicy(PolicyConfig{Layers: layers, ProjectDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode() != ModeDefault {
		t.Errorf("mode = %s, want default (managed cap)", p.Mode())
	}
	if rule, ok := p.DenyRule(simpleShell("curl", "https://example.com")); !ok || !strings.Contains(rule, "managed.json") {
		t.Errorf("managed deny = %q, %v", rule, ok)
	}
	if _, err := LoadSettings(filepath.Join(dir, "nope.json"), OriginUser); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file error = %v", err)
	}
	loc.Managed = write("managed.json", `{"mode": `)
	if _, err := LoadLayers(loc); !errors.Is(err, errclass.InvalidConfig) {
		t.Errorf("broken managed file error = %v, want errclass.InvalidConfig", err)
	}
}

func TestDefaultLocations(t *testing.T) {
	loc := DefaultLocations("/p")
	if loc.Managed != DefaultManagedPath || loc.Project != "/p/ccrun.json" || loc.Local != "/p/ccrun.local.json" {
		t.Errorf("%+v", loc)
	}
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if got := DefaultLocations("/p").User; got != "/xdg/ccrun/config.json" {
		t.Errorf("user = %s", got)
	}
}

func TestFlagSettings(t *testing.T) {
	t.Parallel()
	s, err := FlagSettings("accept-edits", []string{"write_file:**"}, nil, []string{"run_command:rm"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != ModeAcceptEdits || len(s.Allow) != 1 || len(s.Deny) != 1 || s.Origin != OriginFlags {
		t.Errorf("%+v", s)
	}
	if _, err := FlagSettings("", nil, nil, []string{"run_command"}); err != nil {
		t.Errorf("bare tool rule: %v", err)
	}
	// A bad flag is an invalid argument, not a configuration error, and
	// its text names the flag and the value once each.
	for _, bad := range []string{"run_command:", ":x", "run command:x", "a:b:c:d", "bad key!!"} {
		_, err := FlagSettings("", nil, []string{bad}, nil)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || errors.Is(err, errclass.InvalidConfig) {
			t.Errorf("rule %q: error = %v, want ErrInvalidArgument and not errclass.InvalidConfig", bad, err)
		}
		if msg := fmt.Sprint(err); !strings.HasPrefix(msg, "--ask: ") || strings.Count(msg, strconv.QuoteToASCII(bad)) != 1 ||
			strings.Count(msg, "invalid") != 1 {
			t.Errorf("rule %q: error %q, want --ask, the rule and one class, each once", bad, msg)
		}
	}
	for _, bad := range []string{"x", "auto", "yolo"} {
		_, err := FlagSettings(bad, nil, nil, nil)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || errors.Is(err, errclass.InvalidConfig) || strings.Count(fmt.Sprint(err), "mode") != 1 {
			t.Errorf("mode %q: error = %v, want ErrInvalidArgument naming --mode once", bad, err)
		}
	}
}

// TestSettingsRuleError: a bad rule in a file says where, the rule once,
// and both classes once each, at the end.
func TestSettingsRuleError(t *testing.T) {
	t.Parallel()
	_, err := ParseSettings([]byte(`{"permissions": {"allow": ["bad key!!"]}}`), "ccrun.json", OriginLocal)
	if !errors.Is(err, errclass.InvalidConfig) || !errors.Is(err, keys.ErrInvalidKey) {
		t.Fatalf("error = %v, want errclass.InvalidConfig and ErrInvalidKey", err)
	}
	want := `ccrun.json:1:28: allow rule "bad key!!": the tool, before the first colon, must be letters, digits, _ - . (want tool:action[:detail], e.g. run_command:git:status): invalid permission key: invalid configuration`
	if got := err.Error(); got != want {
		t.Errorf("error\n got %s\nwant %s", got, want)
	}
}

// TestParseSettingsDocker: the "docker" member (where @docker tools run)
// is read in the managed and user files, checked there, and refused in a
// project's own files, which cannot choose it.
func TestParseSettingsDocker(t *testing.T) {
	s, err := ParseSettings([]byte(`{"docker": {"engine": "kubernetes", "namespace": "ccrun", "context": "kind", "kubeconfig": "/k", "pool": 4, "pull_secrets": ["regcred", "team-b.ro"]}}`), "x.json", OriginUser)
	want := &DockerSettings{Engine: "kubernetes", Namespace: "ccrun", Context: "kind", Kubeconfig: "/k", Pool: 4, PullSecrets: []string{"regcred", "team-b.ro"}}
	if err != nil || !reflect.DeepEqual(s.Docker, want) {
		t.Errorf("ParseSettings: %+v, %v; want %+v", s.Docker, err, want)
	}
	t.Parallel()
	tests := []struct {
		name, data string
		origin     Origin
		ok         bool
	}{
		{"user kubernetes", `{"$schema": "x", "docker": {"engine": "kubernetes", "namespace": "ccrun", "context": "kind", "kubeconfig": "/k", "pool": 4}}`, OriginUser, true},
		{"managed docker", `{"docker": {"engine": "docker"}}`, OriginManaged, true},
		{"user empty", `{"docker": {}}`, OriginUser, true},
		{"project", `{"docker": {"engine": "docker"}}`, OriginProject, false},
		{"local", `{"docker": {"engine": "kubernetes"}}`, OriginLocal, false},
		{"unknown engine", `{"docker": {"engine": "podman"}}`, OriginUser, false},
		{"unknown member", `{"docker": {"engnie": "docker"}}`, OriginUser, false},
		{"negative pool", `{"docker": {"engine": "kubernetes", "pool": -1}}`, OriginUser, false},
		{"not an object", `{"docker": "kubernetes"}`, OriginUser, false},
		{"member in another case", `{"docker": {"Engine": "kubernetes"}}`, OriginUser, false},
		{"member twice", `{"docker": {"engine": "docker", "engine": "kubernetes"}}`, OriginUser, false},
		{"fractional pool", `{"docker": {"pool": 1.5}}`, OriginUser, false},
		{"pool as a string", `{"docker": {"pool": "4"}}`, OriginUser, false},
		{"namespace not a string", `{"docker": {"namespace": 7}}`, OriginUser, false},
		{"null engine", `{"docker": {"engine": null}}`, OriginUser, false},
		{"no pull secrets", `{"docker": {"pull_secrets": []}}`, OriginUser, true},
		{"pull secrets not a list", `{"docker": {"pull_secrets": "regcred"}}`, OriginUser, false},
		{"pull secret not a string", `{"docker": {"pull_secrets": [7]}}`, OriginUser, false},
		{"pull secret empty", `{"docker": {"pull_secrets": [""]}}`, OriginUser, false},
		{"pull secret upper case", `{"docker": {"pull_secrets": ["RegCred"]}}`, OriginUser, false},
		{"pull secret with a slash", `{"docker": {"pull_secrets": ["ns/regcred"]}}`, OriginUser, false},
		{"pull secret ending in a dash", `{"docker": {"pull_secrets": ["regcred-"]}}`, OriginUser, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSettings([]byte(tt.data), "x.json", tt.origin)
			if tt.ok && err != nil {
				t.Fatalf("ParseSettings: %v", err)
			}
			if tt.ok && s.Docker == nil {
				t.Fatalf("ParseSettings: no docker member parsed")
			}
			if !tt.ok && (!errors.Is(err, errclass.InvalidConfig) || !strings.HasPrefix(err.Error(), "x.json:1:") || !strings.Contains(err.Error(), "docker")) {
				t.Fatalf("ParseSettings error = %v; want an errclass.InvalidConfig at x.json:1: naming docker", err)
			}
		})
	}
}
