//go:build linux

package confine

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

// TestBind: a ruleset prepared from the workspace policy without its
// binds (WorkspaceUnbound, as a run prepares it beside the search) and
// bound to what the search found protects the project as Prepare of the
// whole policy does; before Bind it binds nothing, and Bind refuses
// another policy, a second binding once a program ran, and a closed
// ruleset.
func TestBind(t *testing.T) {
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	write(t, w.project+"/.envrc", "export X=1\n")
	tmp := t.TempDir()
	p, complete, err := Workspace(w.home, w.project, tmp)
	if err != nil || !complete || len(p.Protect) == 0 {
		t.Fatal(p.Protect, complete, err)
	}
	if !WorkspaceUnbound(w.home, w.project, tmp).Equal(p.Unbound()) {
		t.Fatal("WorkspaceUnbound is not Workspace's policy without its binds")
	}
	run := func(rs *Ruleset, script string) error {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = w.project
		cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "TMPDIR=" + tmp}
		_, err := startWait(t, rs, cmd)
		return err
	}

	rs, err := Prepare(p.Unbound())
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	other := p
	other.Writable = append(other.Writable[:len(other.Writable):len(other.Writable)], w.outside)
	if err := rs.Bind(other); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("Bind of a policy that writes more: %v", err)
	}
	rel := p
	rel.Protect = append(rel.Protect[:len(rel.Protect):len(rel.Protect)], ".envrc")
	if err := rs.Bind(rel); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("Bind of a relative protected path: %v", err)
	}
	if err := rs.Bind(p); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{
		"echo 'export EVIL=1' > .envrc",
		"echo '[core] fsmonitor = touch pwned' >> .git/config",
		"rm -f .envrc",
		"mv .git .git-away",
	} {
		if err := run(rs, script); err == nil {
			t.Errorf("%q ran through a bound ruleset", script)
		}
	}
	if b, _ := os.ReadFile(w.project + "/.envrc"); string(b) != "export X=1\n" {
		t.Errorf(".envrc changed: %q", b)
	}
	if err := run(rs, "echo ok > made && rm made"); err != nil {
		t.Errorf("a write of the project: %v", err)
	}
	if err := rs.Bind(p.Unbound()); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("Bind once a program ran (the binds lifted): %v", err)
	}
	if err := run(rs, "echo 'export EVIL=1' > .envrc"); err == nil {
		t.Error("a refused Bind lifted the binds")
	}
	rs.Close()
	if err := rs.Bind(p); !errors.Is(err, ErrClosed) {
		t.Errorf("Bind after Close: %v", err)
	}

	// Unbound and never bound, nothing is protected: Bind is what does.
	bare, err := Prepare(p.Unbound())
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if err := run(bare, "echo 'export Y=1' > .envrc"); err != nil {
		t.Errorf("the control, unbound: %v", err)
	}
}
