package ccrun_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/runtime/shell"
)

// TestShellSandboxNotes: Check's outcome of a @shell call says which
// guarantee of its tier is missing where the kernel lacks it: the
// read-only tier's for a read-only command, the workspace tier's for one
// that would be approved; nothing where the kernel gives both.
func TestShellSandboxNotes(t *testing.T) {
	rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	notes := func(cmd string) []string {
		out, err := rt.Check(context.Background(), &ccrun.Call{Command: cmd})
		if err != nil {
			t.Fatalf("Check(%q): %v", cmd, err)
		}
		return rt.ShellSandboxNotes(out)
	}
	if _, err := shell.ConfineAvailable(); err == nil {
		if got, want := notes("ls"), shell.MissingGuarantees(false); !slices.Equal(got, want) {
			t.Errorf("read-only: %q, want %q", got, want)
		}
		if got, want := notes("make test"), shell.MissingGuarantees(true); !slices.Equal(got, want) {
			t.Errorf("approved: %q, want %q", got, want)
		}
	}
	t.Setenv("CCRUN_LANDLOCK", "off")
	if n := strings.Join(notes("ls"), "\n"); !strings.Contains(n, "kernel confinement") || !strings.Contains(n, "read-only command") {
		t.Errorf("read-only, no kernel layer: %q", n)
	}
	if n := strings.Join(notes("make test"), "\n"); !strings.Contains(n, "kernel confinement") || !strings.Contains(n, "approved command is not kept to the project") {
		t.Errorf("approved, no kernel layer: %q", n)
	}
}
