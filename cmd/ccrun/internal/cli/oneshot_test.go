package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/housekeep"
)

// A real ccrun binary runs a CPU-bound guest in its own process without
// interrupt checks: an endless loop still ends at its timeout with exit
// 124 and the message, and a guest that ends by itself exits with its code.
func TestOneShotThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ccrun and a guest")
	}
	dir := t.TempDir()
	env := append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "CCRUN_SESSION_DIR="+filepath.Join(t.TempDir(), "s"), housekeep.WasmServerEnv+"=0")
	ccrun := loopGuest(t, dir, env)
	if stderr, code := ccrun("--", "x"); code != 3 {
		t.Fatalf("exit %d, want 3; stderr %q", code, stderr)
	}
	start := time.Now()
	stderr, code := ccrun("--timeout", "1s")
	if code != exitTimeout || !strings.Contains(stderr, "timeout") {
		t.Errorf("exit %d, stderr %q; want %d and the timeout said", code, stderr, exitTimeout)
	}
	t.Logf("a 1s timeout ended the process after %s", time.Since(start).Round(time.Millisecond))
	audit, err := os.ReadFile(filepath.Join(dir, ".ccrun", "audit.jsonl"))
	if err != nil || !bytes.Contains(audit, []byte(`"timeout"`)) {
		t.Errorf("the audit log has no timeout line (%v): %s", err, audit)
	}
}

// loopGuest writes loop.wasm into dir — a guest that loops for ever, or
// exits 3 when given an argument — and returns a runner of a real ccrun
// binary on it in dir with env: its stderr and exit code.
func loopGuest(t *testing.T, dir string, env []string) func(args ...string) (string, int) {
	t.Helper()
	_, run := loopGuestBin(t, dir, env)
	return run
}

// loopGuestBin is loopGuest, with the ccrun it built.
func loopGuestBin(t *testing.T, dir string, env []string) (string, func(args ...string) (string, int)) {
	t.Helper()
	bin := buildCcrun(t)
	loop := buildGuest(t, "package main\n\nimport \"os\"\n\nfunc main() {\n\tif len(os.Args) > 1 {\n\t\tos.Exit(3)\n\t}\n\tn := 0\n\tfor {\n\t\tn++\n\t}\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "loop.wasm"), loop, 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"--project-dir", dir, "exec", "--approve", "once", "--wasm", "loop.wasm"}, args...)...)
		cmd.Dir, cmd.Env = dir, env
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return errb.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return errb.String(), 0
	}
}
