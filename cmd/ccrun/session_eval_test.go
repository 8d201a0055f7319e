package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionEval: what session start and end print on stdout is shell
// code alone, so that eval "$(ccrun session …)" runs nothing else; the
// messages for a person go to stderr.
func TestSessionEval(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir, env := mcpProject(t)
	bin := mcpBinary(t)
	script := `set -e
eval "$("$CCRUN" session start)"
test -n "$CCRUN_SESSION"
eval "$("$CCRUN" session end)"
test -z "${CCRUN_SESSION+set}"
echo done`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir, cmd.Env = dir, append(env, "CCRUN="+bin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || strings.TrimSpace(stdout.String()) != "done" {
		t.Fatalf("eval of session start and end: %v\nstdout: %q\nstderr: %q", err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "not found") || !strings.Contains(stderr.String(), "ended session") {
		t.Errorf("stderr: %q; want the message there and no command not found", stderr.String())
	}
	// The end of a session already gone: the same.
	cmd = exec.Command("sh", "-c", `eval "$("$CCRUN" session end)"; echo "[${CCRUN_SESSION-unset}]"`)
	cmd.Dir = dir
	cmd.Env = append(env, "CCRUN="+bin, "CCRUN_SESSION="+strings.Repeat("a", 32), "CCRUN_SESSION_DIR="+filepath.Join(t.TempDir(), "s"))
	out, _ := cmd.Output()
	if strings.TrimSpace(string(out)) != "[unset]" {
		t.Errorf("eval of session end of a gone session: stdout %q, want [unset] alone", out)
	}
}
