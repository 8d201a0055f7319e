package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// promptRun runs ccrun with a pseudo-terminal as stdin and stderr, answers
// the prompt with answer once it shows, and returns what the terminal
// showed and the exit code.
func promptRun(t *testing.T, dir, answer string, args ...string) (screen string, code int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(dir, ".sessions"))
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(append([]string{"--project-dir", dir}, args...), stdio{tty, &out, tty})
	}()
	var seen strings.Builder
	r := bufio.NewReader(ptmx)
	deadline := time.After(30 * time.Second)
	buf := make(chan string)
	go func() {
		for {
			b := make([]byte, 4096)
			n, err := r.Read(b)
			if n > 0 {
				buf <- string(b[:n])
			}
			if err != nil {
				close(buf)
				return
			}
		}
	}()
	answered := false
	for {
		select {
		case s, ok := <-buf:
			if !ok {
				buf = nil
				continue
			}
			seen.WriteString(s)
			if !answered && strings.Contains(seen.String(), "allow? ") {
				answered = true
				if _, err := io.WriteString(ptmx, answer+"\n"); err != nil {
					t.Fatal(err)
				}
			}
		case code = <-done:
			time.Sleep(50 * time.Millisecond) // let the last bytes through
			for {
				select {
				case s, ok := <-buf:
					if ok {
						seen.WriteString(s)
						continue
					}
				default:
				}
				break
			}
			return seen.String(), code
		case <-deadline:
			t.Fatalf("no exit after 30s; the terminal showed:\n%s", seen.String())
		}
	}
}

func TestPromptShellOffersNoProject(t *testing.T) {
	dir := t.TempDir()
	screen, code := promptRun(t, dir, "1", "exec", "--shell", "touch made\x1b[31m")
	if code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, screen)
	}
	for _, want := range []string{
		"run_command (@shell) asks to run",
		`touch made\x1b[31m`, // the escape is shown, not sent to the terminal
		"key:      run_command:touch\r\n",
		"[1] once", "[2] this session", "[3] deny",
		`"this project" is not offered: a @shell command runs with your own rights`,
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the prompt lacks %q; it showed:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "[3] this project") || strings.Contains(screen, "project\x1b") {
		t.Errorf("a @shell prompt offered the project:\n%s", screen)
	}
	if _, err := os.Stat(filepath.Join(dir, "made\x1b[31m")); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
}

func TestPromptDenyExits77(t *testing.T) {
	dir := t.TempDir()
	screen, code := promptRun(t, dir, "d", "exec", "--shell", "touch nope")
	if code != exitDenied {
		t.Fatalf("exit %d, want %d; screen:\n%s", code, exitDenied, screen)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Error("a denied command ran")
	}
}

func TestPromptWasmOffersProject(t *testing.T) {
	dir := t.TempDir()
	if code := run([]string{"--project-dir", dir, "capability", "new", "hi", "--env", "@wasm"}, stdio{nil, io.Discard, io.Discard}); code != 0 {
		t.Fatalf("scaffold: exit %d", code)
	}
	screen, code := promptRun(t, dir, "p", "exec", "hi")
	if code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, screen)
	}
	if !strings.Contains(screen, "[3] this project") {
		t.Errorf("a @wasm prompt must offer the project:\n%s", screen)
	}
	data, err := os.ReadFile(filepath.Join(dir, "ccrun.json"))
	if err != nil || !bytes.Contains(data, []byte(`"capability:hi"`)) {
		t.Errorf("the project grant was not written: %v %s", err, data)
	}
}

func TestPromptDangerousPathOffersOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	screen, code := promptRun(t, dir, "2", "exec", "--shell", "touch .git/hooks/pre-commit")
	if !strings.Contains(screen, "[1] once") || strings.Contains(screen, "this session") {
		t.Errorf("a dangerous path must offer once only:\n%s", screen)
	}
	// "2" is deny when only once is offered.
	if code != exitDenied {
		t.Errorf("exit %d, want %d", code, exitDenied)
	}
}

func TestStatusLineAfterOneSecond(t *testing.T) {
	dir := t.TempDir()
	screen, code := promptRun(t, dir, "", "exec", "--approve", "once", "--shell", "sleep 1.8")
	if code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, screen)
	}
	if !strings.Contains(screen, "run_command executing 1.") {
		t.Errorf("no status line with state and elapsed time; the terminal showed %q", screen)
	}
	if !strings.HasSuffix(screen, "\r\x1b[2K") {
		t.Errorf("the status line was not cleared at the end: %q", screen)
	}
}
