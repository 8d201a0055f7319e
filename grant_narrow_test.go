package ccrun_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
)

// TestSessionGrantOfNarrowedKeyRuns: a session grant of a command keyed by
// its whole text lets that command run through the real executor, nobody
// asked — the glob expanded, each program checked where it starts — and
// a grant of one wrapper invocation does not let another run.
func TestSessionGrantOfNarrowedKeyRuns(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no timeout")
	}
	dir := t.TempDir()
	for _, f := range []string{"a.log", "b.log", "keep.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	for _, p := range []string{`run_command:"rm *.log"`, `run_command:"timeout 60 true"`} {
		if _, err := rt.Grant(ctx, permission.MustParsePattern(p), ceiling.AlwaysThisSession); err != nil {
			t.Fatalf("Grant %s: %v", p, err)
		}
	}
	if _, err := rt.Exec(ctx, &ccrun.Call{Command: "rm *.log", Limits: limits20s}); err != nil {
		t.Fatalf("rm *.log under its grant: %v", err)
	}
	for f, want := range map[string]bool{"a.log": false, "b.log": false, "keep.txt": true} {
		if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", f, err == nil, want)
		}
	}
	if _, err := rt.Exec(ctx, &ccrun.Call{Command: "timeout 60 true", Limits: limits20s}); err != nil {
		t.Errorf("timeout 60 true under its grant: %v", err)
	}
	for _, src := range []string{"timeout 60 sh -c 'touch planted'", "rm keep.txt", "rm *.txt"} {
		if _, err := rt.Exec(ctx, &ccrun.Call{Command: src, Limits: limits20s}); !errors.Is(err, permission.ErrPermissionDenied) {
			t.Errorf("%s under the grants of rm *.log and timeout 60 true: %v, want denied", src, err)
		}
	}
	for _, f := range []string{"planted", "keep.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != (f == "keep.txt") {
			t.Errorf("%s exists: %v", f, err == nil)
		}
	}
}

// TestSessionGrantOfOptionsRuns: a session grant of a command with an
// option before its operand (keyed by its whole text) runs that command,
// and not the same program with other options or another operand.
func TestSessionGrantOfOptionsRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.log", "sub/keep"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	granted := permission.ParseCommand("rm -f a.log")
	if !granted.Key.Exact {
		t.Fatalf("rm -f a.log keys as %s, want exact", granted.Key)
	}
	if _, err := rt.Grant(ctx, permission.PatternOf(granted.Key), ceiling.AlwaysThisSession); err != nil {
		t.Fatalf("Grant %s: %v", granted.Key, err)
	}
	for _, src := range []string{"rm -rf sub", "rm -f sub/keep", "rm -rf", "rm a.log -rf sub"} {
		if _, err := rt.Exec(ctx, &ccrun.Call{Command: src, Limits: limits20s}); !errors.Is(err, permission.ErrPermissionDenied) {
			t.Errorf("%s under the grant of rm -f a.log: %v, want denied", src, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "keep")); err != nil {
		t.Errorf("sub/keep: %v", err)
	}
	if _, err := rt.Exec(ctx, &ccrun.Call{Command: "rm  -f 'a.log'", Limits: limits20s}); err != nil {
		t.Fatalf("rm -f a.log under its grant: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.log")); err == nil {
		t.Error("a.log still exists")
	}
}
