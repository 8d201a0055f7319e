package cli

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/creack/pty"
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

// onTerminal runs ccrun in this process with a pseudo-terminal as stdin,
// stdout and stderr, as a person typing the command sees it.
func onTerminal(t *testing.T, args ...string) (screen string, code int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	done := make(chan int, 1)
	go func() {
		code := run(args, stdio{tty, tty, tty})
		tty.Close()
		done <- code
	}()
	return readScreen(t, ptmx, done, nil)
}

// TestSessionStartOnTerminal: `ccrun session start` typed without eval
// (its stdout a terminal) says the shell did not get the session, how to
// start one that it does, and how to end the one just started, which
// would otherwise last its lifetime; the line it suggests ends it.
// `ccrun session end` on a terminal says the shell still has the id.
// Read by eval (stdout a pipe), neither says a word more.
func TestSessionStartOnTerminal(t *testing.T) {
	fakeHome(t)
	screen, code := onTerminal(t, "session", "start")
	if code != 0 {
		t.Fatalf("session start: exit %d\n%s", code, screen)
	}
	m := regexp.MustCompile(`export CCRUN_SESSION=([0-9a-f]{32})`).FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no export line on the terminal:\n%s", screen)
	}
	id := m[1]
	wantScreen(t, screen, []string{
		"session " + id + " started (until ",
		"this shell does not have it",
		`eval "$(ccrun session start)"`,
		"end this one now with: CCRUN_SESSION=" + id + " ccrun session end",
	}, nil)

	t.Setenv("CCRUN_SESSION", id)
	if _, err := allowlist.OpenSession(sessionDir(), id); err != nil {
		t.Fatalf("the session started on the terminal is not there: %v", err)
	}
	screen, code = onTerminal(t, "session", "end")
	if code != 0 {
		t.Fatalf("session end: exit %d\n%s", code, screen)
	}
	wantScreen(t, screen, []string{"ended session " + id, "this shell still has CCRUN_SESSION"}, nil)
	if _, err := allowlist.OpenSession(sessionDir(), id); err == nil {
		t.Fatalf("session %s still open after the end it suggested", id)
	}

	// Read by eval: stdout is the export line alone, stderr stays quiet.
	t.Setenv("CCRUN_SESSION", "")
	var out, errb bytes.Buffer
	if code := run([]string{"session", "start"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("session start into a pipe: exit %d, %s", code, errb.String())
	}
	if !regexp.MustCompile(`^export CCRUN_SESSION=[0-9a-f]{32}\n$`).MatchString(out.String()) || errb.Len() != 0 {
		t.Errorf("session start into a pipe: stdout %q, stderr %q; want the export line alone", out.String(), errb.String())
	}
}
