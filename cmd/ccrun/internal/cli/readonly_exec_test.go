package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEverydayReadOnlyRuns: the controls of the red-team table. The
// everyday read-only commands run through `ccrun exec` without asking —
// under the interpreter's checks and the kernel layer — and print their
// normal output.
func TestEverydayReadOnlyRuns(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CCRUN_SESSION_DIR", t.TempDir())
	writeFiles(t, dir, map[string]string{"README.md": "hello readme\n", "src/main.go": "package main\n// TODO one\n", "src/util.go": "package main\n"})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello readme, changed\n"), 0o644)
	for _, tc := range []struct{ cmd, want string }{
		{"git status", "README.md"},
		{"git status --porcelain", "README.md"},
		{"git log --oneline", "first"},
		{"git diff", "changed"},
		{"git show --stat HEAD", "first"},
		{"git branch", "main"},
		{"ls -la", "README.md"},
		{"cat README.md", "hello readme"},
		{"grep -r TODO .", "TODO one"},
		{"grep -rn package src", "main.go"},
		{"find . -name '*.go'", "util.go"},
		{"wc -l README.md", "README.md"},
		{"head -n 1 src/main.go", "package main"},
		{"ls src | sort | head -1", "main.go"},
		{"git log -1 --format=%s | cat", "first"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"--project-dir", dir, "exec", "--shell", tc.cmd}, stdio{strings.NewReader(""), &out, &errb})
			if code != 0 || !strings.Contains(out.String(), tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and %q", code, out.String(), errb.String(), tc.want)
			}
		})
	}
}
