package sensitive

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// gitTree holds repositories under several names and the shapes around
// them.
var gitTree = fstest.MapFS{
	"proj/.git/HEAD":       {Data: []byte("ref: refs/heads/main\n")},
	"proj/.git/objects":    {Mode: dirMode},
	"proj/.git/refs":       {Mode: dirMode},
	"proj/.git/config":     {Data: []byte("[core]\n")},
	"evil/HEAD":            {Data: []byte("ref: refs/heads/main\n")},
	"evil/objects":         {Mode: dirMode},
	"evil/refs/heads/main": {Data: []byte("0000\n")},
	"evil/config":          {Data: []byte("[core]\n\tfsmonitor = evil\n")},
	"half/objects":         {Mode: dirMode},
	"half/refs":            {Mode: dirMode},
	"half/config":          {Data: []byte("[core]\n\tfsmonitor = evil\n")},
	"headonly/HEAD":        {Data: []byte("ref: refs/heads/main\n")},
	"wt/HEAD":              {Data: []byte("0123\n")},
	"wt/commondir":         {Data: []byte("../evil\n")},
	"gf/.git":              {Data: []byte("gitdir: ../evil\n")},
	"ln/.git":              {Data: []byte("../evil"), Mode: os.ModeSymlink},
	"plain/config":         {Data: []byte("x")},
	"plain/hooks/x":        {Data: []byte("x")},
	"plain/objects":        {Mode: dirMode},
	"sub/notes.txt":        {Data: []byte("x")},
	"file.txt":             {Data: []byte("x")},
}

const dirMode = os.ModeDir | 0o755

func TestGit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		// In a repository under any name, what git reads as configuration
		// or code.
		{"evil/config", true},
		{"evil/config.worktree", true},
		{"evil/hooks", true},
		{"evil/hooks/pre-commit", true},
		{"evil/commondir", true},
		{"evil/info/attributes", true},
		{"evil/objects/info/alternates", true},
		{"evil/worktrees/x/gitdir", true},
		{"evil/modules/m/config", true},
		{"evil/remotes/origin", true},
		{"evil/rebase-merge/git-rebase-todo", true},
		{"wt/config.worktree", true},
		{"wt/config", true},
		{"proj/.git/config", true},
		// History and content stay writable.
		{"evil/HEAD", false},
		{"evil/refs/heads/main", false},
		{"evil/packed-refs", false},
		{"evil/objects/ab/cdef", false},
		{"evil/index", false},
		{"evil/info/exclude", false},
		{"evil/description", false},
		{"proj/.git/HEAD", false},
		// What would make a directory a repository.
		{"half/HEAD", true},
		{"headonly/commondir", true},
		{"plain/refs", false}, // no HEAD
		{"plain/HEAD", false}, // no refs
		{"half/config", false},
		{"plain/config", false},
		{"plain/hooks/x", false},
		// A .git that is not a directory, or a new one.
		{"gf/.git", true},
		{"ln/.git", true},
		{"sub/.git", true},
		{".git", true},
		{"file.txt/.git", false}, // nowhere to be made
		{"nodir/.git", false},    // the directory is not there
		{"proj/.git", false},
		// The rest.
		{"", false},
		{".", false},
		{"sub/notes.txt", false},
		{"sub/new.txt", false},
		{"HEAD", false},
	} {
		if _, got := Git(gitTree, tc.rel); got != tc.want {
			t.Errorf("Git(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

func TestGitDir(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]bool{
		"evil": true, "wt": true, "proj/.git": true, "half": false, "headonly": false, "plain": false,
		".": false, "nodir": false,
	} {
		if got := GitDir(gitTree, dir); got != want {
			t.Errorf("GitDir(%q) = %v, want %v", dir, got, want)
		}
	}
}

// TestGitAsGit: what GitDir takes for a repository, git does too, and
// what it does not, git does not either (on the layouts of TestGitDir,
// made on disk), when git is installed.
func TestGitAsGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for name, f := range gitTree {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Mode&os.ModeSymlink != 0:
			err = os.Symlink(string(f.Data), p)
		case f.Mode.IsDir():
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, f.Data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, d := range []string{"evil", "half", "headonly", "plain", "proj/.git", "sub"} {
		cmd := exec.Command(git, "-c", "safe.directory=*", "rev-parse", "--absolute-git-dir")
		cmd.Dir = filepath.Join(dir, d)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CEILING_DIRECTORIES=" + dir}
		out, err := cmd.Output()
		isRepo := err == nil && strings.TrimSpace(string(out)) == filepath.Join(dir, d)
		if got := GitDir(root, d); got != isRepo {
			t.Errorf("%s: GitDir %v, git takes it for a repository: %v (%q, %v)", d, got, isRepo, out, err)
		}
	}
}

// TestGitRowsApplyInRepositories: every row under .git/ is found by Git
// in a repository of another name.
func TestGitRowsApplyInRepositories(t *testing.T) {
	t.Parallel()
	for _, r := range Table() {
		if r.Abs || len(r.Seq) < 2 || r.Seq[0] != ".git" {
			continue
		}
		rel := "evil/" + strings.Join(r.Seq[1:], "/")
		if r.Dir {
			rel += "/x"
		}
		if _, ok := Git(gitTree, rel); !ok {
			t.Errorf("Git(%q) = false: the row %s does not apply in a repository named evil", rel, r.Pattern())
		}
	}
}

// TestEmptyMatters: the rows an empty stand-in would change git's reading
// of are rows of the table.
func TestEmptyMatters(t *testing.T) {
	t.Parallel()
	got := map[string]bool{}
	for _, r := range Table() {
		if r.EmptyMatters() {
			got[r.Pattern()] = true
		}
	}
	for _, want := range []string{".git/commondir", ".git/rebase-merge/"} {
		if !got[want] {
			t.Errorf("%s: no row, or its EmptyMatters is false", want)
		}
	}
	if len(got) != 2 {
		t.Errorf("EmptyMatters rows %v, want 2", got)
	}
}

func TestGitMade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		names, had []string
		want       string
	}{
		{[]string{"HEAD", "objects", "refs", "config"}, nil, "HEAD objects refs"},
		{[]string{"HEAD", "objects", "refs", "config"}, []string{"objects", "refs", "config"}, "HEAD"},
		{[]string{"HEAD", "objects", "refs"}, []string{"HEAD", "objects", "refs"}, ""}, // a repository already
		{[]string{"HEAD", "commondir"}, []string{"HEAD"}, "commondir"},
		{[]string{"HEAD", "objects"}, nil, ""}, // no repository
		{[]string{"objects", "refs", "config"}, nil, ""},
		{[]string{".git", "src"}, nil, ".git"},
		{[]string{".git", "src"}, []string{".git"}, ""},
		{[]string{".git", "HEAD", "refs", "objects"}, []string{"HEAD", "refs"}, ".git objects"},
		{nil, nil, ""},
	} {
		had := func(n string) bool { return slices.Contains(tc.had, n) }
		if got := strings.Join(GitMade(tc.names, had), " "); got != tc.want {
			t.Errorf("GitMade(%v, had %v) = %q, want %q", tc.names, tc.had, got, tc.want)
		}
	}
}

// TestGitRow: the rows under .git/ cover the same paths beneath a
// repository of any name, in any case, and nothing else.
func TestGitRow(t *testing.T) {
	for rel, want := range map[string]bool{
		"config": true, "CONFIG": true, "hooks": true, "hooks/pre-commit": true, "commondir": true,
		"objects/info/alternates": true, "info/attributes": true, "worktrees/x/config": true,
		"HEAD": false, "objects/ab/cdef": false, "refs/heads/main": false, "src/config": false, "": false,
	} {
		var comps []string
		if rel != "" {
			comps = strings.Split(rel, "/")
		}
		if _, got := GitRow(comps); got != want {
			t.Errorf("GitRow(%q) = %v, want %v", rel, got, want)
		}
	}
}
