package capabilities

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun/ceiling"
)

// capBox is an environment a Go program adds, as ccrun.WithBackend
// does, for the tests of this file. A manifest names it; reading one needs
// no registration.
const capBox ceiling.Environment = "@capbox"

// boxes is the Set of a Runtime that runs capBox.
var boxes, _ = ceiling.Set{}.With(capBox, ceiling.AlwaysThisSession)

const boxManifest = `{
  "name": "box-it",
  "description": "Runs a box file",
  "environment": "@capbox",
  "entry": {"target": "hello.box", "args": ["--loud"]},
  "parameters": {"type": "object", "properties": {"who": {"type": "string"}}},
  "limits": {"timeout": "5s", "output": "1MiB"},
  "env": {"LANG": "C", "LD_PRELOAD": "x.so"}
}`

// TestParseRegistered: a manifest of a registered environment parses
// with the generic entry (target, args), the fields every environment
// shares, and round-trips; it loads from a directory, with a digest.
func TestParseRegistered(t *testing.T) {
	t.Parallel()
	m, err := Parse("capability.json", []byte(boxManifest))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Entry{Target: "hello.box", Args: []string{"--loud"}}
	if m.Environment != capBox || !cmp.Equal(m.Entry, want) || m.Limits.Timeout != Duration(5*time.Second) || m.Env["LANG"] != "C" {
		t.Errorf("Parse = %+v; want %s with entry %+v", m, capBox, want)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Parse("again.json", out); err != nil || !cmp.Equal(again.Entry, want) {
		t.Errorf("Parse(Marshal(m)) = %+v, %v\n%s", again, err, out)
	}
	// A backend on the host could be made to run other code by these.
	if got := m.Loosens(); !slices.Contains(got, "env LD_PRELOAD=x.so (changes what programs run)") {
		t.Errorf("Loosens = %q; want LD_PRELOAD shown", got)
	}

	project := t.TempDir()
	dir := writeCap(t, project, "box-it", boxManifest, map[string]string{"hello.box": "hello\n"})
	c, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Manifest.Environment != capBox || c.Digest == "" || c.Key().String() != "capability:box-it" {
		t.Errorf("loaded: environment %s, digest %q, key %s", c.Manifest.Environment, c.Digest, c.Key())
	}
	// A Runtime that runs capBox runs it; one that does not says so, at
	// the manifest's environment, listing what it runs.
	if err := c.CheckEnvironment(boxes); err != nil {
		t.Errorf("CheckEnvironment(%s): %v", boxes, err)
	}
	err = c.CheckEnvironment(ceiling.Set{})
	var fe *FieldError
	if !errors.Is(err, ErrInvalidManifest) || !errors.Is(err, ceiling.ErrUnknownEnvironment) || !errors.As(err, &fe) ||
		fe.Pointer != "/environment" || fe.Line != 4 || !strings.Contains(fe.Message, `"@capbox": not one this runtime runs (@shell, @wasm, @docker;`) {
		t.Errorf("CheckEnvironment(built-in only): %v (%+v); want the manifest's /environment at line 4, the Set listed", err, fe)
	}
	if caps, errs := LoadAll(project); len(errs) > 0 || len(caps) != 1 {
		t.Errorf("LoadAll: %d capabilities, errors %v", len(caps), errs)
	}
}

// TestParseRegisteredInvalid: an environment nobody registered is an
// error that lists the registered ones; a registered environment's
// manifest may not say what only a built-in environment gives a meaning
// to, and each refusal names the field and why.
func TestParseRegisteredInvalid(t *testing.T) {
	t.Parallel()
	const ok = `"name": "x", "description": "d", "environment": "@capbox"`
	tests := []struct {
		name, json string
		want       []string // pointers, sorted
		says       string   // in the message of the first error
	}{
		{"not a name", `{"name": "x", "description": "d", "environment": "@Box!", "entry": {"target": "t"}}`,
			[]string{"/environment"}, `environment "@Box!": want @shell, @wasm, @docker, or the name of one a Go program adds (@ and a lowercase letter`},
		{"too long", `{"name": "x", "description": "d", "environment": "@` + strings.Repeat("b", 32) + `", "entry": {"target": "t"}}`,
			[]string{"/environment"}, `environment "@bbbb`},
		{"no @", `{"name": "x", "description": "d", "environment": "shell", "entry": {"command": "x"}}`,
			[]string{"/environment"}, `environment "shell": want @shell`},
		{"mount", `{` + ok + `, "entry": {"target": "t"}, "mounts": [{"host": "a", "guest": "/a"}]}`,
			[]string{"/mounts"}, "not allowed for @capbox: mounts are what @wasm and @docker let a tool see"},
		{"empty target", `{` + ok + `, "entry": {"target": ""}}`, []string{"/entry/target"}, "empty target: want what the @capbox backend runs"},
		{"blank target", `{` + ok + `, "entry": {"target": "  "}}`, []string{"/entry/target"}, "empty target: want what the @capbox backend runs"},
		{"no target", `{` + ok + `, "entry": {"args": ["a"]}}`, []string{"/entry/target"}, "missing required field"},
		{"NUL in target", `{` + ok + `, "entry": {"target": "a\u0000b"}}`, []string{"/entry/target"}, "NUL"},
		{"NUL in args", `{` + ok + `, "entry": {"target": "t", "args": ["ok", "a\u0000"]}}`, []string{"/entry/args/1"}, "NUL"},
		{"module", `{` + ok + `, "entry": {"target": "t", "module": "m.wasm"}}`, []string{"/entry/module"}, "module is @wasm's entry"},
		{"command", `{` + ok + `, "entry": {"target": "t", "command": "x"}}`, []string{"/entry/command"}, "command is @shell's and @docker's entry"},
		{"image", `{` + ok + `, "entry": {"target": "t", "image": "i"}}`, []string{"/entry/image"}, "image is @docker's entry"},
		{"workdir", `{` + ok + `, "entry": {"target": "t", "workdir": "w"}}`, []string{"/entry/workdir"}, "backend decides where it runs"},
		{"network", `{` + ok + `, "entry": {"target": "t"}, "network": "none"}`, []string{"/network"}, "network is @docker's"},
		{"pool", `{` + ok + `, "entry": {"target": "t"}, "pool": true}`, []string{"/pool"}, "pool is @docker's"},
		{"limits ccrun does not enforce", `{` + ok + `, "entry": {"target": "t"}, "limits": {"timeout": "1s", "memory": "64MiB", "pids": 2, "cpus": 1}}`,
			[]string{"/limits/cpus", "/limits/memory", "/limits/pids"}, "would not enforce"},
		{"target on a built-in", `{"name": "x", "description": "d", "environment": "@wasm", "entry": {"module": "m.wasm", "target": "t"}}`,
			[]string{"/entry/target"}, "not allowed for @wasm: target is the entry of an environment a Go program registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := parseInvalid(t, "dir/capability.json", tt.json, tt.want)
			if !strings.Contains(errs[0].Message, tt.says) {
				t.Errorf("message %q; want it to say %q", errs[0].Message, tt.says)
			}
			if tt.want[0] == "/environment" && !errors.Is(errs[0], ceiling.ErrUnknownEnvironment) {
				t.Errorf("%v; want class ceiling.ErrUnknownEnvironment", errs[0])
			}
		})
	}
	// A name nobody added parses: whether it runs is the Runtime's to say.
	if m, err := Parse("c.json", []byte(`{"name": "x", "description": "d", "environment": "@nobox", "entry": {"target": "t"}}`)); err != nil || m.Environment != "@nobox" {
		t.Errorf("an environment of the right form: %v", err)
	}
}

// TestScaffoldRegistered: ccrun cannot write the entry of an environment
// whose backend alone reads it, so Scaffold writes none; ScaffoldTarget
// writes what the backend says, checked as any scaffold, and refuses files
// outside the capability's directory or in place of its manifest.
func TestScaffoldRegistered(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if _, err := Scaffold(project, "box-it", capBox); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Scaffold(%s): %v; want class ErrInvalidArgument", capBox, err)
	}
	if _, err := Load(filepath.Join(project, Dir, "box-it")); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused scaffold left a capability: %v", err)
	}
	tmpl := Template{Description: "Runs a box", Target: "hello.box", Args: []string{"--loud"}, Files: map[string][]byte{"hello.box": []byte("hello\n")}}
	dir, err := ScaffoldTarget(project, "box-it", capBox, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil || c.Manifest.Environment != capBox || c.Manifest.Entry.Target != "hello.box" || !slices.Equal(c.Manifest.Entry.Args, []string{"--loud"}) {
		t.Fatalf("the scaffold: %+v, %v", c, err)
	}
	if err := c.CheckEnvironment(boxes); err != nil {
		t.Error(err)
	}
	for name, bad := range map[string]struct {
		env ceiling.Environment
		t   Template
	}{
		"built in":     {ceiling.Wasm, tmpl},
		"not a name":   {"@Box", tmpl},
		"outside":      {capBox, Template{Description: "d", Target: "t", Files: map[string][]byte{"../t": nil}}},
		"absolute":     {capBox, Template{Description: "d", Target: "t", Files: map[string][]byte{"/tmp/t": nil}}},
		"the manifest": {capBox, Template{Description: "d", Target: "t", Files: map[string][]byte{"./capability.json": []byte("{}")}}},
	} {
		if _, err := ScaffoldTarget(project, "bad-"+strings.ReplaceAll(name, " ", "-"), bad.env, bad.t); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v; want class ErrInvalidArgument", name, err)
		}
	}
	// What does not load is refused, and nothing is left.
	if _, err := ScaffoldTarget(project, "no-target", capBox, Template{Description: "d"}); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("an empty target: %v; want an invalid manifest", err)
	}
	if _, err := Load(filepath.Join(project, Dir, "no-target")); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused scaffold left a capability: %v", err)
	}
}
