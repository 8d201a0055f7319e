package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/audit"
	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/prompt"
	"github.com/ccrun/ccrun/internal/trust"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
)

// deadDocker points DOCKER_HOST at a unix socket nobody listens on, so
// that every @docker step finds no engine, quickly.
func deadDocker(t *testing.T) {
	t.Helper()
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
}

// exitProject is a project directory with files, for the exit-code cases.
func exitProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestExitCodes runs each case of the README's exit-code table that the
// issue lists through run, as ccrun's main does.
func TestExitCodes(t *testing.T) {
	deadDocker(t)
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	lint := `{"allowlist": {"run_command:git": "AlwaysThisProject", "nosuch:thing": "AlwaysThisProject"}}`
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		want  int
		// stderr, when set, is a text the report must hold
		stderr string
	}{
		{name: "no docker engine", args: []string{"exec", "--approve", "once", "--docker", "busybox", "--", "true"},
			want: exitInternal, stderr: "cannot reach the docker engine"},
		{name: "docker memory below what a container needs", args: []string{"exec", "--approve", "once", "--memory", "1KiB", "--docker", "busybox", "--", "true"},
			want: exitUsage, stderr: "memory limit"},
		{name: "capability new without --env", args: []string{"capability", "new", "x"}, want: exitUsage, stderr: "env"},
		{name: "allowlist add without --scope", args: []string{"allowlist", "add", "capability:x"}, want: exitUsage, stderr: "scope"},
		{name: "missing --wasm file", args: []string{"exec", "--approve", "once", "--wasm", "nosuch.wasm"}, want: exitUsage, stderr: "nosuch.wasm"},
		{name: "missing mount dir", files: map[string]string{"hello.wasm": "\x00asm\x01\x00\x00\x00"},
			args: []string{"exec", "--approve", "once", "--wasm", "hello.wasm", "--mount", "nosuch:/data"}, want: exitUsage, stderr: "nosuch"},
		{name: "missing mount dir on docker", args: []string{"exec", "--approve", "once", "--docker", "busybox", "--mount", "nosuch:/data", "--", "true"},
			want: exitUsage, stderr: "nosuch"},
		{name: "allowlist lint problems", files: map[string]string{"ccrun.json": lint}, args: []string{"allowlist", "lint"},
			want: exitConfig, stderr: "ceiling violation"},
		{name: "allowlist add of a shell key for the project", args: []string{"allowlist", "add", "run_command:make", "--scope", "project"},
			want: exitUsage, stderr: "ceiling violation"},
		{name: "gc with no engine", args: []string{"gc"}, want: exitOK, stderr: "containers not collected"},
		{name: "gc --json with no engine", args: []string{"gc", "--json"}, want: exitOK},
		{name: "gc --dry-run with no engine", args: []string{"gc", "--dry-run"}, want: exitOK, stderr: "docker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := exitProject(t, tc.files)
			var out, errb bytes.Buffer
			code := run(append([]string{"--project-dir", dir}, tc.args...), stdio{strings.NewReader(""), &out, &errb})
			if code != tc.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.want, errb.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q, want it to hold %q", errb.String(), tc.stderr)
			}
		})
	}
}

// TestExitCodeClasses checks that exitCode goes by the library's classes:
// any error of a class, however wrapped, gets the class's code.
func TestExitCodeClasses(t *testing.T) {
	t.Parallel()
	violation := ceiling.Check(ceiling.Shell, "run_command:git", ceiling.AlwaysThisProject)
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"invalid argument", fmt.Errorf("x: %w", ccrun.ErrInvalidArgument), exitUsage},
		{"invalid call", fmt.Errorf("x: %w", ccrun.ErrInvalidCall), exitUsage},
		{"not found", fmt.Errorf("x: %w", capabilities.ErrNotFound), exitUsage},
		{"invalid input", fmt.Errorf("x: %w", capabilities.ErrInvalidInput), exitUsage},
		{"usage", usagef("bad flag"), exitUsage},
		{"config", fmt.Errorf("x: %w", ccrun.ErrInvalidConfig), exitConfig},
		{"manifest", &capabilities.ManifestError{File: "capability.json", Errors: []*capabilities.FieldError{{Message: "bad", Err: ceiling.ErrUnknownEnvironment}}}, exitConfig},
		{"denied", fmt.Errorf("x: %w", ccrun.ErrPermissionDenied), exitDenied},
		{"ceiling violation", fmt.Errorf("x: %w", violation), exitDenied},
		{"ceiling violation as a usage error", usageError{violation}, exitUsage},
		{"changed", fmt.Errorf("x: %w", capabilities.ErrChanged), exitDenied},
		{"timeout", fmt.Errorf("x: %w", ccrun.ErrTimeout), exitTimeout},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), exitInterrupted},
		{"unavailable", fmt.Errorf("x: %w", ccrun.ErrUnavailable), exitInternal},
		{"refused by the engine", fmt.Errorf("@docker: %w", ctr.NewError(ctr.ErrRefused, errdefs.ErrPermissionDenied, "docker: ping")), exitInternal},
		{"interrupted at the prompt", fmt.Errorf("prompt: %w", prompt.ErrInterrupted), exitInterrupted},
		{"denied by Ctrl-C at the prompt", &permission.DeniedError{Decision: &permission.Decision{}, Err: fmt.Errorf("prompt: %w", prompt.ErrInterrupted)}, exitInterrupted},
		{"denied: the prompt ran out of time", &permission.DeniedError{Decision: &permission.Decision{}, Err: fmt.Errorf("prompt: %w", context.DeadlineExceeded)}, exitDenied},
		{"unsafe audit log", fmt.Errorf("x: %w", audit.ErrUnsafe), exitDenied},
		{"unsafe trust store", fmt.Errorf("x: %w", trust.ErrUnsafe), exitDenied},
		{"no class", errors.New("disk on fire"), exitInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := exitCode(nil, tc.err); got != tc.want {
				t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		res  job.Result
		want int
	}{
		{job.Result{Reason: job.Exit, ExitCode: 3}, 3},
		{job.Result{Reason: job.Timeout, ExitCode: job.TimeoutExit}, exitTimeout},
		{job.Result{Reason: job.Cancelled, ExitCode: job.KilledExitCode}, exitInterrupted},
		{job.Result{Reason: job.Memory, ExitCode: job.KilledExitCode}, exitKilled},
		{job.Result{Reason: job.OutputCap}, exitKilled},
	} {
		if got := exitCode(&tc.res, nil); got != tc.want {
			t.Errorf("exitCode(%s, exit %d) = %d, want %d", tc.res.Reason, tc.res.ExitCode, got, tc.want)
		}
	}
}

// TestInterruptExits130 interrupts a ccrun running a @shell tool, as a
// person's Ctrl-C does: the tool is stopped and ccrun exits 130.
func TestInterruptExits130(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	cmd := exec.Command(exe, "--project-dir", dir, "exec", "--approve", "once", "--shell", "touch started; sleep 60")
	cmd.Env = append(os.Environ(), asCCRun+"=1", "CCRUN_SESSION_DIR="+filepath.Join(dir, ".sessions"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for { // the tool runs once the file exists; the test's deadline bounds the wait
		if _, err := os.Stat(started); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("ccrun interrupted: %v, want exit %d; stderr:\n%s", err, exitInterrupted, errb.String())
	}
}

// TestInterruptBuiltins interrupts a ccrun running a @shell script of
// builtins, which starts no program: exec installs no signal handling for
// it (os/signal's threads are a fifth of a new process), so Ctrl-C ends
// ccrun by the signal's default action, and the loop with it; a shell sees
// 130 as for any program Ctrl-C ends. Once the script starts a program,
// the handling is in first, and ccrun stops the program and exits 130.
func TestInterruptBuiltins(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		script string
		exit   int // 0: ended by SIGINT
	}{
		{"echo started; while :; do :; done", 0},
		{"echo started; while :; do sleep 60; done", exitInterrupted},
	} {
		dir := t.TempDir()
		cmd := exec.Command(exe, "--project-dir", dir, "exec", "--approve", "once", "--shell", tc.script)
		cmd.Env = append(os.Environ(), asCCRun+"=1", "CCRUN_SESSION_DIR="+filepath.Join(dir, ".sessions"))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if line != "started\n" {
			t.Fatalf("%q: read %q, %v; stderr:\n%s", tc.script, line, err, errb.String())
		}
		time.Sleep(50 * time.Millisecond) // into the loop (and the sleep)
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%q: ccrun interrupted: %v; stderr:\n%s", tc.script, err, errb.String())
		}
		ws := ee.Sys().(syscall.WaitStatus)
		switch {
		case tc.exit == 0 && !(ws.Signaled() && ws.Signal() == syscall.SIGINT):
			t.Errorf("%q: %v, want ended by SIGINT; stderr:\n%s", tc.script, err, errb.String())
		case tc.exit != 0 && ee.ExitCode() != tc.exit:
			t.Errorf("%q: %v, want exit %d; stderr:\n%s", tc.script, err, tc.exit, errb.String())
		}
	}
}
