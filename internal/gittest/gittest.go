// Package gittest holds the hostile git plants that the tests of every
// sandbox run (@wasm, @docker, the Kubernetes copy-back): a project that
// is a real git repository, the files a sandbox with it mounted rw writes
// to make the host's git run a program of its choosing, and the check, on
// the host, that git runs nothing. It is for tests only and needs git.
package gittest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/sensitive"
	"github.com/ccrun/ccrun/runtime/job"
)

// Tree is a project made for one plant: Dir, a git repository with one
// commit, holding beside it
//
//   - nested/, a repository of its own (nested/.git);
//   - bare.git/, a bare repository, and link/.git, a gitfile naming it;
//   - mod/.git, a gitfile naming ../modgit, which is not there;
//   - X/ and other.txt, ordinary;
//
// and, outside Dir, Script: a program that makes Marker when it runs.
type Tree struct {
	Dir    string
	Script string
	Marker string
	home   string
	bin    string // git
}

// Step is one thing a sandbox makes: a directory (Dir) or a file holding
// Data, at Path, relative to the mount and slash-separated. A file's
// directory is made by an earlier step or was there.
type Step struct {
	Path string
	Data string
	Dir  bool
}

// Plant is one attack: its steps in order, and the directories (relative
// to the tree) where the host's git status would run Script if the steps
// all landed.
type Plant struct {
	Name  string
	Steps []Step
	Check []string
	// NoProof says why the plant does not make git run Script even when
	// every step lands (TestPlantsWork skips it); "" when it does.
	NoProof string
}

// New makes a Tree in a temporary directory of t, or skips t when git is
// not installed.
func New(t testing.TB) *Tree {
	t.Helper()
	g, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	out := t.TempDir()
	tr := &Tree{Dir: filepath.Join(out, "p"), Script: filepath.Join(out, "fsmonitor.sh"),
		Marker: filepath.Join(out, "MARKER"), home: filepath.Join(out, "home"), bin: g}
	for _, d := range []string{tr.Dir, tr.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\ntouch '" + tr.Marker + "'\n"
	if err := os.WriteFile(tr.Script, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tr.run(t, ".", "init", "-q", "-b", "main")
	tr.write(t, "README.md", "project\n")
	tr.write(t, "other.txt", "OTHER\n")
	tr.write(t, "X/readme", "x\n")
	tr.run(t, ".", "add", "README.md")
	tr.run(t, ".", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
	tr.run(t, ".", "init", "-q", "nested")
	tr.run(t, ".", "init", "-q", "--bare", "bare.git")
	tr.write(t, "link/.git", "gitdir: ../bare.git\n")
	tr.write(t, "mod/.git", "gitdir: ../modgit\n")
	return tr
}

func (tr *Tree) write(t testing.TB, rel, data string) {
	t.Helper()
	p := filepath.Join(tr.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// git runs git in dir (relative to the tree) as the host would: the
// user's configuration left out, every directory safe, no discovery
// above the tree's parent.
func (tr *Tree) git(dir string, args ...string) (string, error) {
	cmd := exec.Command(tr.bin, append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = filepath.Join(tr.Dir, filepath.FromSlash(dir))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tr.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(tr.Dir)}
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

func (tr *Tree) run(t testing.TB, dir string, args ...string) {
	t.Helper()
	if out, err := tr.git(dir, args...); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Config is a repository configuration that runs Script on git status.
func (tr *Tree) Config() string { return "[core]\n\tfsmonitor = " + tr.Script + "\n" }

// Plants are the attacks, on tr's Script.
func (tr *Tree) Plants() []Plant {
	cfg := tr.Config()
	dir := func(p string) Step { return Step{Path: p, Dir: true} }
	file := func(p, data string) Step { return Step{Path: p, Data: data} }
	evil := []Step{dir("evil"), dir("evil/objects"), dir("evil/refs"), file("evil/config", cfg)}
	cat := func(a []Step, b ...Step) []Step { return append(append([]Step(nil), a...), b...) }
	return []Plant{
		{Name: "the project's own commondir", Check: []string{"."},
			Steps: cat(evil, file(".git/commondir", "../evil\n"))},
		{Name: "a gitfile", Check: []string{"X"},
			Steps: cat(evil, file("evil/HEAD", "ref: refs/heads/main\n"), file("X/.git", "gitdir: ../evil\n"))},
		{Name: "a nested repository's commondir", Check: []string{"nested"},
			Steps: cat(evil, file("nested/.git/commondir", "../../evil\n"))},
		{Name: "a new nested repository with a commondir", Check: []string{"Y"},
			Steps: cat(evil, dir("Y"), dir("Y/.git"), file("Y/.git/HEAD", "ref: refs/heads/main\n"),
				dir("Y/.git/objects"), dir("Y/.git/refs"), file("Y/.git/commondir", "../../evil\n"))},
		{Name: "a renamed git directory", Check: []string{"mod", "modgit"},
			Steps: []Step{dir("modgit"), file("modgit/config", cfg), file("modgit/HEAD", "ref: refs/heads/main\n"),
				dir("modgit/objects"), dir("modgit/refs")}},
		{Name: "a bare repository's config", Check: []string{"link", "bare.git"},
			Steps: []Step{file("bare.git/config", cfg)}},
		{Name: "a .gitmodules with update = !cmd", Check: []string{"."},
			Steps:   []Step{file(".gitmodules", "[submodule \"m\"]\n\tpath = m\n\turl = ./m\n\tupdate = !"+tr.Script+"\n")},
			NoProof: "git takes no update command from .gitmodules; the file is protected as git's configuration"},
	}
}

// Ordinary is a step every sandbox test adds to each plant: it must land.
var Ordinary = Step{Path: "ordinary.txt", Data: "ORDINARY\n"}

// Apply makes p's steps directly in the tree, unguarded: what the
// sandboxes must prevent.
func (tr *Tree) Apply(t testing.TB, p Plant) {
	t.Helper()
	Make(t, tr.Dir, p.Steps)
}

// Make makes steps in dir, unguarded (a copy of the tree in a pod).
func Make(t testing.TB, dir string, steps []Step) {
	t.Helper()
	for _, s := range steps {
		full := filepath.Join(dir, filepath.FromSlash(s.Path))
		var err error
		if s.Dir {
			err = os.MkdirAll(full, 0o755)
		} else {
			err = os.WriteFile(full, []byte(s.Data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Script is steps as sh lines run in dir (a container's or a pod's
// mount), each printing "DONE i" when its step was made or "BLOCKED i"
// when it was refused.
func Script(dir string, steps []Step) string {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var b strings.Builder
	b.WriteString("cd " + quote(dir) + "\n")
	for i, s := range steps {
		cmd := "mkdir " + quote(s.Path)
		if !s.Dir {
			cmd = "printf '%s' " + quote(s.Data) + " > " + quote(s.Path)
		}
		fmt.Fprintf(&b, "if ( %s ) 2>/dev/null; then echo 'DONE %d'; else echo 'BLOCKED %d'; fi\n", cmd, i, i)
	}
	return b.String()
}

// Ran runs git status in each of p's Check directories and reports
// whether Script ran (the Marker exists), with what git said.
func (tr *Tree) Ran(p Plant) (bool, string) {
	var out strings.Builder
	for _, d := range p.Check {
		if _, err := os.Stat(filepath.Join(tr.Dir, filepath.FromSlash(d))); err != nil {
			continue
		}
		o, err := tr.git(d, "status")
		fmt.Fprintf(&out, "git status in %s: %v\n%s", d, err, o)
	}
	_, err := os.Stat(tr.Marker)
	return err == nil, out.String()
}

// State is what git would read as configuration or code in the tree, by
// name and by shape: every path job.Mount.ProtectedIn covers with its
// content, every directory git takes for a repository, every .git entry.
// A sandbox's run must leave it as it was.
func (tr *Tree) State(t testing.TB) map[string]string {
	t.Helper()
	root, err := os.OpenRoot(tr.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	m := job.Mount{Host: tr.Dir, Guest: "/w", Writable: true}
	out := map[string]string{}
	if sensitive.GitDir(root, ".") {
		out["."] = "repository"
	}
	err = filepath.WalkDir(tr.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tr.Dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		v := ""
		if d.IsDir() && sensitive.GitDir(root, rel) {
			v = "repository"
		}
		if _, ok := m.ProtectedIn(root, rel); ok || d.Name() == ".git" {
			v += " " + d.Type().String()
			if d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				v += fmt.Sprintf(" %q", b)
			}
		}
		if v != "" {
			out[rel] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Diff lists what differs between two States.
func Diff(before, after map[string]string) string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			out = append(out, "- "+k+": "+v)
		} else if w != v {
			out = append(out, "~ "+k+": "+v+" => "+w)
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "+ "+k+": "+v)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
