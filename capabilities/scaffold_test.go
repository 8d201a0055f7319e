package capabilities

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ccrun/ccrun/ceiling"
)

func TestScaffold(t *testing.T) {
	t.Parallel()
	for _, env := range ceiling.Environments {
		t.Run(string(env), func(t *testing.T) {
			t.Parallel()
			project := t.TempDir()
			dir, err := Scaffold(project, "my-tool", env)
			if err != nil {
				t.Fatalf("Scaffold: %v", err)
			}
			if want := filepath.Join(project, ".ccrun", "capabilities", "my-tool"); dir != want {
				t.Errorf("dir = %q; want %q", dir, want)
			}
			c, err := Find(project, "my-tool")
			if err != nil {
				t.Fatalf("the scaffold does not load: %v", err)
			}
			if c.Manifest.Environment != env || c.Manifest.Name != "my-tool" || c.Manifest.Description == "" {
				t.Errorf("Manifest = %+v", c.Manifest)
			}
			if l := c.Manifest.Loosens(); l != nil {
				t.Errorf("a scaffold loosens %v; want nothing", l)
			}
			// The written manifest is also valid against the published
			// schema alone.
			data, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
			if err := Validate("capability.json", data); err != nil {
				t.Errorf("Validate: %v", err)
			}
			// Never over an existing capability, and the first stays as it was.
			if _, err := Scaffold(project, "my-tool", env); !errors.Is(err, fs.ErrExist) {
				t.Errorf("second Scaffold: %v; want class fs.ErrExist", err)
			}
			again, err := Load(dir)
			if err != nil || again.Digest != c.Digest {
				t.Errorf("after a refused Scaffold: %v, digest %s -> %s", err, c.Digest, again.Digest)
			}
		})
	}
}

func TestScaffoldShellRuns(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir, err := Scaffold(project, "echo-input", ceiling.Shell)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "run.sh"))
	if err != nil || fi.Mode()&0o100 == 0 {
		t.Fatalf("run.sh: %v, mode %v; want it executable", err, fi.Mode())
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Run the entry as the @shell executor would: from the project root,
	// with the capability's directory first on PATH and in
	// CCRUN_CAPABILITY_DIR, and the input on stdin.
	cmd := exec.Command("/bin/sh", "-c", c.Manifest.Entry.Command)
	cmd.Dir = project
	cmd.Env = []string{"CCRUN_CAPABILITY_DIR=" + dir, "PATH=" + dir + ":/usr/bin:/bin"}
	cmd.Stdin = bytes.NewReader([]byte(`{"a":1}`))
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "{\"a\":1}\n" {
		t.Errorf("run.sh = %q, %v; want the input back", out, err)
	}
}

func TestScaffoldWasmRuns(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir, err := Scaffold(project, "hello", ceiling.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	module, err := os.ReadFile(filepath.Join(dir, c.Manifest.Entry.Module))
	if err != nil {
		t.Fatal(err)
	}
	if got := runWasm(t, module); got != "hello\n" {
		t.Errorf("hello.wasm wrote %q; want \"hello\\n\"", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Errorf("README.md: %v", err)
	}
}

func TestScaffoldDocker(t *testing.T) {
	t.Parallel()
	dir, err := Scaffold(t.TempDir(), "hi", ceiling.Docker)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := c.Manifest.Entry
	if e.Image != ScaffoldImage || len(e.Argv) != 3 || e.Argv[0] != "/bin/busybox" || c.Manifest.NetworkOrDefault() != NetworkNone {
		t.Errorf("Entry = %+v", e)
	}
}

func TestScaffoldRefuses(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	for _, name := range []string{"", "../x", "a/b", "X", "-a", ".hidden"} {
		if _, err := Scaffold(project, name, ceiling.Shell); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Scaffold(%q) = %v; want class ErrInvalidArgument", name, err)
		}
	}
	for _, env := range []ceiling.Environment{"", "@Python", "shell"} {
		_, err := Scaffold(project, "ok", env)
		if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, ceiling.ErrUnknownEnvironment) {
			t.Errorf("Scaffold(env %q) = %v; want classes ErrInvalidArgument and ceiling.ErrUnknownEnvironment", env, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(project, Dir)); len(ents) != 0 {
		t.Errorf("refused scaffolds left %d entries", len(ents))
	}
}

func TestHelloWasm(t *testing.T) {
	t.Parallel()
	a, b := HelloWasm(), HelloWasm()
	if !bytes.Equal(a, b) {
		t.Fatal("HelloWasm is not deterministic")
	}
	a[0] = 'x'
	if bytes.Equal(a, HelloWasm()) {
		t.Fatal("HelloWasm returns shared bytes")
	}
	if got := runWasm(t, b); got != "hello\n" {
		t.Errorf("HelloWasm wrote %q; want \"hello\\n\"", got)
	}
}

// runWasm runs a WASI command module in wazero and returns its stdout.
func runWasm(t *testing.T, module []byte) string {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	var out bytes.Buffer
	mod, err := r.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithStdout(&out).WithName("hello"))
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	mod.Close(ctx)
	return out.String()
}
