package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/gittest"
	"github.com/ccrun/ccrun/runtime/job"
)

// guestSteps runs each step as its own escape guest on a writable mount
// of dir at /rw and returns the last line each printed.
func guestSteps(t *testing.T, dir string, steps [][]string) []string {
	t.Helper()
	var out []string
	for _, args := range steps {
		res, err := shared.Run(context.Background(), Spec{Module: guests["escape"], Name: "escape", Args: args,
			Mounts: []job.Mount{{Host: dir, Guest: "/rw", Writable: true}}})
		if err != nil {
			t.Fatalf("step %q: %v", args, err)
		}
		if res.Reason != job.Exit || res.ExitCode != 0 {
			t.Fatalf("step %q: %s %d: %s%s", args, res.Reason, res.ExitCode, res.Stdout, res.Stderr)
		}
		out = append(out, strings.TrimSpace(string(res.Stdout)))
	}
	return out
}

// gitSteps turns a plant's steps into the escape guest's.
func gitSteps(steps []gittest.Step) [][]string {
	var out [][]string
	for _, s := range steps {
		if s.Dir {
			out = append(out, []string{"mkdir", "/rw", s.Path})
		} else {
			out = append(out, []string{"write", "/rw", s.Path, s.Data})
		}
	}
	return out
}

// TestGitPlants: a guest with a repository mounted rw plants, step by
// step, each of gittest's attacks (the project's own .git/commondir, a
// gitfile, a nested repository's commondir, a new nested repository, a
// git directory under another name, a bare repository's config,
// .gitmodules): git's configuration and shapes on the host are as they
// were, git status there runs nothing, and an ordinary write beside them
// lands.
func TestGitPlants(t *testing.T) {
	t.Parallel()
	for i, p := range gittest.New(t).Plants() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			tr := gittest.New(t)
			p := tr.Plants()[i]
			before := tr.State(t)
			got := guestSteps(t, tr.Dir, gitSteps(append(p.Steps, gittest.Ordinary)))
			if last := got[len(got)-1]; !strings.HasPrefix(last, "DONE") {
				t.Errorf("the ordinary write was refused: %s", last)
			}
			if b, err := os.ReadFile(filepath.Join(tr.Dir, gittest.Ordinary.Path)); err != nil || string(b) != gittest.Ordinary.Data {
				t.Errorf("ordinary.txt on the host = %q, %v", b, err)
			}
			// The first refusal is the guard's (EACCES); steps under a
			// directory it refused may then fail otherwise (ENOENT).
			first := ""
			for _, l := range got[:len(got)-1] {
				if strings.HasPrefix(l, "BLOCKED") {
					first = l
					break
				}
			}
			if !strings.HasSuffix(first, "errno 2") {
				t.Errorf("first refusal %q, want EACCES (errno 2): %v", first, got)
			}
			if d := gittest.Diff(before, tr.State(t)); d != "" {
				t.Errorf("git's configuration and shapes changed on the host:\n%s\nsteps: %v", d, got)
			}
			if ran, out := tr.Ran(p); ran {
				t.Errorf("git status on the host ran the planted program:\n%s", out)
			}
		})
	}
}

// TestGitShapeWays: every way a guest has to make the entry that
// completes a repository, or a .git, is refused; the same ways on an
// ordinary name work (controls), and so do writes to the history of a
// repository that exists.
func TestGitShapeWays(t *testing.T) {
	t.Parallel()
	// prep makes half/ a repository but for HEAD, and stage/refs, as the
	// guest.
	prep := [][]string{{"mkdir", "/rw", "half"}, {"mkdir", "/rw", "half/objects"}, {"write", "/rw", "half/config", "[core]\n"},
		{"mkdir", "/rw", "stage"}, {"mkdir", "/rw", "stage/refs"}, {"mkdir", "/rw", "stage/HEAD.d"}}
	ways := func(p string) [][]string {
		return [][]string{
			{"write", "/rw", p, "ref: refs/heads/main\n"},
			{"rename", "/rw", "other.txt", "/rw", p},
			{"link-only", "/rw", "other.txt", "/rw", p},
			{"symlink-only", "/rw", relFrom(p, "other.txt"), p},
			{"mkdir", "/rw", p},
		}
	}
	type tc struct {
		name  string
		steps [][]string
		want  string
	}
	var cases []tc
	for _, w := range ways("half/refs") { // half has objects; HEAD first
		cases = append(cases, tc{"refs: " + w[0], append([][]string{{"write", "/rw", "half/HEAD", "ref: refs/heads/main\n"}}, w), "BLOCKED"})
	}
	for _, w := range ways("half/HEAD") { // half has objects; refs first
		cases = append(cases, tc{"HEAD: " + w[0], append([][]string{{"mkdir", "/rw", "half/refs"}}, w), "BLOCKED"})
	}
	for _, w := range ways("nested/.git/commondir") {
		cases = append(cases, tc{"commondir: " + w[0], [][]string{w}, "BLOCKED"})
	}
	for _, w := range ways("X/.git") {
		cases = append(cases, tc{".git: " + w[0], [][]string{w}, "BLOCKED"})
	}
	for _, w := range ways("half/notes") {
		cases = append(cases, tc{"control: " + w[0], [][]string{{"mkdir", "/rw", "half/refs"}, w}, "DONE"})
	}
	cases = append(cases,
		tc{"rename a refs directory in", [][]string{{"write", "/rw", "half/HEAD", "x"}, {"rename", "/rw", "stage/refs", "/rw", "half/refs"}}, "BLOCKED"},
		tc{"rename a file onto a missing HEAD", [][]string{{"mkdir", "/rw", "half/refs"}, {"rename", "/rw", "other.txt", "/rw", "half/HEAD"}}, "BLOCKED"},
		tc{"write a repository's config under another name", [][]string{{"write", "/rw", "bare.git/config", "[core]\n"}}, "BLOCKED"},
		tc{"make a hook in a repository under another name", [][]string{{"write", "/rw", "bare.git/hooks/post-update", "#!/bin/sh\n"}}, "BLOCKED"},
		tc{"rewrite a gitfile", [][]string{{"write", "/rw", "link/.git", "gitdir: ../evil\n"}}, "BLOCKED"},
		tc{"remove a gitfile", [][]string{{"unlink", "/rw", "mod/.git"}}, "BLOCKED"},
		tc{"alternates", [][]string{{"write", "/rw", ".git/objects/info/alternates", "/etc\n"}}, "BLOCKED"},
		tc{"a rebase's to-do list", [][]string{{"mkdir", "/rw", ".git/rebase-merge"}}, "BLOCKED"},
		// History stays writable.
		tc{"control: rewrite HEAD", [][]string{{"write", "/rw", ".git/HEAD", "ref: refs/heads/other\n"}}, "DONE"},
		tc{"control: a new branch", [][]string{{"write", "/rw", ".git/refs/heads/new", "0000000000000000000000000000000000000000\n"}}, "DONE"},
		tc{"control: packed-refs", [][]string{{"write", "/rw", ".git/packed-refs", "# pack-refs\n"}}, "DONE"},
		tc{"control: HEAD beside objects only", [][]string{{"write", "/rw", "half/HEAD", "x"}}, "DONE"},
		tc{"control: a bare repository's HEAD", [][]string{{"write", "/rw", "bare.git/HEAD", "ref: refs/heads/x\n"}}, "DONE"},
		tc{"control: config where no repository is", [][]string{{"write", "/rw", "X/config", "[core]\n"}}, "DONE"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := gittest.New(t)
			got := guestSteps(t, tr.Dir, append(append([][]string(nil), prep...), c.steps...))
			for i, l := range got[:len(got)-1] {
				if !strings.HasPrefix(l, "DONE") {
					t.Fatalf("setup step %v: %s", append(prep, c.steps...)[i], l)
				}
			}
			last := got[len(got)-1]
			if !strings.HasPrefix(last, c.want) {
				t.Errorf("got %q, want %s", last, c.want)
			}
			if c.want == "BLOCKED" && !strings.HasSuffix(last, "errno 2") {
				t.Errorf("refused with %q, want EACCES (errno 2)", last)
			}
		})
	}
}
