package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/gittest"
	"github.com/ccrun/ccrun/runtime/job"
)

// quote is s as one single-quoted word of sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// gitScript is a plant's steps as sh lines in /w, each printing "DONE i"
// or "BLOCKED i".
func gitScript(steps []gittest.Step) string {
	var b strings.Builder
	b.WriteString("cd /w\n")
	for i, s := range steps {
		cmd := "mkdir " + quote(s.Path)
		if !s.Dir {
			cmd = "printf '%s' " + quote(s.Data) + " > " + quote(s.Path)
		}
		fmt.Fprintf(&b, "if ( %s ) 2>/dev/null; then echo 'DONE %d'; else echo 'BLOCKED %d'; fi\n", cmd, i, i)
	}
	return b.String()
}

// TestGitPlants: a container with a repository mounted rw makes each of
// gittest's plants (the project's own .git/commondir, a gitfile, a nested
// repository's commondir, a new nested repository, a git directory under
// another name, a bare repository's config, .gitmodules). After the run,
// git's configuration and shapes on the host are as they were (what the
// container made is removed and named in the Result's Detail), git status
// there runs nothing, and an ordinary write beside them is kept.
func TestGitPlants(t *testing.T) {
	e := executor(t)
	for i, p := range gittest.New(t).Plants() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			tr := gittest.New(t)
			p := tr.Plants()[i]
			openUp(t, tr.Dir)
			before := tr.State(t)
			steps := append(append([]gittest.Step(nil), p.Steps...), gittest.Ordinary)
			res := run(t, e, Spec{Cmd: sh(gitScript(steps)), Mounts: []job.Mount{{Host: tr.Dir, Guest: "/w", Writable: true}}})
			out := string(res.Stdout)
			t.Logf("container: %s\ndetail: %s", strings.ReplaceAll(strings.TrimSpace(out), "\n", ", "), res.Detail)
			if !strings.Contains(out, fmt.Sprintf("DONE %d\n", len(steps)-1)) {
				t.Errorf("the ordinary write failed inside the container: %s%s", out, res.Stderr)
			}
			if b, err := os.ReadFile(filepath.Join(tr.Dir, gittest.Ordinary.Path)); err != nil || string(b) != gittest.Ordinary.Data {
				t.Errorf("ordinary.txt on the host = %q, %v", b, err)
			}
			if !strings.Contains(out, "BLOCKED") && !strings.Contains(res.Detail, "removed protected paths the container created") {
				t.Errorf("nothing refused inside the container, nothing removed after (detail %q): %s", res.Detail, out)
			}
			if d := gittest.Diff(before, tr.State(t)); d != "" {
				t.Errorf("git's configuration and shapes changed on the host:\n%s\ncontainer: %s\ndetail: %s", d, out, res.Detail)
			}
			if ran, gitOut := tr.Ran(p); ran {
				t.Errorf("git status on the host ran the planted program:\n%s", gitOut)
			}
		})
	}
}

// TestGitHistoryWritable: a repository's history stays writable for a
// container (HEAD, a new branch, packed-refs, objects), and a directory
// that is almost a repository is left alone.
func TestGitHistoryWritable(t *testing.T) {
	e := executor(t)
	tr := gittest.New(t)
	openUp(t, tr.Dir)
	steps := []gittest.Step{
		{Path: ".git/HEAD", Data: "ref: refs/heads/other\n"},
		{Path: ".git/refs/heads/new", Data: "0000000000000000000000000000000000000000\n"},
		{Path: ".git/packed-refs", Data: "# pack-refs with: peeled\n"},
		// not a hex pair: the repository's own loose objects may
		// already have made any of those, and mkdir would then fail
		{Path: ".git/objects/zz", Dir: true},
		{Path: "almost", Dir: true},
		{Path: "almost/HEAD", Data: "ref: refs/heads/main\n"},
		{Path: "almost/objects", Dir: true},
		{Path: "almost/config", Data: "[core]\n"},
	}
	res := run(t, e, Spec{Cmd: sh(gitScript(steps)), Mounts: []job.Mount{{Host: tr.Dir, Guest: "/w", Writable: true}}})
	for i, s := range steps {
		if !strings.Contains(string(res.Stdout), fmt.Sprintf("DONE %d\n", i)) {
			t.Errorf("%s: refused inside the container: %s", s.Path, res.Stdout)
			continue
		}
		st, err := os.Lstat(filepath.Join(tr.Dir, filepath.FromSlash(s.Path)))
		if err != nil || st.IsDir() != s.Dir {
			t.Errorf("%s: not kept on the host: %v", s.Path, err)
		} else if !s.Dir {
			if b, _ := os.ReadFile(filepath.Join(tr.Dir, filepath.FromSlash(s.Path))); string(b) != s.Data {
				t.Errorf("%s = %q on the host, want %q", s.Path, b, s.Data)
			}
		}
	}
	if res.Detail != "" {
		t.Errorf("detail %q, want none", res.Detail)
	}
}

// TestPlaceholdersNotWhereEmptyMatters: no empty placeholder is planned
// at .git/commondir (git stops on an empty one) or .git/rebase-merge/ (an
// empty one is a rebase in progress), though both are protected.
func TestPlaceholdersNotWhereEmptyMatters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "objects", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := job.Mount{Host: dir, Guest: "/w", Writable: true}
	got := map[string]bool{}
	for _, ph := range placeholders(m, dir) {
		got[ph.rel] = true
	}
	for _, rel := range []string{".git/commondir", ".git/rebase-merge"} {
		if _, ok := m.Protected(rel); !ok {
			t.Errorf("%s is not protected", rel)
		}
		if got[rel] {
			t.Errorf("a placeholder is planned at %s", rel)
		}
	}
	for _, rel := range []string{".git/config", ".git/hooks", ".git/objects/info/alternates", ".envrc"} {
		if !got[rel] {
			t.Errorf("no placeholder planned at %s (the control)", rel)
		}
	}
}

// TestGitUnmadeNotGone: a container that removes a repository's HEAD (its
// history is writable) leaves the directory's config in place, no longer
// protected: the run does not report it moved or removed.
func TestGitUnmadeNotGone(t *testing.T) {
	e := executor(t)
	tr := gittest.New(t)
	openUp(t, tr.Dir)
	res := run(t, e, Spec{Cmd: sh("cd /w && rm bare.git/HEAD && echo DONE"), Mounts: []job.Mount{{Host: tr.Dir, Guest: "/w", Writable: true}}})
	if !strings.Contains(string(res.Stdout), "DONE") {
		t.Fatalf("the container could not remove bare.git/HEAD (the test proves nothing): %s%s", res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(tr.Dir, "bare.git", "config")); err != nil {
		t.Errorf("bare.git/config: %v", err)
	}
	if res.Detail != "" {
		t.Errorf("detail %q, want none", res.Detail)
	}
}
