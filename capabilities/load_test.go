package capabilities

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/runtime/job"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := writeCap(t, project, "fmt-json", `{
  "name": "fmt-json",
  "description": "Pretty-print JSON",
  "environment": "@wasm",
  "entry": {"module": "fmt-json.wasm"},
  "mounts": [{"host": "data", "guest": "/data"}]
}`, map[string]string{"fmt-json.wasm": string(HelloWasm())})
	c, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Dir != dir || c.Project != project {
		t.Errorf("Dir, Project = %q, %q; want %q, %q", c.Dir, c.Project, dir, project)
	}
	if c.Manifest.Name != "fmt-json" || c.Manifest.Environment != ceiling.Wasm {
		t.Errorf("Manifest = %+v", c.Manifest)
	}
	if !strings.HasPrefix(c.Digest, "sha256:") || len(c.Digest) != len("sha256:")+64 {
		t.Errorf("Digest = %q; want sha256:<64 hex>", c.Digest)
	}
	mounts, err := c.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	realData, _ := filepath.EvalSymlinks(filepath.Join(project, "data"))
	if diff := cmp.Diff([]job.Mount{{Host: realData, Guest: "/data"}}, mounts); diff != "" {
		t.Errorf("Mounts (-want +got):\n%s", diff)
	}
	// Relative paths are made absolute.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, dir)
	if err == nil {
		if c2, err := Load(rel); err != nil || c2.Dir != dir || c2.Digest != c.Digest {
			t.Errorf("Load(%q) = %+v, %v; want the same capability", rel, c2, err)
		}
	}
}

// TestLoadHostile: every way a manifest or its directory can point outside
// where it may is an error that names the field.
func TestLoadHostile(t *testing.T) {
	t.Parallel()
	const head = `"description": "d", "environment": "@wasm"`
	tests := []struct {
		name  string
		setup func(t *testing.T, project, dir string) // after the capability is written
		json  string
		files map[string]string
		ptr   string // the field named; "-" for an error that is not a field's
	}{
		{name: "module with ..", json: `{"name": "c", ` + head + `, "entry": {"module": "../outside.wasm"}}`, ptr: "/entry/module"},
		{name: "module absolute", json: `{"name": "c", ` + head + `, "entry": {"module": "/etc/passwd"}}`, ptr: "/entry/module"},
		{name: "module missing", json: `{"name": "c", ` + head + `, "entry": {"module": "nope.wasm"}}`, ptr: "/entry/module"},
		{name: "module is a directory", json: `{"name": "c", ` + head + `, "entry": {"module": "sub"}}`,
			files: map[string]string{"sub/x": ""}, ptr: "/entry/module"},
		{name: "module is a symlink out (absolute)", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}}`,
			setup: func(t *testing.T, project, dir string) { symlink(t, "/etc/passwd", filepath.Join(dir, "m.wasm")) },
			ptr:   "/entry/module"},
		{name: "module is a symlink out (relative)", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}}`,
			setup: func(t *testing.T, project, dir string) {
				writeFile(t, filepath.Join(project, "outside.wasm"), "x")
				symlink(t, "../../../outside.wasm", filepath.Join(dir, "m.wasm"))
			},
			ptr: "/entry/module"},
		{name: "module through a symlinked directory out", json: `{"name": "c", ` + head + `, "entry": {"module": "lib/m.wasm"}}`,
			setup: func(t *testing.T, project, dir string) {
				writeFile(t, filepath.Join(project, "lib", "m.wasm"), "x")
				symlink(t, filepath.Join(project, "lib"), filepath.Join(dir, "lib"))
			},
			ptr: "/entry/module"},
		{name: "other symlink out", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}}`,
			files: map[string]string{"m.wasm": "x"},
			setup: func(t *testing.T, project, dir string) { symlink(t, "/etc/passwd", filepath.Join(dir, "secret")) },
			ptr:   "-"},
		{name: "symlink out through ..", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}}`,
			files: map[string]string{"m.wasm": "x"},
			setup: func(t *testing.T, project, dir string) { symlink(t, "sub/../../x", filepath.Join(dir, "l")) },
			ptr:   "-"},
		{name: "fifo in the directory", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}}`,
			files: map[string]string{"m.wasm": "x"},
			setup: func(t *testing.T, project, dir string) { mkfifo(t, filepath.Join(dir, "pipe")) },
			ptr:   "-"},
		{name: "mount host ../..", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}, "mounts": [{"host": "../..", "guest": "/a"}]}`,
			files: map[string]string{"m.wasm": "x"}, ptr: "/mounts/0/host"},
		{name: "mount host absolute outside", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}, "mounts": [{"host": "/etc", "guest": "/a"}]}`,
			files: map[string]string{"m.wasm": "x"}, ptr: "/mounts/0/host"},
		{name: "mount host missing", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}, "mounts": [{"host": "nope", "guest": "/a"}]}`,
			files: map[string]string{"m.wasm": "x"}, ptr: "/mounts/0/host"},
		{name: "mount host is a symlink out", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}, "mounts": [{"host": "data", "guest": "/a"}]}`,
			files: map[string]string{"m.wasm": "x"},
			setup: func(t *testing.T, project, dir string) { symlink(t, "/etc", filepath.Join(project, "data")) },
			ptr:   "/mounts/0/host"},
		{name: "mount host is a file for wasm", json: `{"name": "c", ` + head + `, "entry": {"module": "m.wasm"}, "mounts": [{"host": "f", "guest": "/a"}]}`,
			files: map[string]string{"m.wasm": "x"},
			setup: func(t *testing.T, project, dir string) { writeFile(t, filepath.Join(project, "f"), "x") },
			ptr:   "/mounts/0/host"},
		{name: "shell workdir outside", json: `{"name": "c", "description": "d", "environment": "@shell", "entry": {"command": "x", "workdir": "../.."}}`,
			ptr: "/entry/workdir"},
		{name: "shell workdir symlink out", json: `{"name": "c", "description": "d", "environment": "@shell", "entry": {"command": "x", "workdir": "w"}}`,
			setup: func(t *testing.T, project, dir string) { symlink(t, "/", filepath.Join(project, "w")) },
			ptr:   "/entry/workdir"},
		{name: "name not the directory's", json: `{"name": "other", ` + head + `, "entry": {"module": "m.wasm"}}`,
			files: map[string]string{"m.wasm": "x"}, ptr: "/name"},
		{name: "manifest is a symlink", json: `{}`,
			setup: func(t *testing.T, project, dir string) {
				writeFile(t, filepath.Join(project, "real.json"), `{"name": "c", `+head+`, "entry": {"module": "m.wasm"}}`)
				os.Remove(filepath.Join(dir, ManifestFile))
				symlink(t, "../../../real.json", filepath.Join(dir, ManifestFile))
			},
			ptr: ""},
		{name: "manifest is a fifo", json: `{}`,
			setup: func(t *testing.T, project, dir string) {
				os.Remove(filepath.Join(dir, ManifestFile))
				mkfifo(t, filepath.Join(dir, ManifestFile))
			},
			ptr: ""},
		{name: "manifest too large", json: `{"name": "c", "description": "` + strings.Repeat("a", MaxManifestSize) + `"}`, ptr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			project := t.TempDir()
			dir := writeCap(t, project, "c", tt.json, tt.files)
			if tt.setup != nil {
				tt.setup(t, project, dir)
			}
			done := make(chan struct{})
			var c *Capability
			var err error
			go func() { c, err = Load(dir); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Load hung")
			}
			if err == nil {
				t.Fatalf("Load = %+v; want an error at %q", c.Manifest, tt.ptr)
			}
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("err = %v; want class ErrInvalidManifest", err)
			}
			t.Log(err)
			errs := fieldErrors(t, err)
			if tt.ptr != "-" && !hasField(errs, tt.ptr) {
				t.Errorf("err = %v; want an error at %q", err, tt.ptr)
			}
			for _, fe := range errs {
				if !strings.HasPrefix(fe.File, project) {
					t.Errorf("error %q does not name a file in the project", fe)
				}
			}
		})
	}
}

func TestCapabilityDirIsSymlink(t *testing.T) {
	t.Parallel()
	project, elsewhere := t.TempDir(), t.TempDir()
	writeCap(t, elsewhere, "c", wasmManifest, nil)
	if err := os.MkdirAll(filepath.Join(project, Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(elsewhere, Dir, "c"), filepath.Join(project, Dir, "c"))
	if _, err := Find(project, "c"); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("Find on a symlinked directory: err = %v; want class ErrInvalidManifest", err)
	}
	caps, errs := LoadAll(project)
	if len(caps) != 0 || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidManifest) {
		t.Errorf("LoadAll = %v, %v; want no capability and one ErrInvalidManifest", caps, errs)
	}
}

func TestMountSwappedAfterLoad(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	data := filepath.Join(project, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := writeCap(t, project, "c", `{"name": "c", "description": "d", "environment": "@docker",
		"entry": {"image": "i"}, "mounts": [{"host": "data", "guest": "/data", "rw": true}]}`, nil)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The agent swaps the directory for a link out after approval.
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	symlink(t, "/etc", data)
	if m, err := c.Mounts(); !errors.Is(err, ErrInvalidManifest) {
		t.Fatalf("Mounts = %v, %v; want class ErrInvalidManifest", m, err)
	}
}

// TestMalformedUntouched: nothing this package does rewrites a manifest,
// least of all a malformed one.
func TestMalformedUntouched(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	const bad = "{\n  \"name\": \"c\",\n  \"environment\": @wasm\n"
	dir := writeCap(t, project, "c", bad, map[string]string{"m.wasm": "x"})
	file := filepath.Join(dir, ManifestFile)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(file)

	_, err := Load(dir)
	if !errors.Is(err, ErrInvalidManifest) {
		t.Fatalf("Load: %v; want class ErrInvalidManifest", err)
	}
	if errs := fieldErrors(t, err); errs[0].Line != 3 || errs[0].Column != 18 {
		t.Errorf("Load: %v; want the error at 3:18", err)
	}
	if _, err := Find(project, "c"); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("Find: %v; want class ErrInvalidManifest", err)
	}
	if _, errs := LoadAll(project); len(errs) != 1 {
		t.Errorf("LoadAll errors = %v; want one", errs)
	}
	if _, err := Digest(dir); err != nil {
		t.Errorf("Digest of a malformed capability: %v (it digests bytes, not meaning)", err)
	}
	if _, err := Scaffold(project, "c", ceiling.Wasm); !errors.Is(err, os.ErrExist) {
		t.Errorf("Scaffold over it: %v; want class fs.ErrExist", err)
	}

	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, []byte(bad)) {
		t.Errorf("manifest now %q, %v; want it untouched", got, err)
	}
	after, _ := os.Stat(file)
	if !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() {
		t.Errorf("manifest stat changed: %v %v -> %v %v", before.ModTime(), before.Mode(), after.ModTime(), after.Mode())
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	writeCap(t, project, "ok", `{"name": "ok", "description": "d", "environment": "@shell", "entry": {"command": "true"}}`, nil)
	if err := os.MkdirAll(filepath.Join(project, Dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A capability.json outside the capabilities directory that a
	// traversing name would reach.
	writeFile(t, filepath.Join(project, ".ccrun", ManifestFile), `{"name": "ccrun", "description": "d", "environment": "@shell", "entry": {"command": "true"}}`)

	if c, err := Find(project, "ok"); err != nil || c.Manifest.Name != "ok" {
		t.Fatalf("Find(ok) = %v, %v", c, err)
	}
	for _, name := range []string{"missing", "empty", "..", "../..", "../capabilities/ok", "ok/", "/etc", "", "OK", "a\x00b", ".", "ok/../ok"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if c, err := Find(project, name); !errors.Is(err, ErrNotFound) {
				t.Errorf("Find(%q) = %v, %v; want class ErrNotFound", name, c, err)
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	t.Parallel()
	if _, err := Load(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(missing dir): %v; want class ErrNotFound", err)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(dir without manifest): %v; want class ErrNotFound", err)
	}
}

func TestLoadAll(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if caps, errs := LoadAll(project); caps != nil || errs != nil {
		t.Fatalf("LoadAll(no .ccrun) = %v, %v; want nothing", caps, errs)
	}
	shell := func(name string) string {
		return `{"name": "` + name + `", "description": "d", "environment": "@shell", "entry": {"command": "true"}}`
	}
	writeCap(t, project, "b", shell("b"), nil)
	writeCap(t, project, "a", shell("a"), nil)
	writeCap(t, project, "bad", shell("wrong"), nil)
	writeCap(t, project, "broken", "{", nil)
	writeCap(t, project, ".hidden", "{", nil)
	writeFile(t, filepath.Join(project, Dir, "README"), "not a capability")
	caps, errs := LoadAll(project)
	var names []string
	for _, c := range caps {
		names = append(names, c.Manifest.Name)
	}
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if len(errs) != 2 {
		t.Fatalf("errors = %v; want 2", errs)
	}
	for _, err := range errs {
		if !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("error %v: want class ErrInvalidManifest", err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}
