package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/rootfs"
)

// implantTree is the host tree of the implant tests, mounted writable at
// /rw. Protected files hold "ORIGINAL"; ordinary ones something else.
var implantTree = map[string]string{
	"ordinary.txt":           "ORDINARY",
	"other.txt":              "OTHER",
	"sub/notes.txt":          "NOTES",
	".git/config":            "ORIGINAL",
	".git/description":       "DESC",
	".git/hooks/pre-push":    "ORIGINAL",
	"ccrun.json":             "ORIGINAL",
	".bashrc":                "ORIGINAL",
	".env":                   "ORIGINAL",
	".ccrun/audit.jsonl":     "ORIGINAL",
	"stage/config":           "[core]\n\tfsmonitor = evil\n",
	"realgit/config":         "ORIGINAL", // the host's linked/.git/config
	"shared/claude/x.json":   "ORIGINAL", // the host's .claude/x.json
	"sub/.git/":              "",         // an empty directory
	"other/":                 "",
	"emptyhooks/.git/hooks/": "",
}

// implantLinks are the host's own symbolic links: names that make what
// they point at protected.
var implantLinks = map[string]string{
	"linked/.git": "../realgit",
	".claude":     "shared/claude",
}

func newImplantTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range implantTree {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for l, target := range implantLinks {
		full := filepath.Join(dir, l)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot is every entry of a tree: type, mode, size, mtime, content or
// link target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fmt.Sprint(st.Mode(), st.ModTime().UnixNano())
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case st.Mode().IsRegular():
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

func diff(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "- "+k)
		} else if w != v {
			out = append(out, "~ "+k+": "+v+" => "+w)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "+ "+k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// implantCase is one attempt: the guest's steps (each run as its own
// guest), the last of which must be BLOCKED (or DONE, for a control).
type implantCase struct {
	name  string
	steps [][]string
	path  string // the path writeWays or createWays tries; "" for the others
}

// writeWays are the ways to change an existing file at p; each must be
// refused when p is protected and work when it is not.
func writeWays(p string) []implantCase {
	cases := []implantCase{
		{name: "create over " + p, steps: [][]string{{"write", "/rw", p, "PWNED"}}},
		{name: "append to " + p, steps: [][]string{{"append", "/rw", p, "PWNED"}}},
		{name: "truncate " + p, steps: [][]string{{"trunc", "/rw", p}}},
		{name: "set size of " + p, steps: [][]string{{"setsize", "/rw", p}}},
		{name: "utimes " + p, steps: [][]string{{"utimes", "/rw", p}}},
		{name: "futimes " + p, steps: [][]string{{"futimes", "/rw", p}}},
		{name: "rename onto " + p, steps: [][]string{{"rename", "/rw", "other.txt", "/rw", p}}},
		{name: "rename from " + p, steps: [][]string{{"rename", "/rw", p, "/rw", "moved.txt"}}},
		{name: "hard link to " + p + " then write", steps: [][]string{{"link", "/rw", p, "/rw", "alias.txt", "PWNED"}}},
		{name: "symlink to " + p + " then write", steps: [][]string{{"symlink-write", "/rw", relTo(p), "alias.txt", "PWNED"}}},
		{name: "remove " + p, steps: [][]string{{"unlink", "/rw", p}}},
	}
	for i := range cases {
		cases[i].path = p
	}
	return cases
}

// createWays are the ways to make a file or directory at p that is not
// there.
func createWays(p string) []implantCase {
	cases := []implantCase{
		{name: "create " + p, steps: [][]string{{"write", "/rw", p, "PWNED"}}},
		{name: "rename onto " + p, steps: [][]string{{"rename", "/rw", "other.txt", "/rw", p}}},
		{name: "hard link at " + p, steps: [][]string{{"link-only", "/rw", "other.txt", "/rw", p}}},
		{name: "symlink at " + p, steps: [][]string{{"symlink-only", "/rw", relFrom(p, "other.txt"), p}}},
		{name: "symlink to " + p + " then write", steps: [][]string{{"symlink-write", "/rw", relTo(p), "alias.txt", "PWNED"}}},
		{name: "mkdir " + p, steps: [][]string{{"mkdir", "/rw", p}}},
	}
	for i := range cases {
		cases[i].path = p
	}
	return cases
}

// relTo is p as a link target from the mount's top.
func relTo(p string) string { return p }

// relFrom is target as seen from the directory of link.
func relFrom(link, target string) string {
	r, _ := filepath.Rel(filepath.Dir(link), target)
	return r
}

// protectedExisting and protectedAbsent are the protected paths of
// implantTree; ordinaryExisting and ordinaryAbsent are their controls.
var (
	protectedExisting = []string{".git/config", ".git/hooks/pre-push", "ccrun.json", ".bashrc", ".env",
		".ccrun/audit.jsonl", "realgit/config", "shared/claude/x.json", "linked/.git/config", ".claude/x.json"}
	protectedAbsent = []string{".git/hooks/pre-commit", "ccrun.local.json", ".envrc", ".mcp.json",
		".ccrun/capabilities", ".vscode", "sub/.git/config", "sub/.git/hooks", ".git/info",
		"server.pem", "sub/.envrc", "realgit/hooks", "sub/./../.envrc"}
	ordinaryExisting = []string{"ordinary.txt", "sub/notes.txt", ".git/description"}
	ordinaryAbsent   = []string{"new.txt", "sub/new", ".git/newfile", "sub/.git/description"}
)

// implantAttacks are the cases that must all be refused, leaving the tree
// as it was.
func implantAttacks() []implantCase {
	var out []implantCase
	for _, p := range protectedExisting {
		out = append(out, writeWays(p)...)
		out = append(out, implantCase{name: "set size of " + p + " opened read-only", steps: [][]string{{"setsize-ro", "/rw", p}}})
	}
	for _, p := range protectedAbsent {
		if p == ".git/info" {
			// .git/info is not protected; .git/info/attributes is.
			out = append(out, implantCase{name: "mkdir .git/info then create attributes", steps: [][]string{{"mkdir", "/rw", ".git/info"}, {"write", "/rw", ".git/info/attributes", "PWNED"}}})
			continue
		}
		out = append(out, createWays(p)...)
	}
	return append(out,
		implantCase{name: "rmdir .git/hooks", steps: [][]string{{"rmdir", "/rw", "emptyhooks/.git/hooks"}}},
		implantCase{name: "rename a directory onto an empty .git", steps: [][]string{{"rename", "/rw", "stage", "/rw", "sub/.git"}}},
		implantCase{name: "rename a directory to a new .git", steps: [][]string{{"rename", "/rw", "stage", "/rw", "other/.git"}}},
		implantCase{name: "rename .git away", steps: [][]string{{"rename", "/rw", ".git", "/rw", "oldgit"}}},
		implantCase{name: "rename a directory holding .git", steps: [][]string{{"rename", "/rw", "emptyhooks", "/rw", "moved"}}},
		implantCase{name: "symlink .git to a directory of ours", steps: [][]string{{"symlink-only", "/rw", "../stage", "other/.git"}}},
		implantCase{name: "symlink .config to a directory of ours", steps: [][]string{{"symlink-only", "/rw", "stage", ".config"}}},
		implantCase{name: "symlink alias to .git, then write alias/config", steps: [][]string{
			{"symlink-only", "/rw", ".git", "al"}, {"write", "/rw", "al/config", "PWNED"}}},
		implantCase{name: "symlink alias to .git, then mkdir alias/hooks", steps: [][]string{
			{"symlink-only", "/rw", "sub/.git", "al"}, {"mkdir", "/rw", "al/hooks"}}},
		implantCase{name: "symlink alias to dir, then rename it to .git", steps: [][]string{
			{"symlink-only", "/rw", "stage", "al"}, {"rename", "/rw", "al", "/rw", "other/.git"}}},
		implantCase{name: "hard link a link to .git at .git", steps: [][]string{
			{"symlink-only", "/rw", "stage", "al"}, {"link-only", "/rw", "al", "/rw", "other/.git"}}},
		implantCase{name: "mkdir through the host's link", steps: [][]string{{"mkdir", "/rw", "linked/.git/hooks"}}},
		implantCase{name: "replace the host's link", steps: [][]string{{"unlink", "/rw", ".claude"}}},
		implantCase{name: "dotdot to .envrc", steps: [][]string{{"write", "/rw", "sub/../.envrc", "PWNED"}}},
	)
}

// implantControls are the same ways on ordinary paths: each must work.
func implantControls() []implantCase {
	var out []implantCase
	for _, p := range ordinaryExisting {
		out = append(out, writeWays(p)...)
	}
	for _, p := range ordinaryAbsent {
		out = append(out, createWays(p)...)
	}
	return append(out,
		implantCase{name: "mkdir .git/info", steps: [][]string{{"mkdir", "/rw", ".git/info"}}},
		implantCase{name: "rename an ordinary directory", steps: [][]string{{"rename", "/rw", "stage", "/rw", "other/stage"}}},
		implantCase{name: "rename a directory holding .git elsewhere", steps: [][]string{{"rename", "/rw", "sub", "/rw", "sub2"}}},
		implantCase{name: "symlink alias to .git", steps: [][]string{{"symlink-only", "/rw", ".git", "al"}}},
		implantCase{name: "read a protected file", steps: [][]string{{"read", "/rw", ".git/config"}}},
	)
}

// runImplant runs each step of c on a fresh tree through e and checks
// that the last step printed want, and, for a refusal, that the
// protected paths are as they were.
func runImplant(t *testing.T, e *Executor, c implantCase, want string, m func(string) job.Mount) {
	t.Helper()
	dir := newImplantTree(t)
	before := snapshot(t, dir)
	var got string
	for i, args := range c.steps {
		res, err := e.Run(context.Background(), Spec{Module: guests["escape"], Name: "escape", Args: args,
			Mounts: []job.Mount{m(dir)}})
		if err != nil {
			t.Fatalf("step %q: %v", args, err)
		}
		got = strings.TrimSpace(string(res.Stdout))
		if res.Reason != job.Exit || res.ExitCode != 0 {
			t.Fatalf("step %q: %s %d: %s%s", args, res.Reason, res.ExitCode, res.Stdout, res.Stderr)
		}
		if i < len(c.steps)-1 && !strings.HasPrefix(got, "DONE") {
			t.Fatalf("setup step %q: %s", args, got)
		}
	}
	if !strings.HasPrefix(got, want) {
		t.Errorf("%s: got %q, want %s", c.name, got, want)
	}
	after := snapshot(t, dir)
	if want == "BLOCKED" {
		for _, p := range append(append([]string(nil), protectedExisting...), protectedAbsent...) {
			k := filepath.Clean(p)
			if k == ".git/info" {
				k = ".git/info/attributes"
			}
			if before[k] != after[k] {
				t.Errorf("%s: protected %s changed: %q => %q", c.name, p, before[k], after[k])
			}
		}
		if len(c.steps) == 1 {
			if d := diff(before, after); d != "" {
				t.Errorf("%s: refused, yet the tree changed:\n%s", c.name, d)
			}
		}
		// The guard's refusal is EACCES (WASI errno 2); a refusal with
		// another errno came from elsewhere (the kernel, os.Root) and
		// must be one of the cases known to be refused there.
		if !strings.HasSuffix(got, "errno 2") && !otherRefusal[c.name] {
			t.Errorf("%s: refused with %q, want EACCES (errno 2)", c.name, got)
		}
	} else if d := diff(before, after); d == "" && c.steps[0][0] != "read" {
		t.Errorf("%s: worked, yet the tree did not change", c.name)
	}
}

// otherRefusal are the attacks refused before the guard is asked.
var otherRefusal = map[string]bool{}

func writable(dir string) job.Mount { return job.Mount{Host: dir, Guest: "/rw", Writable: true} }

// workerPaths are the protected paths TestImplantsWorker tries every way
// on: the worker runs the same file system as the process (TestImplants
// has the whole table); what it adds is the mount, Implants included,
// carried to another process. The whole table through the worker takes
// minutes under -race on two cores.
var workerPaths = map[string]bool{".git/config": true, "linked/.git/config": true, ".envrc": true, "sub/.git/hooks": true}

func testImplants(t *testing.T, e *Executor, subset bool) {
	keep := func(c implantCase) bool { return !subset || c.path == "" || workerPaths[c.path] }
	for _, c := range implantAttacks() {
		if !keep(c) {
			continue
		}
		t.Run("attack/"+c.name, func(t *testing.T) {
			t.Parallel()
			runImplant(t, e, c, "BLOCKED", writable)
		})
	}
	for _, c := range implantControls() {
		if subset && c.path != "ordinary.txt" && c.path != "new.txt" && c.path != "" {
			continue
		}
		t.Run("control/"+c.name, func(t *testing.T) {
			t.Parallel()
			runImplant(t, e, c, "DONE", writable)
		})
	}
	named := func(dir string) job.Mount {
		m := writable(dir)
		m.Implants = []string{".git/hooks", ".envrc"}
		return m
	}
	for _, c := range []implantCase{
		{name: "create a named hook", steps: [][]string{{"write", "/rw", ".git/hooks/pre-commit", "#!/bin/sh"}}},
		{name: "create a named .envrc", steps: [][]string{{"write", "/rw", ".envrc", "export A=1"}}},
		{name: "remove a named hook", steps: [][]string{{"unlink", "/rw", ".git/hooks/pre-push"}}},
	} {
		t.Run("named/"+c.name, func(t *testing.T) {
			t.Parallel()
			runImplant(t, e, c, "DONE", named)
		})
	}
	for _, c := range []implantCase{
		{name: "config beside a named hook", steps: [][]string{{"write", "/rw", ".git/config", "PWNED"}}},
		{name: "a nested .envrc", steps: [][]string{{"write", "/rw", "sub/.envrc", "PWNED"}}},
	} {
		t.Run("named/"+c.name, func(t *testing.T) {
			t.Parallel()
			runImplant(t, e, c, "BLOCKED", named)
		})
	}
}

// TestImplants: a writable mount's protected paths cannot be written, in
// any way, by a guest running in process; ordinary files beside them can.
func TestImplants(t *testing.T) {
	t.Parallel()
	testImplants(t, shared, false)
}

// TestImplantsWorker: the same through the --wasm-worker process, every
// way on workerPaths and the special cases (links, directories, named
// implants).
func TestImplantsWorker(t *testing.T) {
	t.Parallel()
	testImplants(t, newWorkerExecutor(t), true)
}

func TestImplantsBadName(t *testing.T) {
	t.Parallel()
	m := writable(t.TempDir())
	m.Implants = []string{"../.envrc"}
	_, err := shared.Run(context.Background(), Spec{Module: guests["probe"], Args: []string{"args"}, Mounts: []job.Mount{m}})
	if !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("err = %v, want ErrInvalidSpec", err)
	}
}

// BenchmarkGuardScan is the cost a writable mount adds to a run's start:
// the scan of a tree of 10,000 files in 100 directories for links at
// protected names.
func BenchmarkGuardScan(b *testing.B) {
	dir := b.TempDir()
	for i := range 100 {
		d := filepath.Join(dir, fmt.Sprint("d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 100 {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprint("f", j)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ResetTimer()
	for b.Loop() {
		mfs, err := rootfs.New(r, job.Mount{Host: dir, Guest: "/w", Writable: true}, rootfs.NewRun())
		if err != nil {
			b.Fatal(err)
		}
		_ = mfs.(io.Closer).Close()
	}
}
