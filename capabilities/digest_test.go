package capabilities

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

func TestDigestStable(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir := writeCap(t, project, "fmt-json", wasmManifest, map[string]string{"fmt-json.wasm": "module", "lib/a.txt": "a"})
	c1, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(c1.Digest) {
		t.Fatalf("Digest = %q", c1.Digest)
	}
	// Times and a copy elsewhere do not change it.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "fmt-json.wasm"), later, later); err != nil {
		t.Fatal(err)
	}
	other := writeCap(t, t.TempDir(), "fmt-json", wasmManifest, map[string]string{"lib/a.txt": "a", "fmt-json.wasm": "module"})
	for _, d := range []string{dir, other} {
		c, err := Load(d)
		if err != nil {
			t.Fatal(err)
		}
		if c.Digest != c1.Digest {
			t.Errorf("Load(%s).Digest = %s; want %s", d, c.Digest, c1.Digest)
		}
		if got, err := Digest(d); err != nil || got != c1.Digest {
			t.Errorf("Digest(%s) = %s, %v; want %s", d, got, err, c1.Digest)
		}
	}
}

// TestDigestChanges: any change to the manifest or the artifact, however
// small, changes the digest.
func TestDigestChanges(t *testing.T) {
	t.Parallel()
	base := map[string]string{"fmt-json.wasm": "module", "lib/a.txt": "a"}
	changes := []struct {
		name   string
		change func(t *testing.T, dir string)
	}{
		{"artifact byte", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "fmt-json.wasm"), "modulE") }},
		{"artifact appended", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "fmt-json.wasm"), "module\x00") }},
		{"manifest white space", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, ManifestFile), wasmManifest+"\n") }},
		{"other file", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "lib/a.txt"), "b") }},
		{"file added", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "lib/b.txt"), "") }},
		{"empty directory added", func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "empty"), 0o755) }},
		{"file renamed", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "lib/a.txt"), filepath.Join(dir, "lib/c.txt"))
		}},
		{"file removed", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "lib/a.txt")) }},
		{"executable bit", func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "lib/a.txt"), 0o755) }},
		{"symlink added", func(t *testing.T, dir string) { symlink(t, "a.txt", filepath.Join(dir, "lib/l")) }},
		{"file replaced by symlink", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "lib/a.txt"))
			symlink(t, "../fmt-json.wasm", filepath.Join(dir, "lib/a.txt"))
		}},
	}
	for _, tt := range changes {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeCap(t, t.TempDir(), "fmt-json", wasmManifest, base)
			before, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			tt.change(t, dir)
			after, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if after.Digest == before.Digest {
				t.Errorf("digest unchanged after %s: %s", tt.name, after.Digest)
			}
		})
	}
}

// TestDigestNoCollision: trees that concatenate to the same bytes differ.
func TestDigestNoCollision(t *testing.T) {
	t.Parallel()
	trees := []map[string]string{
		{"fmt-json.wasm": "", "ab": "c"},
		{"fmt-json.wasm": "", "a": "bc"},
		{"fmt-json.wasm": "", "a/b": "c"},
		{"fmt-json.wasm": "", "a": "b", "c": ""},
		{"fmt-json.wasm": "", "abc": ""},
		{"fmt-json.wasm": "", "ab*": "c"},
	}
	seen := map[string]int{}
	for i, files := range trees {
		c, err := Load(writeCap(t, t.TempDir(), "fmt-json", wasmManifest, files))
		if err != nil {
			t.Fatal(err)
		}
		if j, dup := seen[c.Digest]; dup {
			t.Errorf("trees %d and %d share digest %s", j, i, c.Digest)
		}
		seen[c.Digest] = i
	}
}

func TestDigestSymlinkInside(t *testing.T) {
	t.Parallel()
	dir := writeCap(t, t.TempDir(), "fmt-json", wasmManifest, map[string]string{"real.wasm": "m", "sub/x": ""})
	symlink(t, "real.wasm", filepath.Join(dir, "fmt-json.wasm"))
	symlink(t, "../real.wasm", filepath.Join(dir, "sub/up"))
	c, err := Load(dir)
	if err != nil {
		t.Fatalf("a link inside the directory: %v", err)
	}
	// Changing where a link points changes the digest.
	writeFile(t, filepath.Join(dir, "other.wasm"), "m")
	os.Remove(filepath.Join(dir, "fmt-json.wasm"))
	symlink(t, "other.wasm", filepath.Join(dir, "fmt-json.wasm"))
	c2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Digest == c.Digest {
		t.Error("digest unchanged after a link was retargeted")
	}
}

func TestLinkStaysInside(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rel, target string
		want        bool
	}{
		{"a", "b", true},
		{"a", "sub/b", true},
		{"sub/a", "../b", true},
		{"sub/a", "../../b", false},
		{"a", "..", false},
		{"a", ".", false},
		{"a", "/etc/passwd", false},
		{"a", "", false},
		{"a", "sub/../../x", false},
		{"a", `..\x`, false},
	}
	for _, tt := range tests {
		if got := linkStaysInside(tt.rel, tt.target); got != tt.want {
			t.Errorf("linkStaysInside(%q, %q) = %v; want %v", tt.rel, tt.target, got, tt.want)
		}
	}
}

func TestVerifyAndReadModule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		change func(t *testing.T, dir string)
	}{
		{"module changed", nil, func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "fmt-json.wasm"), "evil") }},
		{"other file changed", nil, func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "lib/a.txt"), "b") }},
		{"manifest changed", nil, func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, ManifestFile), wasmManifest+" ") }},
		{"module via link, target changed",
			func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "lib/real.wasm"), string(HelloWasm()))
				os.Remove(filepath.Join(dir, "fmt-json.wasm"))
				symlink(t, "lib/real.wasm", filepath.Join(dir, "fmt-json.wasm"))
			},
			func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "lib/real.wasm"), "evil") }},
		{"module via linked directory, relinked",
			func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "v1/m.wasm"), string(HelloWasm()))
				writeFile(t, filepath.Join(dir, "v2/m.wasm"), "evil")
				symlink(t, "v1", filepath.Join(dir, "cur"))
				os.Remove(filepath.Join(dir, "fmt-json.wasm"))
				symlink(t, "cur/m.wasm", filepath.Join(dir, "fmt-json.wasm"))
			},
			func(t *testing.T, dir string) {
				os.Remove(filepath.Join(dir, "cur"))
				symlink(t, "v2", filepath.Join(dir, "cur"))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeCap(t, t.TempDir(), "fmt-json", wasmManifest, map[string]string{"fmt-json.wasm": string(HelloWasm()), "lib/a.txt": "a"})
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			c, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Verify(); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			m, err := c.ReadModule()
			if err != nil || string(m) != string(HelloWasm()) {
				t.Fatalf("ReadModule = %d bytes, %v; want the hello module", len(m), err)
			}
			tt.change(t, dir)
			if err := c.Verify(); !errors.Is(err, ErrChanged) {
				t.Errorf("Verify after change: %v; want class ErrChanged", err)
			}
			if m, err := c.ReadModule(); !errors.Is(err, ErrChanged) {
				t.Errorf("ReadModule after change = %q, %v; want class ErrChanged", m, err)
			}
		})
	}
	shell, err := Load(writeCap(t, t.TempDir(), "s", `{"name": "s", "description": "d", "environment": "@shell", "entry": {"command": "true"}}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shell.ReadModule(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ReadModule of a @shell capability: %v; want class ErrInvalidArgument", err)
	}
}
