package capabilities

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/dotccrun"
)

// The scaffold's .ccrun/.gitignore keeps ccrun's own files out of the
// repository and lets the capabilities in; an existing one is kept.
func TestScaffoldGitignore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Scaffold(dir, "one", ceiling.Wasm); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ".ccrun", ".gitignore"))
	if err != nil || string(got) != dotccrun.Gitignore {
		t.Fatalf(".ccrun/.gitignore: %q, %v", got, err)
	}
	if git, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command(git, "-C", dir, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		for path, ignored := range map[string]bool{".ccrun/audit.jsonl": true, ".ccrun/audit.jsonl.1": true, ".ccrun/capabilities/one/capability.json": false} {
			err := exec.Command(git, "-C", dir, "check-ignore", "-q", path).Run()
			if (err == nil) != ignored {
				t.Errorf("%s: ignored %v, want %v", path, err == nil, ignored)
			}
		}
	}
	mine := "# mine\n"
	if err := os.WriteFile(filepath.Join(dir, ".ccrun", ".gitignore"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Scaffold(dir, "two", ceiling.Shell); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ".ccrun", ".gitignore")); !strings.HasPrefix(string(got), mine) {
		t.Errorf("an existing .gitignore was replaced: %q", got)
	}
}
