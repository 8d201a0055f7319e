package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/runtime/job"
)

// protectTree is the host tree of the implant tests, mounted writable at
// /w. Every entry is writable by anyone, so that what the container cannot
// write it cannot because of the protection, not of permissions.
var protectTree = map[string]string{
	"ordinary.txt":        "ORDINARY",
	"other.txt":           "OTHER",
	"sub/notes.txt":       "NOTES",
	".git/config":         "ORIGINAL",
	".git/description":    "DESC",
	".git/hooks/pre-push": "ORIGINAL",
	"ccrun.json":          "ORIGINAL",
	".bashrc":             "ORIGINAL",
	".env":                "ORIGINAL",
	".ccrun/audit.jsonl":  "ORIGINAL",
	"sub/.git/config":     "ORIGINAL",
	"stage/config":        "[core]\n\tfsmonitor = evil\n",
	"other/":              "",
}

var (
	dockerProtectedExisting = []string{".git/config", ".git/hooks/pre-push", "ccrun.json", ".bashrc", ".env",
		".ccrun/audit.jsonl", "sub/.git/config"}
	dockerProtectedAbsent = []string{".git/hooks/pre-commit", "ccrun.local.json", ".envrc", ".mcp.json",
		".vscode", ".vscode/tasks.json", ".claude", ".ccrun/capabilities"}
	dockerOrdinaryExisting = []string{"ordinary.txt", "sub/notes.txt", ".git/description"}
	dockerOrdinaryAbsent   = []string{"new.txt", "sub/new", ".git/newfile"}
)

func newProtectTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range protectTree {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o777); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	openUp(t, dir)
	return dir
}

// openUp gives every entry of dir to the container's user (65534) and
// opens its permissions (MkdirAll and WriteFile obey the umask), so that
// what the container cannot write it cannot because of the protection.
func openUp(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, 65534, 65534); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o777)
		}
		return os.Chmod(p, 0o666)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// listTree is every entry of a tree with its content (files), for
// comparing before and after.
func listTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		st, _ := os.Lstat(p)
		v := fmt.Sprint(st.Mode(), st.ModTime().UnixNano())
		if st.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			v += fmt.Sprintf(" %q", b)
		}
		out[r] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// attempt is one way to write a path, as a shell command line on P
// (the path), I (a number unique to the attempt) and other.txt.
type attempt struct{ name, cmd string }

var writeAttempts = []attempt{
	{"create over", "echo PWNED > P"},
	{"append", "echo PWNED >> P"},
	{"truncate", "truncate -s 0 P"},
	{"utimes", "touch -d 2001-01-01 P"},
	{"chmod", "chmod 600 P"},
	{"rename onto", "cp other.txt srcI && mv -f srcI P"},
	{"rename from", "mv P movedI"},
	{"hard link to, then write", "ln P aliasI && echo PWNED > aliasI"},
	{"symlink to, then write", "ln -s /w/P aliasI && echo PWNED > aliasI"},
	{"remove", "rm -f P"},
}

var createAttempts = []attempt{
	{"create", "echo PWNED > P"},
	{"rename onto", "cp other.txt srcI && mv -f srcI P"},
	{"hard link at", "ln other.txt P"},
	{"symlink at", "ln -s /w/other.txt P"},
	{"symlink to, then write", "ln -s /w/P aliasI && echo PWNED > aliasI"},
	{"mkdir", "mkdir P"},
}

// script writes each attempt on each path as one line: "DONE name" or
// "BLOCKED name". A control (own) works on a path of its own, p.I, made
// first when fresh is set.
func script(paths []string, attempts []attempt, n *int, own, fresh bool) (string, []string) {
	var b strings.Builder
	var names []string
	b.WriteString("cd /w\n")
	for _, p := range paths {
		for _, a := range attempts {
			*n++
			name := a.name + " " + p
			target := p
			if own {
				target = fmt.Sprintf("%s.%d", p, *n)
				if fresh {
					fmt.Fprintf(&b, "echo ORIG > %s\n", target)
				}
			}
			cmd := strings.ReplaceAll(strings.ReplaceAll(a.cmd, "P", target), "I", fmt.Sprint(*n))
			fmt.Fprintf(&b, "if ( %s ) 2>/dev/null; then echo 'DONE %s'; else echo 'BLOCKED %s'; fi\n", cmd, name, name)
			names = append(names, name)
		}
	}
	return b.String(), names
}

// TestProtectedPaths runs every way to write every protected path inside
// a container, through the real engine: each must fail, the host must see
// no change to any of them, the ordinary files beside them must be
// written, and what the container made deeper must be gone after the run.
func TestProtectedPaths(t *testing.T) {
	e := executor(t)
	dir := newProtectTree(t)
	before := listTree(t, dir)
	n := 0
	var all strings.Builder
	var attacks, controls []string
	s, names := script(dockerProtectedExisting, writeAttempts, &n, false, false)
	all.WriteString(s)
	attacks = append(attacks, names...)
	s, names = script(dockerProtectedAbsent, createAttempts, &n, false, false)
	all.WriteString(s)
	attacks = append(attacks, names...)
	s, names = script(dockerOrdinaryExisting, writeAttempts, &n, true, true)
	all.WriteString(s)
	controls = append(controls, names...)
	s, names = script(dockerOrdinaryAbsent, createAttempts, &n, true, false)
	all.WriteString(strings.Replace(s, "cd /w\n", "", 1))
	controls = append(controls, names...)
	// Made deeper, where nothing protected was: allowed inside, removed
	// after the run.
	all.WriteString(`mkdir -p deep/.git/hooks && echo '#!/bin/sh' > deep/.git/hooks/pre-commit && echo 'DONE deep hook'
echo '[core]' > deep/.git/config && echo 'DONE deep config'
mkdir .git/info && echo 'x filter=evil' > .git/info/attributes && echo 'DONE attributes'
ln -s ../stage other/.git && echo 'DONE link .git'
echo 'export X=1' > sub/.envrc && echo 'DONE nested envrc'
mkdir sub/.git/hooks && echo 'DONE nested hooks'
echo CONTROL > ordinary.txt && echo 'DONE control'
`)
	res := run(t, e, Spec{Cmd: sh(all.String()), Mounts: []job.Mount{{Host: dir, Guest: "/w", Writable: true}}})
	lines := map[string]bool{}
	for _, l := range strings.Split(string(res.Stdout), "\n") {
		lines[l] = true
	}
	for _, a := range attacks {
		if !lines["BLOCKED "+a] {
			t.Errorf("%s: not blocked inside the container", a)
		}
	}
	for _, c := range controls {
		if !lines["DONE "+c] {
			t.Errorf("%s: the control failed inside the container", c)
		}
	}
	for _, d := range []string{"deep hook", "deep config", "attributes", "link .git", "nested envrc", "nested hooks", "control"} {
		if !lines["DONE "+d] {
			t.Errorf("%s: not made inside the container (the test proves nothing)", d)
		}
	}
	after := listTree(t, dir)
	for _, p := range dockerProtectedExisting {
		if before[p] != after[p] {
			t.Errorf("protected %s changed: %q => %q", p, before[p], after[p])
		}
	}
	for _, p := range append(append([]string(nil), dockerProtectedAbsent...),
		"deep/.git/hooks", "deep/.git/config", "sub/.git/hooks", ".git/info/attributes", "other/.git", "sub/.envrc") {
		if _, ok := after[p]; ok {
			t.Errorf("protected %s exists on the host after the run", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ordinary.txt")); string(b) != "CONTROL\n" {
		t.Errorf("ordinary.txt = %q on the host, want the container's write", b)
	}
	// Nothing else appeared: no placeholder was left behind.
	var extra []string
	for p := range after {
		if _, ok := before[p]; ok {
			continue
		}
		keep := strings.HasPrefix(p, "alias") || strings.HasPrefix(p, "src") || strings.HasPrefix(p, "deep") ||
			strings.HasPrefix(p, "moved") || p == ".git/info"
		for _, o := range append(append([]string(nil), dockerOrdinaryAbsent...), dockerOrdinaryExisting...) {
			keep = keep || strings.HasPrefix(p, o+".")
		}
		if !keep {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("left on the host after the run: %v", extra)
	}
	// A new .git goes whole (deep/.git, not only its hooks).
	for _, want := range []string{"removed protected paths the container created", "deep/.git,", ".git/info/attributes", "other/.git", "sub/.envrc"} {
		if !strings.Contains(res.Detail, want) {
			t.Errorf("detail %q does not say %q", res.Detail, want)
		}
	}
}

// TestProtectedNamed: a mount's Implants may be written; the rest stays
// protected.
func TestProtectedNamed(t *testing.T) {
	e := executor(t)
	dir := newProtectTree(t)
	m := job.Mount{Host: dir, Guest: "/w", Writable: true, Implants: []string{".envrc", ".git/hooks"}}
	res := run(t, e, Spec{Cmd: sh(`cd /w; echo A > .envrc && echo envrc; echo B > .git/hooks/pre-commit && echo hook; echo C > .git/config || echo config-blocked`),
		Mounts: []job.Mount{m}})
	if got, want := string(res.Stdout), "envrc\nhook\nconfig-blocked\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".envrc")); string(b) != "A\n" {
		t.Errorf(".envrc = %q, want the named write kept", b)
	}
	if res.Detail != "" {
		t.Errorf("detail %q, want none", res.Detail)
	}
}

// TestProtectedRefused: what a bind cannot protect refuses the run before
// any container exists.
func TestProtectedRefused(t *testing.T) {
	e := executor(t)
	tests := []struct {
		name  string
		setup func(dir string) error
		m     func(dir string) job.Mount
	}{
		{"protected symlink", func(dir string) error { return os.Symlink("other", filepath.Join(dir, ".claude")) }, nil},
		{".git symlink", func(dir string) error { return os.Symlink("stage", filepath.Join(dir, "sub", ".git2")) }, nil},
		{"bad implant", func(string) error { return nil }, func(dir string) job.Mount {
			return job.Mount{Host: dir, Guest: "/w", Writable: true, Implants: []string{"../x/.envrc"}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := newProtectTree(t)
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			if tc.name == ".git symlink" {
				if err := os.Symlink("../stage", filepath.Join(dir, "other", ".git")); err != nil {
					t.Fatal(err)
				}
			}
			m := job.Mount{Host: dir, Guest: "/w", Writable: true}
			if tc.m != nil {
				m = tc.m(dir)
			}
			_, err := e.Run(context.Background(), Spec{Image: testImage, Cmd: sh("true"), Mounts: []job.Mount{m}})
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("err = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

// TestLoosensImplants: named implants are shown to the person.
func TestLoosensImplants(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Spec{Image: "x", Mounts: []job.Mount{{Host: dir, Guest: "/w", Writable: true, Implants: []string{".envrc"}}}}
	got := strings.Join(s.Loosens(), "\n")
	if !strings.Contains(got, "may change protected paths: .envrc") {
		t.Errorf("Loosens = %q, want the named implant shown", got)
	}
}
