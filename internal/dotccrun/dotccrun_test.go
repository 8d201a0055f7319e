package dotccrun

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Many processes' first runs make the directory at once: one wins, every
// caller gets a real directory with the .gitignore, nothing is left over.
func TestMkdirConcurrent(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir := filepath.Join(project, Name)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = Mkdir(dir, 0o700) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Mkdir %d: %v", i, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil || string(got) != Gitignore {
		t.Fatalf(".gitignore: %q, %v", got, err)
	}
	ents, _ := os.ReadDir(project)
	if len(ents) != 1 {
		t.Errorf("the project holds %v, want .ccrun alone (no temporary directory left)", ents)
	}
}

// A link or a file in the directory's place is refused, and nothing is
// written through it; an existing directory without a .gitignore gets one,
// one with a .gitignore keeps it.
func TestMkdirExisting(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	victim := t.TempDir()
	link := filepath.Join(project, "link", Name)
	os.Mkdir(filepath.Dir(link), 0o755)
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := Mkdir(link, 0o700); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Mkdir of a symbolic link: %v, want ErrUnsafe", err)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}

	cloned := filepath.Join(project, "cloned", Name)
	if err := os.MkdirAll(filepath.Join(cloned, "capabilities"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Mkdir(cloned, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(cloned, ".gitignore")); string(got) != Gitignore {
		t.Errorf("an existing .ccrun without one got %q", got)
	}
	mine := "# mine\n"
	os.WriteFile(filepath.Join(cloned, ".gitignore"), []byte(mine), 0o644)
	if err := Mkdir(cloned, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(cloned, ".gitignore")); string(got) != mine {
		t.Errorf("the person's .gitignore became %q", got)
	}
}

// git ignores what ccrun keeps there, the .gitignore included, and sees
// the capabilities.
func TestGitignoreAsGitReadsIt(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	project := t.TempDir()
	if out, err := exec.Command(git, "-C", project, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := Mkdir(filepath.Join(project, Name), 0o700); err != nil {
		t.Fatal(err)
	}
	for path, ignored := range map[string]bool{
		".ccrun/.gitignore": true, ".ccrun/audit.jsonl": true, ".ccrun/audit.jsonl.1": true,
		".ccrun/ccrun.json.lock": true, ".ccrun/.ccrun.json.tmp-123": true,
		".ccrun/capabilities/one/capability.json": false,
	} {
		err := exec.Command(git, "-C", project, "check-ignore", "-q", path).Run()
		if (err == nil) != ignored {
			t.Errorf("%s: ignored %v, want %v", path, err == nil, ignored)
		}
	}
	out, err := exec.Command(git, "-C", project, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("git status after Mkdir: %q, %v; want nothing", out, err)
	}
}
