package ccrun_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
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
		if _, err := rt.Grant(ctx, keys.MustParsePattern(p), ceiling.AlwaysThisSession); err != nil {
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
		if _, err := rt.Exec(ctx, &ccrun.Call{Command: src, Limits: limits20s}); !errors.Is(err, ccrun.ErrPermissionDenied) {
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
	if _, err := rt.Grant(ctx, keys.PatternOf(granted.Key), ceiling.AlwaysThisSession); err != nil {
		t.Fatalf("Grant %s: %v", granted.Key, err)
	}
	for _, src := range []string{"rm -rf sub", "rm -f sub/keep", "rm -rf", "rm a.log -rf sub"} {
		if _, err := rt.Exec(ctx, &ccrun.Call{Command: src, Limits: limits20s}); !errors.Is(err, ccrun.ErrPermissionDenied) {
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

// TestSessionGrantOfBareCommandRuns: a session grant of a command with no
// argument (make, keyed run_command:make with no detail) runs that
// command, and not the same program with a target or options: the grant
// is kept as run_command:make:"", not as run_command:make (every make).
// A person answering "this session" at the prompt grants the same.
func TestSessionGrantOfBareCommandRuns(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	makefile := "all:\n\t@echo built\ndeploy:\n\t@echo deployed > deployed\ntest:\n\t@echo tested > tested\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []string
	approver := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		asked = append(asked, p.Decision.Key.String())
		if p.Decision.Key.String() == "run_command:git" {
			return ceiling.AlwaysThisSession, nil
		}
		return ceiling.Deny, nil
	})
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithApprover(approver))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	bare := permission.ParseCommand("make")
	if bare.Key.String() != "run_command:make" {
		t.Fatalf("make keys as %s, want run_command:make", bare.Key)
	}
	e, err := rt.Grant(ctx, keys.PatternOf(bare.Key), ceiling.AlwaysThisSession)
	if err != nil {
		t.Fatalf("Grant %s: %v", bare.Key, err)
	}
	if got := e.Pattern.String(); got != `run_command:make:""` {
		t.Fatalf("the grant of make is kept as %s, want run_command:make:\"\"", got)
	}
	out, err := rt.Exec(ctx, &ccrun.Call{Command: "make", Limits: limits20s})
	if err != nil {
		t.Fatalf("make under its grant: %v", err)
	}
	if got := string(out.Result.Stdout); got != "built\n" || out.Decision.Layer != permission.LayerSession {
		t.Errorf("make under its grant: stdout %q at %s, want built by the session grant", got, out.Decision.Layer)
	}
	for _, src := range []string{"make deploy", "make -j4 test", "make test -j4", "make -C . deploy", "'make' deploy"} {
		if _, err := rt.Exec(ctx, &ccrun.Call{Command: src, Limits: limits20s}); !errors.Is(err, ccrun.ErrPermissionDenied) {
			t.Errorf("%s under the grant of make: %v, want denied", src, err)
		}
	}
	if len(asked) != 5 {
		t.Errorf("asked %v, want each of the 5 commands with a target or options asked", asked)
	}
	for _, f := range []string{"deployed", "tested"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists: a command the grant of make does not cover ran", f)
		}
	}

	// The same from the prompt: "this session" for git grants git alone.
	asked = nil
	if _, err := rt.Exec(ctx, &ccrun.Call{Command: "git", Limits: limits20s}); errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Fatalf("git, answered this session: %v", err)
	}
	for _, src := range []string{"git push", "git push --force", "git commit"} {
		if _, err := rt.Exec(ctx, &ccrun.Call{Command: src, Limits: limits20s}); !errors.Is(err, ccrun.ErrPermissionDenied) {
			t.Errorf("%s after a session grant of git: %v, want asked and denied", src, err)
		}
	}
	if want := []string{"run_command:git", "run_command:git:push", "run_command:git:push", "run_command:git:commit"}; !slices.Equal(asked, want) {
		t.Errorf("asked %v, want %v", asked, want)
	}
}
