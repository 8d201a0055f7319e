package guard

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/shell"
	"github.com/containerd/errdefs"
)

func TestScopeOf(t *testing.T) {
	for _, tc := range []struct {
		d    permission.Decision
		want Basis
		pat  string
	}{
		{permission.Decision{Layer: permission.LayerApprover}, Person, ""},
		{permission.Decision{Layer: permission.LayerReadOnly}, ReadOnly, ""},
		{permission.Decision{Layer: permission.LayerNone}, ReadOnly, ""},
		{permission.Decision{Layer: permission.LayerMode}, Mode, ""},
		{permission.Decision{Layer: permission.LayerAllowRule, Rule: "run_command:cat (flags)"}, Pattern, "run_command:cat"},
		{permission.Decision{Layer: permission.LayerSession, Rule: "run_command:git:status"}, Pattern, "run_command:git:status"},
		{permission.Decision{Layer: permission.LayerSession, Rule: "::not a pattern"}, ReadOnly, ""}, // fails closed
	} {
		got, pat := BasisOf(&tc.d)
		if got != tc.want || (tc.pat != "" && pat.String() != tc.pat) {
			t.Errorf("BasisOf(%s %q) = %v %s, want %v %s", tc.d.Layer, tc.d.Rule, got, pat, tc.want, tc.pat)
		}
	}
}

func TestProgramKey(t *testing.T) {
	for key, named := range map[string]bool{
		"core.fsmonitor": true, "core.pager": true, "pager.log": true, "diff.evil.textconv": true,
		"filter.lfs.process": true, "filter.x.clean": true, "credential.helper": true,
		"credential.https://h.helper": true, "alias.st": true, "core.hookspath": true,
		"remote.origin.uploadpack": true, "merge.ours.driver": true, "core.sshcommand": true,
		"core.bare": false, "user.name": false, "remote.origin.url": false, "include.path": false,
	} {
		if got := programKey(key, "x") != ""; got != named {
			t.Errorf("programKey(%q) names a program: %v, want %v", key, got, named)
		}
	}
	if programKey("core.fsmonitor", "false") != "" {
		t.Error("core.fsmonitor=false names no program")
	}
}

func TestGlobalOptions(t *testing.T) {
	got := globalOptions([]string{"--git-dir=fake", "-C", "sub", "-c", "a=b", "-P", "status", "-s"})
	want := []string{"--git-dir=fake", "-C", "sub", "-c", "a=b"}
	if !slices.Equal(got, want) {
		t.Errorf("globalOptions = %q, want %q", got, want)
	}
}

// TestGitPrograms: a repository whose .git/config names a fsmonitor, or
// whose hooks directory holds a hook, is found; the person's own
// configuration and a clean repository are not.
func TestGitPrograms(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\tpager = less\n"), 0o644)
	repo := t.TempDir()
	if out, err := exec.Command(git, "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	p := shell.Program{Argv: []string{"git", "status"}, Path: git, Dir: repo, Env: os.Environ()}
	if why := gitPrograms(context.Background(), p, false); why != "" {
		t.Fatalf("clean repository: %s", why)
	}
	hook := filepath.Join(repo, ".git", "hooks", "post-index-change")
	os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755)
	if why := gitPrograms(context.Background(), p, false); why == "" {
		t.Error("a hook was not found")
	}
	os.Remove(hook)
	f, _ := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[core]\n\tfsmonitor = touch x\n")
	f.Close()
	if why := gitPrograms(context.Background(), p, false); why == "" {
		t.Error("a fsmonitor of the repository was not found")
	}
	// A -c on the command line: found unless a person saw the command.
	os.WriteFile(filepath.Join(repo, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644)
	pc := p
	pc.Argv = []string{"git", "-c", "core.pager=evil", "log"}
	if why := gitPrograms(context.Background(), pc, false); why == "" {
		t.Error("git -c core.pager= was not found")
	}
	if why := gitPrograms(context.Background(), pc, true); why != "" {
		t.Errorf("a person saw git -c: %s", why)
	}
}

// TestRefusalClass: a refused step is a permission denial.
func TestRefusalClass(t *testing.T) {
	g := New(Config{Basis: ReadOnly})
	err := g.Exec(context.Background(), shell.Program{Argv: []string{"rm", "-f", "x"}, Path: "/bin/rm", Dir: t.TempDir()})
	if !errors.Is(err, errdefs.ErrPermissionDenied) {
		t.Fatalf("rm under a read-only basis: %v, want a denial", err)
	}
	var r *Refusal
	if !errors.As(err, &r) || r.What != "rm -f x" {
		t.Errorf("refusal %#v", r)
	}
	if err := g.Exec(context.Background(), shell.Program{Argv: []string{"ls", "-l"}, Path: "/bin/ls", Dir: t.TempDir()}); err != nil {
		t.Errorf("ls: %v", err)
	}
	if err := g.Open(context.Background(), "/tmp/x", os.O_WRONLY|os.O_CREATE); err == nil {
		t.Error("a write under a read-only basis was allowed")
	}
	if err := g.Open(context.Background(), "/dev/null", os.O_WRONLY); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
	// Asked, and approved once.
	asked := 0
	g = New(Config{Basis: ReadOnly, Ask: func(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		asked++
		if p.Decision.Offer != ceiling.Once {
			t.Errorf("offer %v, want once", p.Decision.Offer)
		}
		return ceiling.Once, nil
	}})
	if err := g.Exec(context.Background(), shell.Program{Argv: []string{"rm", "x"}, Path: "/bin/rm", Dir: t.TempDir()}); err != nil || asked != 1 {
		t.Errorf("approved once: %v, asked %d", err, asked)
	}
}

// BenchmarkGuardExec is the check where a command runs, per program: a
// simple read-only one, and one with more words, under the read-only basis
// (git is left out: its configuration check starts a process).
func BenchmarkGuardExec(b *testing.B) {
	dir := b.TempDir()
	g := New(Config{Basis: ReadOnly, ProjectDir: dir, Home: b.TempDir()})
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"simple", []string{"cat", "README.md"}},
		{"words", []string{"grep", "-rn", "--include=*.go", "TODO", "src", "cmd", "internal"}},
	} {
		p := shell.Program{Argv: tc.argv, Path: "/usr/bin/" + tc.argv[0], Dir: dir}
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := g.Exec(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCompoundRuleCoversItsCommands: under the exact pattern of a compound
// command (a rule or grant of that very command), each simple command
// written in it runs word for word, however the rule quoted it; a step
// with other words is not covered.
func TestCompoundRuleCoversItsCommands(t *testing.T) {
	t.Parallel()
	pat := keys.MustParsePattern(`run_command:"'touch' a && touch \"b c\" | wc -l; echo $X"`)
	g := New(Config{Basis: Pattern, Pattern: pat})
	dir := t.TempDir()
	for _, tc := range []struct {
		argv []string
		ok   bool
	}{
		{[]string{"touch", "a"}, true},
		{[]string{"touch", "b c"}, true},
		{[]string{"wc", "-l"}, true},
		{[]string{"touch", "b", "c"}, false},
		{[]string{"touch", "a", "x"}, false},
		{[]string{"rm", "a"}, false},
	} {
		err := g.Exec(context.Background(), shell.Program{Argv: tc.argv, Path: "/usr/bin/" + tc.argv[0], Dir: dir})
		if got := err == nil; got != tc.ok {
			t.Errorf("Exec(%q) under %s: %v, want allowed %v", tc.argv, pat, err, tc.ok)
		}
	}
	// A simple command's pattern keeps its meaning: its key, nothing more.
	g = New(Config{Basis: Pattern, Pattern: keys.MustParsePattern("run_command:touch:a")})
	if err := g.Exec(context.Background(), shell.Program{Argv: []string{"rm", "a"}, Path: "/usr/bin/rm", Dir: dir}); err == nil {
		t.Error("rm a allowed under run_command:touch:a")
	}
}

// TestSubmodulePrograms: git status recurses into submodules and runs a
// submodule's core.fsmonitor: a fsmonitor, hook or pager in the
// configuration of any submodule — absorbed into .git/modules, in its own
// working tree, or nested in another — is found, and the real git status
// does run it (the control that the class is real); clean submodules are
// not.
func TestSubmodulePrograms(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	t.Setenv("HOME", t.TempDir())
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(git, append([]string{"-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	lib := t.TempDir()
	run(lib, "init", "-q")
	os.WriteFile(filepath.Join(lib, "lib.txt"), []byte("lib\n"), 0o644)
	run(lib, "add", ".")
	run(lib, "commit", "-q", "-m", "lib")
	mid := t.TempDir() // a repository with lib as its own submodule: nested
	run(mid, "init", "-q")
	run(mid, "submodule", "-q", "add", lib, "lib")
	run(mid, "commit", "-q", "-m", "mid")
	top := t.TempDir()
	run(top, "init", "-q")
	run(top, "submodule", "-q", "add", lib, "vendor/lib")
	run(top, "submodule", "-q", "add", mid, "mid")
	run(top, "commit", "-q", "-m", "top")
	run(top, "submodule", "-q", "update", "--init", "--recursive")
	p := shell.Program{Argv: []string{"git", "status"}, Path: git, Dir: top, Env: os.Environ()}
	if why := gitPrograms(context.Background(), p, false); why != "" {
		t.Fatalf("clean submodules: %s", why)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	gitdir := func(wt string) string {
		cmd := exec.Command(git, "rev-parse", "--absolute-git-dir")
		cmd.Dir = wt
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct {
		name, wt, add string
	}{
		{"a fsmonitor of a submodule", filepath.Join(top, "vendor/lib"), "[core]\n\tfsmonitor = touch " + marker + "\n"},
		{"a pager of a nested submodule", filepath.Join(top, "mid/lib"), "[core]\n\tpager = touch " + marker + "\n"},
		{"a hooks path of a submodule", filepath.Join(top, "mid"), "[core]\n\thooksPath = /tmp/evil-hooks\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(gitdir(c.wt), "config")
			orig, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(cfg, orig, 0o644)
			os.WriteFile(cfg, append(append([]byte{}, orig...), c.add...), 0o644)
			if why := gitPrograms(context.Background(), p, false); why == "" || !strings.Contains(why, "submodule") {
				t.Errorf("not found: %q", why)
			}
		})
	}
	// A hook in a submodule's git directory.
	hook := filepath.Join(gitdir(filepath.Join(top, "vendor/lib")), "hooks", "post-checkout")
	os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755)
	if why := gitPrograms(context.Background(), p, false); !strings.Contains(why, "hook") {
		t.Errorf("a submodule's hook: %q", why)
	}
	os.Remove(hook)
	// The control: the real git status runs a submodule's fsmonitor.
	cfg := filepath.Join(gitdir(filepath.Join(top, "vendor/lib")), "config")
	orig, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(orig, []byte("[core]\n\tfsmonitor = touch "+marker+"\n")...), 0o644)
	os.WriteFile(filepath.Join(top, "vendor/lib", "lib.txt"), []byte("changed\n"), 0o644)
	cmd := exec.Command(git, "status")
	cmd.Dir = top
	cmd.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Logf("git status did not run the submodule's fsmonitor here (%v): the class is checked all the same", err)
	}
}

// TestExactGrantCoversItsExpansion: under the exact pattern of a command
// keyed by its whole text (a grant of rm *.log, of a wrapper, of a quoted
// operand), the program the interpreter starts runs when its expanded
// words are what the written words expand to — a glob's matches, or the
// glob itself when nothing matched — and not otherwise; a grant of one
// wrapper invocation never lets another run.
func TestExactGrantCoversItsExpansion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		pattern string
		argv    []string
		ok      bool
	}{
		{`run_command:"rm *.log"`, []string{"rm", "a.log"}, true},
		{`run_command:"rm *.log"`, []string{"rm", "a.log", "b.log", "-x.log"}, true},
		{`run_command:"rm *.log"`, []string{"rm", "*.log"}, true}, // nothing matched
		{`run_command:"rm *.log"`, []string{"rm"}, false},
		{`run_command:"rm *"`, []string{"rm", ""}, false}, // no glob expands to nothing
		{`run_command:"rm *"`, []string{"rm", "-rf", "/"}, false},
		{`run_command:"rm *"`, []string{"rm", ".."}, false},
		{`run_command:"rm *.log"`, []string{"rm", "-rf", "/"}, false},
		{`run_command:"rm *.log"`, []string{"rm", "a.log", "x.txt"}, false},
		{`run_command:"rm *.log"`, []string{"rm", "sub/a.log"}, false}, // * stops at /
		{`run_command:"rm *.log"`, []string{"rm", ".a.log"}, false},    // nor matches a leading dot
		{`run_command:"rm *.log"`, []string{"rm", "-rf", "a.log"}, false},
		{`run_command:"rm *.log"`, []string{"sh", "a.log"}, false},
		{`run_command:"rm -f 'my dir'/*.log x"`, []string{"rm", "-f", "my dir/a.log", "my dir/b.log", "x"}, true},
		{`run_command:"rm -f 'my dir'/*.log x"`, []string{"rm", "-f", "my dir/a.log", "y"}, false},
		{`run_command:"rm -f 'my dir'/*.log x"`, []string{"rm", "-f", "my dirx/a.log", "x"}, false},
		{`run_command:"rm -f '*'.log"`, []string{"rm", "-f", "a.log"}, false}, // a quoted * is a character
		{`run_command:"rm -f '*'.log"`, []string{"rm", "-f", "*.log"}, true},
		{`run_command:"rm .?.log"`, []string{"rm", ".a.log"}, true},
		{`run_command:"rm [ab].log"`, []string{"rm", "b.log"}, true},
		{`run_command:"rm [ab].log"`, []string{"rm", "c.log"}, false},
		{`run_command:"rm 'old notes.txt'"`, []string{"rm", "old notes.txt"}, true},
		{`run_command:"rm 'old notes.txt'"`, []string{"rm", "old", "notes.txt"}, false},
		{`run_command:"timeout 60 true"`, []string{"timeout", "60", "true"}, true},
		{`run_command:"timeout 60 true"`, []string{"timeout", "60", "sh", "-c", "x"}, false},
		{`run_command:"env CI=1 npm test"`, []string{"env", "CI=1", "npm", "test"}, true},
		{`run_command:"env CI=1 npm test"`, []string{"env", "CI=1", "sh"}, false},
		{`run_command:"sudo ls"`, []string{"sudo", "rm"}, false},
		{`run_command:"xargs rm"`, []string{"xargs", "cat"}, false},
		{`run_command:"rm $F"`, []string{"rm", "-rf", "/"}, false}, // a parameter: asked at execution
		{`run_command:"rm {a,b}.log"`, []string{"rm", "a.log", "b.log"}, false},
		{`run_command:"rm *.log && rm *.tmp"`, []string{"rm", "x.tmp"}, true},
		{`run_command:"rm *.log && rm *.tmp"`, []string{"rm", "x.tmp", "y.log"}, false},
	} {
		pat := keys.MustParsePattern(tc.pattern)
		g := New(Config{Basis: Pattern, Pattern: pat})
		err := g.Exec(context.Background(), shell.Program{Argv: tc.argv, Path: "/usr/bin/" + tc.argv[0], Dir: dir})
		if got := err == nil; got != tc.ok {
			t.Errorf("Exec(%q) under %s: %v, want allowed %v", tc.argv, pat, err, tc.ok)
		}
	}
}

// TestScopeOfExactRule: a rule or grant whose command holds " (" reads
// back whole.
func TestScopeOfExactRule(t *testing.T) {
	t.Parallel()
	for _, rule := range []string{`run_command:"echo 'a (b)'"`, `run_command:"echo 'a (b)'" (session)`} {
		s, p := BasisOf(&permission.Decision{Layer: permission.LayerSession, Rule: rule})
		if s != Pattern || p.String() != `run_command:"echo 'a (b)'"` {
			t.Errorf("BasisOf(%s) = %v %s, want Pattern and the exact pattern", rule, s, p)
		}
	}
}
