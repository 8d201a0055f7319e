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
