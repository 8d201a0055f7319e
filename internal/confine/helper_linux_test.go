package confine

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/ccrun/ccrun/internal/cbuild"
)

// The embedded helpers are what helper/helper.c builds to with the
// Makefile's rule: a change to the source without `make confine-helper`,
// or bytes nobody can rebuild, fails here. Skipped only where a compiler
// is missing (CI installs both, and requires them: cbuild.RequireEnv).
func TestHelperBuiltFromSource(t *testing.T) {
	out := cbuild.Make(t, "../..", "confine-helper", "CONFINE_OUT")
	for _, arch := range []string{"amd64", "arm64"} {
		name := "helper_" + arch + ".bin"
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what helper/helper.c builds to (%d bytes, built %d): run make confine-helper", name, len(got), len(want))
		}
		if arch == runtime.GOARCH && !bytes.Equal(helperBin, got) {
			t.Errorf("helperBin is not %s", name)
		}
	}
}

// A program that cannot be executed fails Start as os/exec would say it,
// with nothing run: the helper reports the errno of its execve.
func TestHelperReportsExecErrors(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir() // made before Prepare: /tmp is listed then
	script := filepath.Join(dir, "noshebang")
	os.WriteFile(script, []byte("echo hi\n"), 0o755)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	rs, err := Prepare(ReadOnly(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for _, c := range []struct {
		path string
		want error
	}{
		{filepath.Join(dir, "missing"), os.ErrNotExist},
		{plain, os.ErrPermission},
		{script, syscall.ENOEXEC},
	} {
		cmd := exec.Command(c.path)
		err := rs.Start(cmd)
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Path != c.path || !errors.Is(err, c.want) {
			t.Errorf("Start %s: %v, want a PathError of %v", c.path, err, c.want)
		}
		if cmd.Path != c.path || len(cmd.Args) != 1 || cmd.Args[0] != c.path {
			t.Errorf("Start changed the command: %q %q", cmd.Path, cmd.Args)
		}
	}
}
