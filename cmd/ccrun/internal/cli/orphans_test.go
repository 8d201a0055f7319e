package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/housekeep"
	"golang.org/x/sys/unix"
)

// Which helper processes gc ends: only this user's, only a worker whose
// parent is not the one that started it, only a refiller past its time.
func TestOrphaned(t *testing.T) {
	const me = 1000
	worker := func(parent string, ppid int) helperProc {
		env := []string{"PATH=/bin", housekeep.WasmWorkerEnv + "=1"}
		if parent != "" {
			env = append(env, housekeep.WasmWorkerParentEnv+"="+parent)
		}
		return helperProc{uid: me, euid: me, ppid: ppid, env: env, argv: []string{"ccrun"}}
	}
	refiller := func(age time.Duration) helperProc {
		return helperProc{uid: me, euid: me, ppid: 1, argv: []string{"ccrun", housekeep.RefillArg}, age: age}
	}
	other := worker("42", 1)
	other.uid, other.euid = 0, 0
	setuid := worker("42", 1)
	setuid.euid = 0
	for _, tc := range []struct {
		name string
		p    helperProc
		want bool
	}{
		{"worker under its ccrun", worker("42", 42), false},
		{"worker reparented to init", worker("42", 1), true},
		{"worker reparented to a subreaper", worker("42", 77), true},
		{"worker of an older ccrun, under its parent", worker("", 42), false},
		{"worker of an older ccrun, reparented", worker("", 1), true},
		{"another user's worker", other, false},
		{"a worker running set-uid", setuid, false},
		{"marker not 1", helperProc{uid: me, euid: me, ppid: 1, env: []string{housekeep.WasmWorkerEnv + "=0"}}, false},
		{"marker as a substring", helperProc{uid: me, euid: me, ppid: 1, env: []string{"X" + housekeep.WasmWorkerEnv + "=1"}}, false},
		{"young refiller", refiller(time.Minute), false},
		{"overdue refiller", refiller(time.Hour), true},
		{"refiller of unknown age", refiller(-1), false},
		{"a plain process", helperProc{uid: me, euid: me, ppid: 1, argv: []string{"sleep", "60"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := orphaned(tc.p, me, testEngines.Helpers); got != tc.want {
				t.Errorf("orphaned = %v, want %v", got, tc.want)
			}
		})
	}
}

// startMarked starts `sleep 60` with a worker's markers, as if ccrun
// process parent had started it.
func startMarked(t *testing.T, parent string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{housekeep.WasmWorkerEnv + "=1", housekeep.WasmWorkerParentEnv + "=" + parent}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// ccrun gc ends a planted orphan (a process marked as a worker of another
// parent) and leaves a worker under its own parent alone.
func TestGCEndsOrphan(t *testing.T) {
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	dir := t.TempDir()
	orphan := startMarked(t, "1")
	alive := startMarked(t, strconv.Itoa(os.Getpid()))
	// --dry-run lists it, and ends nothing.
	stdout, stderr, _ := ccrunIn(t, dir, "gc", "--dry-run")
	if want := "would end orphaned wasm worker " + strconv.Itoa(orphan.Process.Pid) + "\n"; !strings.Contains(stdout, want) {
		t.Errorf("gc --dry-run: stdout %q, want %q; stderr %q", stdout, want, stderr)
	}
	if strings.Contains(stdout, strconv.Itoa(alive.Process.Pid)) {
		t.Errorf("gc --dry-run lists the worker under its own parent: %q", stdout)
	}
	if err := orphan.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("gc --dry-run ended the orphan: %v", err)
	}
	// ccrun gc may fail later for want of a docker engine: the orphans come first.
	stdout, stderr, _ = ccrunIn(t, dir, "gc")
	want := "ended orphaned wasm worker " + strconv.Itoa(orphan.Process.Pid) + "\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout %q, want %q; stderr %q", stdout, want, stderr)
	}
	if strings.Contains(stdout, strconv.Itoa(alive.Process.Pid)) {
		t.Errorf("gc ended the worker under its own parent: %q", stdout)
	}
	err := orphan.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the orphan ended with %v, want SIGKILL", err)
	}
	if err := alive.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the worker under its own parent is gone: %v", err)
	}
}

// A worker started by a process that is not its parent any more exits at
// once (the check after start, for a parent that died before Pdeathsig
// took effect).
func TestWorkerChecksParent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{housekeep.WasmWorkerEnv + "=1", housekeep.WasmWorkerParentEnv + "=1"}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(errb.String(), "gone") {
		t.Errorf("worker with another parent: %v, stderr %q; want exit 125", err, errb.String())
	}
}

// buildCcrun builds this command into a temporary directory.
func buildCcrun(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ccrun")
	cmd := goCommand(nil, "build", "-o", bin, wholePkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

// workerOf waits (up to a minute) for the wasm worker child of pid.
func workerOf(t *testing.T, pid int) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			n, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if p, ok := readProc(n); ok && p.ppid == pid {
				if v, _ := envValue(p.env, housekeep.WasmWorkerEnv); v == "1" {
					return n
				}
			}
		}
	}
	t.Fatalf("no worker under ccrun %d after a minute", pid)
	return 0
}

// A real ccrun binary running an endless CPU-bound guest with
// --wasm-worker is killed with SIGKILL: its worker dies too (the kernel's
// parent-death signal), well within the generous bound polled here.
func TestWorkerDiesWithCcrun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ccrun and a guest")
	}
	bin := buildCcrun(t)
	dir := t.TempDir()
	loop := buildGuest(t, "package main\n\nfunc main() {\n\tn := 0\n\tfor {\n\t\tn++\n\t}\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "loop.wasm"), loop, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--project-dir", dir, "exec", "--approve", "once", "--wasm-worker", "--timeout", "10m", "--wasm", "loop.wasm")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "CCRUN_SESSION_DIR="+filepath.Join(t.TempDir(), "s"), housekeep.WasmServerEnv+"=0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	worker := workerOf(t, cmd.Process.Pid)
	fd, err := unix.PidfdOpen(worker, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	time.Sleep(200 * time.Millisecond) // the guest is running
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, 10_000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			t.Fatalf("the worker %d still runs 10 s after its ccrun was killed", worker)
		}
		break
	}
	t.Logf("the worker ended %s after its ccrun was killed", time.Since(killed).Round(time.Millisecond))
}
