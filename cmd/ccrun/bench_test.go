package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// ccrunBinary builds cmd/ccrun once per test binary, for the benchmarks
// that compare a real `ccrun` process with its peers.
func ccrunBinary(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ccrun-bench")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ccrun")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = err
			b.Logf("%s", out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binPath
}

func runEach(b *testing.B, dir string, name string, args ...string) {
	b.Helper()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
	}
}

// BenchmarkShellTrue compares, side by side in one run, a whole
// `ccrun exec --shell true` process (parse, key, gate, audit, run) with
// `sh -c true`. The difference of the two ns/op is ccrun's overhead
// (issue 3's goal: under 5 ms).
func BenchmarkShellTrue(b *testing.B) {
	bin := ccrunBinary(b)
	dir := b.TempDir()
	b.Run("ccrun-exec", func(b *testing.B) {
		runEach(b, dir, bin, "exec", "--approve", "once", "--shell", "true")
	})
	b.Run("sh-c", func(b *testing.B) {
		runEach(b, dir, "sh", "-c", "true")
	})
}

// BenchmarkGitStatus measures what the kernel layer costs a read-only
// command, side by side in one run: `ccrun exec --shell 'git status'`
// confined (Landlock, the default for a command nobody approved as such),
// the same with the kernel layer off (CCRUN_LANDLOCK=off; an allow rule
// lets it run, since without the kernel layer git is asked), and
// `sh -c 'git status'`. confined − unconfined is the ruleset's cost per
// run (issue 10's goal: at most 1 ms).
func BenchmarkGitStatus(b *testing.B) {
	bin := ccrunBinary(b)
	dir := b.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	ccrunArgs := []string{"exec", "--allow", "run_command:git:status", "--shell", "git status"}
	b.Run("confined", func(b *testing.B) {
		runEach(b, dir, bin, ccrunArgs...)
	})
	b.Run("unconfined", func(b *testing.B) {
		b.Setenv("CCRUN_LANDLOCK", "off")
		runEach(b, dir, bin, ccrunArgs...)
	})
	b.Run("sh-c", func(b *testing.B) {
		runEach(b, dir, "sh", "-c", "git status")
	})
}
