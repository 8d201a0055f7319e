//go:build linux

package shell

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/confine"
)

// auditOn turns the machine's audit on for the test (Landlock logs its
// denials only then) and back off after; it skips where it cannot (not
// root, a kernel before Landlock ABI 7).
func auditOn(t *testing.T) {
	t.Helper()
	abi, err := ConfineAvailable()
	if err != nil {
		t.Skipf("no landlock: %v", err)
	}
	var release func()
	if abi >= 7 {
		release, err = confine.HoldAudit(true)
	}
	if release == nil {
		if abi >= 7 && os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" && os.Geteuid() == 0 {
			t.Fatalf("audit cannot be enabled: %v", err)
		}
		t.Skipf("no Landlock denial records here (ABI %d): %v", abi, err)
	}
	t.Cleanup(release)
}

// workspaceRun runs src in w's workspace tier.
func (w confineWorld) workspaceRun(t *testing.T, src string) (stderr, detail string) {
	t.Helper()
	c, _, err := WorkspaceConfinement(w.home, w.project, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := w.spec(t, src)
	s.Confine = c
	res, err := newExecutor(t).Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stderr), res.Detail
}

// TestProgramRefusedSaid: what the workspace tier refuses a program, not
// the script's own redirections, is said as the script's are: a stderr
// line each and the run's detail. A write outside the project (a file of
// the home, a new name there, one outside both), a read of a dangerous
// path, by the program or by one it starts; controls that the tier
// allows say nothing.
func TestProgramRefusedSaid(t *testing.T) {
	w := newConfineWorld(t)
	auditOn(t)
	t.Setenv("TMPDIR", t.TempDir())
	if err := os.WriteFile(w.home+"/.bashrc", []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ src, want string }{
		{`touch "$HOME/.bashrc"`, "write " + w.home + "/.bashrc"},
		{`sh -c 'echo x >> "$HOME/.bashrc"'`, "write " + w.home + "/.bashrc"},
		{`touch "$HOME/.profile"`, "create in " + w.home},
		{`sh -c 'echo x > ` + w.outside + `/planted'`, "create in " + w.outside},
		{`cat "$HOME/.ssh/id_rsa"`, "read " + w.home + "/.ssh/id_rsa"},
		{`sh -c 'grep -r x "$HOME/.ssh" || true'`, "read " + w.home + "/.ssh/id_rsa"},
	} {
		stderr, detail := w.workspaceRun(t, c.src)
		if !strings.Contains(stderr, "ccrun: sandbox refused: "+c.want+"\n") {
			t.Errorf("%s: stderr %q: want %q said", c.src, stderr, c.want)
		}
		if !strings.HasPrefix(detail, "sandbox refused: ") || !strings.Contains(detail, c.want) {
			t.Errorf("%s: detail %q: want %q", c.src, detail, c.want)
		}
	}
	for _, src := range []string{
		`echo ok > made.txt && cat README.md made.txt && rm made.txt`,
		`sh -c 'mkdir -p build && echo o > build/o && echo t > "$TMPDIR/t" && ls ` + w.home + ` >/dev/null'`,
		`git status --short >/dev/null && git log --oneline >/dev/null`,
		`cat missing-file; true`,
	} {
		stderr, detail := w.workspaceRun(t, src)
		if strings.Contains(stderr, "sandbox refused") || strings.Contains(detail, "sandbox refused") {
			t.Errorf("control %s: stderr %q detail %q: nothing was refused", src, stderr, detail)
		}
	}
}

// TestProgramRefusedUnread: where Landlock's records cannot be read, a
// failed run in the workspace tier says that its programs' refusals are
// not reported (and the script's own still are).
func TestProgramRefusedUnread(t *testing.T) {
	w := newConfineWorld(t)
	abi, _ := ConfineAvailable()
	if release, err := confine.HoldAudit(false); err == nil {
		t.Cleanup(release)
	} else if abi >= 7 && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	stderr, detail := w.workspaceRun(t, `cat "$HOME/.ssh/id_rsa"`)
	if !strings.Contains(detail, "is not reported here") {
		t.Errorf("detail %q: want the programs' refusals said to be unreported", detail)
	}
	if strings.Contains(stderr, "sandbox refused: read") {
		t.Errorf("stderr %q: nothing could be read", stderr)
	}
	_, detail = w.workspaceRun(t, `echo x > "$HOME/.profile"`)
	if !strings.Contains(detail, "sandbox refused: write "+w.home+"/.profile") {
		t.Errorf("detail %q: the script's own refusal is said", detail)
	}
	if _, detail = w.workspaceRun(t, `true`); strings.Contains(detail, "not reported") {
		t.Errorf("detail %q: a run that did not fail says nothing of it", detail)
	}
}

// TestProgramRefusedLater: what a program that succeeded was refused is
// said at the end of the run.
func TestProgramRefusedLater(t *testing.T) {
	w := newConfineWorld(t)
	auditOn(t)
	t.Setenv("TMPDIR", t.TempDir())
	stderr, detail := w.workspaceRun(t, `sh -c 'cat "$HOME/.ssh/id_rsa" 2>/dev/null; true'; echo after`)
	want := "read " + w.home + "/.ssh/id_rsa"
	if !strings.HasSuffix(stderr, "ccrun: sandbox refused: "+want+"\n") || !strings.Contains(detail, want) {
		t.Errorf("stderr %q detail %q: want %q said at the end", stderr, detail, want)
	}
}

// TestProtectedNamedOnFailure: a program's write to a protected path
// fails with EROFS, which no record reports: a run that fails names the
// protected paths in its detail.
func TestProtectedNamedOnFailure(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("TMPDIR", t.TempDir())
	_, detail := w.workspaceRun(t, `sh -c 'echo x > .git/hooks/pre-commit'`)
	t.Log(detail)
	if !strings.Contains(detail, "protected paths are read-only (") || !strings.Contains(detail, ".git/hooks") {
		t.Errorf("detail %q: want the protected paths named", detail)
	}
	if _, detail = w.workspaceRun(t, `echo ok > made.txt`); strings.Contains(detail, "protected") {
		t.Errorf("detail %q: a run that did not fail says nothing of them", detail)
	}
}

// BenchmarkProgramRefusals: a workspace run of one program, with
// Landlock's records read (audit on) and without.
func BenchmarkProgramRefusals(b *testing.B) {
	abi, err := ConfineAvailable()
	if err != nil || abi < 7 {
		b.Skip("no Landlock ABI 7:", err)
	}
	project := b.TempDir()
	b.Setenv("TMPDIR", b.TempDir())
	e := newExecutor(b)
	for _, on := range []bool{false, true} {
		release, err := confine.HoldAudit(on)
		if err != nil {
			b.Skip(err)
		}
		b.Run(map[bool]string{false: "audit-off", true: "audit-on"}[on], func(b *testing.B) {
			for range b.N {
				c, _, err := WorkspaceConfinement(project, project, nil)
				if err != nil {
					b.Fatal(err)
				}
				res, err := e.Run(context.Background(), Spec{Script: parse(b, "/bin/true"), Dir: project, Confine: c})
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res)
				}
			}
		})
		release()
	}
}

// TestProgramRefusedWithNet: a run whose network is limited to named
// hosts (its programs in a network namespace, without capabilities) says
// what the tier refused its programs as any workspace run does: the
// helper's modes compose.
func TestProgramRefusedWithNet(t *testing.T) {
	w := newNetWorld(t)
	auditOn(t)
	t.Setenv("TMPDIR", t.TempDir())
	res, err := newExecutor(t).Run(context.Background(), w.spec(t, `cat "$HOME/.ssh/id_rsa"`))
	if err != nil {
		t.Fatal(err)
	}
	want := "read " + w.home + "/.ssh/id_rsa"
	if !strings.Contains(string(res.Stderr), "ccrun: sandbox refused: "+want+"\n") || !strings.Contains(res.Detail, want) {
		t.Errorf("stderr %q detail %q: want %q said", res.Stderr, res.Detail, want)
	}
}
