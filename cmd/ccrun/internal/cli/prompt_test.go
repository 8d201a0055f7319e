package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/ccrun/ccrun/internal/confine"
	"github.com/ccrun/ccrun/internal/prompt"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// The question every prompt ends with.
const asked = "(Enter: deny): "

// readScreen collects what ptmx shows, sends answers[i] the i-th time the
// prompt asks, and returns the screen once done yields the exit code.
func readScreen(t *testing.T, ptmx io.ReadWriter, done <-chan int, answers []string) (string, int) {
	t.Helper()
	var seen strings.Builder
	buf := make(chan string)
	go func() {
		for {
			b := make([]byte, 4096)
			n, err := ptmx.Read(b)
			if n > 0 {
				buf <- string(b[:n])
			}
			if err != nil {
				close(buf)
				return
			}
		}
	}()
	sent := 0
	deadline := time.After(60 * time.Second)
	for {
		select {
		case s, ok := <-buf:
			if !ok {
				buf = nil
				continue
			}
			seen.WriteString(s)
			if sent < len(answers) && strings.Count(seen.String(), asked) > sent {
				if _, err := io.WriteString(ptmx, answers[sent]); err != nil {
					t.Fatal(err)
				}
				sent++
			}
		case code := <-done:
			// The terminal's other end is closed now: read what is left, up
			// to its end, or until it stays quiet for a while (a process
			// ccrun started may hold the terminal open).
			for buf != nil {
				select {
				case s, ok := <-buf:
					if !ok {
						buf = nil
					}
					seen.WriteString(s)
				case <-time.After(time.Second):
					buf = nil
				}
			}
			return seen.String(), code
		case <-deadline:
			t.Fatalf("no exit after 60s; the terminal showed:\n%s", seen.String())
		}
	}
}

// promptRun runs ccrun in this process with a pseudo-terminal as stdin and
// stderr, answers each prompt in turn (answers carry their own newline),
// and returns what the terminal showed, what went to stdout, and the exit
// code.
func promptRun(t *testing.T, dir string, answers []string, args ...string) (screen string, code int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if os.Getenv("CCRUN_SESSION_DIR") == "" {
		t.Setenv("CCRUN_SESSION_DIR", filepath.Join(dir, ".sessions"))
	}
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(append([]string{"--project-dir", dir}, args...), stdio{tty, &out, tty})
		tty.Close()
		done <- code
	}()
	return readScreen(t, ptmx, done, answers)
}

// inSession starts a session for the rest of the test.
func inSession(t *testing.T, dir string) {
	t.Helper()
	sd := filepath.Join(dir, ".sessions")
	t.Setenv("CCRUN_SESSION_DIR", sd)
	s, err := allowlist.StartSession(sd, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CCRUN_SESSION", s.ID())
}

// uLetter is what a @shell prompt shows of the unconfined choice: offered
// where the kernel gives the workspace tier (the sandbox on, as by
// default).
func uLetter() string {
	if _, err := confine.Available(); err != nil {
		return ""
	}
	return "[u] run once outside the sandbox  "
}

// uAnswer is the unconfined letter among the valid answers a prompt lists.
func uAnswer() string {
	if uLetter() == "" {
		return ""
	}
	return "u, "
}

func wantScreen(t *testing.T, screen string, want, unwanted []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(screen, w) {
			t.Errorf("the terminal lacks %q; it showed:\n%s", w, screen)
		}
	}
	for _, u := range unwanted {
		if strings.Contains(screen, u) {
			t.Errorf("the terminal shows %q; it showed:\n%s", u, screen)
		}
	}
}

func TestPromptShell(t *testing.T) {
	dir := t.TempDir()
	inSession(t, dir)
	screen, code := promptRun(t, dir, []string{"p\n", "y\n", "o\n"}, "exec", "--shell", "touch made\x1b[31m")
	if code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, screen)
	}
	wantScreen(t, screen, []string{
		"run_command (@shell) asks to run",
		`touch made\x1b[31m`, // the escape is shown, not sent to the terminal
		// an operand that is not a plain word keys the whole text
		`key:       run_command:"touch made\x1b[31m"` + "\r\n",
		"allow? [o] once  [s] this session  " + uLetter() + "[d] deny  (Enter: deny): ",
		`"this project" is not offered: a @shell command runs with your own rights`,
		`"this session" covers this exact command only`,
		`"p": "this project" is not offered`, // asked again, never taken
		`"y": not an answer; answer o, s, ` + uAnswer() + `d`,
	}, []string{"[p]", "[1]", "made\x1b[31m"})
	if _, err := os.Stat(filepath.Join(dir, "made\x1b[31m")); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
}

// With no session, "this session" is not offered (it would last for this
// call only), and the prompt says how to start one.
func TestPromptNoSession(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CCRUN_SESSION", "")
	screen, code := promptRun(t, dir, []string{"s\n", "d\n"}, "exec", "--shell", "touch nope")
	if code != exitDenied {
		t.Fatalf("exit %d, want %d; screen:\n%s", code, exitDenied, screen)
	}
	wantScreen(t, screen, []string{
		"allow? [o] once  " + uLetter() + "[d] deny  (Enter: deny): ",
		`"this session" is not offered: no session is running (start one with eval "$(ccrun session start)"`,
		`"s": "this session" is not offered: no session is running`,
		// the deny's hint says how to allow it, not "run it at a terminal"
		"denied by the person asked); to allow it, run it again and answer once or session when asked",
		"ccrun allowlist add 'run_command:touch:nope' --scope session",
	}, []string{"[s]", "run it at a terminal"})
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Error("a denied command ran")
	}
}

func TestPromptWasm(t *testing.T) {
	dir := t.TempDir()
	inSession(t, dir)
	if code := run([]string{"--project-dir", dir, "capability", "new", "hi", "--env", "@wasm"}, stdio{nil, io.Discard, io.Discard}); code != 0 {
		t.Fatalf("scaffold: exit %d", code)
	}
	screen, code := promptRun(t, dir, []string{"p\n"}, "exec", "hi")
	if code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, screen)
	}
	wantScreen(t, screen, []string{
		"hi (@wasm) asks to run",
		"about:     Prints hello",
		"allow? [o] once  [s] this session  [p] this project  [d] deny  (Enter: deny): ",
		`"this session" or "this project" covers every call of this capability while its files stay as they are`,
	}, nil)
	data, err := os.ReadFile(filepath.Join(dir, "ccrun.json"))
	if err != nil || !bytes.Contains(data, []byte(`"capability:hi"`)) {
		t.Errorf("the project grant was not written: %v %s", err, data)
	}

	// An ad-hoc module with a read-only mount whose source is a symlink:
	// the mount is shown with where it really points.
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, ".ccrun", "capabilities", "hi", "hello.wasm")
	screen, code = promptRun(t, dir, []string{"\n"}, "exec", "--wasm", mod, "--mount", filepath.Join(dir, "data")+":/data", "--", "-v")
	if code != exitDenied {
		t.Fatalf("Enter: exit %d, want %d (deny is the default); screen:\n%s", code, exitDenied, screen)
	}
	wantScreen(t, screen, []string{
		"run_wasm (@wasm) asks to run",
		"mount:     " + filepath.Join(dir, "data") + " → " + filepath.Join(dir, "real") + " at /data (ro)",
		"covers every run of this module (these bytes) with these mounts, whatever its arguments",
	}, nil)
}

func TestPromptDocker(t *testing.T) {
	testimage.Need(t)
	dir := t.TempDir()
	inSession(t, dir)
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	screen, code := promptRun(t, dir, []string{"o\n"}, "exec", "--docker", testimage.Name, "--mount", filepath.Join(dir, "data")+":/data", "--", "/bin/busybox", "echo", "in docker")
	if code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, screen)
	}
	wantScreen(t, screen, []string{
		"run_docker (@docker) asks to run",
		testimage.Name + " /bin/busybox echo in docker",
		"image: sha256:",
		"mount:     " + filepath.Join(dir, "data") + " at /data (ro)",
		"allow? [o] once  [s] this session  [p] this project  [d] deny  (Enter: deny): ",
		`covers every command of this image (this image ID) with these mounts and network, whatever its arguments`,
	}, nil)
}

// A call that touches a dangerous path is offered "once" only, whatever
// the environment, and the other letters are refused out loud.
func TestPromptDangerousPath(t *testing.T) {
	dir := t.TempDir()
	inSession(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	screen, code := promptRun(t, dir, []string{"s\n", "\n"}, "exec", "--shell", "touch .git/hooks/pre-commit")
	if code != exitDenied {
		t.Errorf("exit %d, want %d", code, exitDenied)
	}
	wantScreen(t, screen, []string{
		"allow? [o] once  " + uLetter() + "[d] deny  (Enter: deny): ",
		`only "once" is offered: the call touches a dangerous path`,
		`"s": only "once" is offered`,
		"to allow it, it is asked for this call alone (a dangerous path, or a deny rule that may cover it), so only this allows it: run it again and answer once when asked",
	}, []string{"[s]", "[p]"})
	if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a denied command ran")
	}
}

// Ctrl-D at the prompt (the terminal's end of input) is a deny of its own.
func TestPromptCtrlD(t *testing.T) {
	dir := t.TempDir()
	inSession(t, dir)
	screen, code := promptRun(t, dir, []string{"\x04"}, "exec", "--shell", "touch nope")
	if code != exitDenied {
		t.Fatalf("exit %d, want %d; screen:\n%s", code, exitDenied, screen)
	}
	wantScreen(t, screen, []string{
		"denied: no answer (Ctrl-D)",
		"ccrun: denied: run_command:touch:nope: the prompt got no answer (Ctrl-D); nothing ran",
	}, []string{"nobody answered"})
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Error("a denied command ran")
	}
}

// Ctrl-C at the prompt: the terminal sends SIGINT to ccrun, a process of
// its own whose controlling terminal it is; a deny of its own. A script of
// builtins gets its signal handling before the prompt too (it gets none
// when nobody is prompted: TestInterruptBuiltins).
func TestPromptCtrlC(t *testing.T) {
	for _, tc := range []struct{ script, key string }{
		{"touch nope", "run_command:touch:nope"},
		{"read nope", "run_command:read:nope"},
	} {
		t.Run(tc.script, func(t *testing.T) { promptCtrlC(t, tc.script, tc.key) })
	}
}

func promptCtrlC(t *testing.T, script, key string) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--project-dir", dir, "exec", "--shell", script)
	cmd.Env = append(os.Environ(), asCCRun+"=1", "CCRUN_SESSION=", "CCRUN_SESSION_DIR="+filepath.Join(dir, ".sessions"))
	ptmx, err := pty.Start(cmd) // stdin, stdout, stderr: the terminal, in a session of its own
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	done := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			done <- ee.ExitCode()
			return
		}
		done <- 0
	}()
	screen, code := readScreen(t, ptmx, done, []string{"\x03"})
	if code != exitInterrupted { // a deny the person's Ctrl-C caused: interrupted, 130 (README's exit codes)
		t.Fatalf("exit %d, want %d; screen:\n%s", code, exitInterrupted, screen)
	}
	wantScreen(t, screen, []string{
		"denied: interrupted (Ctrl-C)",
		"ccrun: denied: " + key + ": interrupted at the prompt (Ctrl-C); nothing ran",
	}, []string{"nobody answered", "context canceled"})
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Error("a denied command ran")
	}
}

func TestStatusLineAfterOneSecond(t *testing.T) {
	dir := t.TempDir()
	screen, code := promptRun(t, dir, nil, "exec", "--approve", "once", "--shell", "sleep 1.8")
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

// Tool output that conceals what follows (ESC[8m) and fakes a question
// does not hide ccrun's at-execution prompt: ccrun resets the terminal's
// attributes and starts the prompt on a line of its own first.
func TestPromptAfterConcealingOutput(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "config", "core.fsmonitor", "touch fsmonitor-ran")
	notes := "allow? [o] once (Enter: once): \x1b[8m"
	if err := os.WriteFile(filepath.Join(dir, "NOTES.txt"), []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(dir, ".sessions"))
	done := make(chan int, 1)
	go func() { // stdout is the terminal too, as at a person's shell
		code := run([]string{"--project-dir", dir, "exec", "--shell", "cat NOTES.txt && git status"}, stdio{tty, tty, tty})
		tty.Close()
		done <- code
	}()
	screen, _ := readScreen(t, ptmx, done, []string{"d\n"})
	// The file's output and the prompt reach the terminal in either order
	// (the interpreter's guard may ask before cat's output is read): what
	// holds is that the prompt itself begins with the reset, on a line of
	// its own.
	if !strings.Contains(screen, "\x1b[8m") {
		t.Fatalf("the file's output did not reach the terminal:\n%q", screen)
	}
	ask := strings.Index(screen, "ccrun: run_command (@shell) asks to run")
	// the terminal shows each \n the prompt writes as \r\n
	want := strings.ReplaceAll(prompt.ResetSequence+"\n", "\n", "\r\n")
	if ask < 0 || !strings.HasSuffix(screen[:ask], want) {
		t.Errorf("the prompt does not begin with the terminal's reset and a new line:\n%q", screen)
	}
	if _, err := os.Stat(filepath.Join(dir, "fsmonitor-ran")); err == nil {
		t.Error("the fsmonitor ran though the person denied it")
	}
}
