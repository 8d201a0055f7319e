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
)

// TestWasmServerDefaultThroughCLI: by default a real ccrun sends a @wasm guest to
// the project's warm server, which it starts: the guest's exit code is
// ccrun's, a CPU-bound guest still ends at its timeout with exit 124 and
// the message, the server that a limit stopped a guest in ends, and the
// next run starts a new one. The socket is reachable by this user only.
func TestWasmServerDefaultThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ccrun and a guest")
	}
	w := newWarmCLI(t)
	run, ccrun, server := w.run, w.ccrun, w.server
	if stderr, code := ccrun("--", "x"); code != 3 {
		t.Fatalf("exit %d, want 3; stderr %q", code, stderr)
	}
	first := server()
	if first == 0 {
		t.Fatal("no warm server after a run")
	}
	fi, err := os.Stat(filepath.Join(run, "ccrun"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir %v (%v), want 0700", fi.Mode(), err)
	}
	if stderr, code := ccrun("--", "x"); code != 3 || server() != first {
		t.Fatalf("exit %d (stderr %q), server %d; want 3 from the same server %d", code, stderr, server(), first)
	}
	start := time.Now()
	stderr, code := ccrun("--timeout", "1s")
	if code != exitTimeout || !strings.Contains(stderr, "timeout") {
		t.Errorf("exit %d, stderr %q; want %d and the timeout said", code, stderr, exitTimeout)
	}
	t.Logf("a 1s timeout ended the run after %s", time.Since(start).Round(time.Millisecond))
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(first, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if state := procState(first); state == "Z" || state == "" {
			break // ended (a zombie until its new parent reaps it)
		}
		if time.Now().After(deadline) {
			stat, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(first), "stat"))
			wchan, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(first), "wchan"))
			t.Fatalf("server %d still runs after a guest it could not stop: stat %q, wchan %q", first, stat, wchan)
		}
	}
	if stderr, code := ccrun("--", "x"); code != 3 {
		t.Fatalf("exit %d, want 3; stderr %q", code, stderr)
	}
	if next := server(); next == 0 || next == first {
		t.Errorf("server %d after the retired %d, want a new one", next, first)
	}
}

// warmCLI is a real ccrun (bin; ccrun runs loopGuest's guest with it) for
// a project dir, with its own runtime directory run (the warm server's
// socket), cache and sessions (env); server returns the pid of the server
// listening for dir, 0 if none, and is asked to end with the test.
type warmCLI struct {
	dir, run, bin string
	env           []string
	ccrun         func(args ...string) (string, int)
	server        func() int
}

func newWarmCLI(t *testing.T) *warmCLI {
	t.Helper()
	w := &warmCLI{dir: t.TempDir()}
	run, err := os.MkdirTemp("", "ccrun-run-") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	w.run = run
	w.env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "CCRUN_SESSION_DIR="+filepath.Join(t.TempDir(), "s"),
		"XDG_RUNTIME_DIR="+run, "CCRUN_WASM_SERVER=")
	w.bin, w.ccrun = loopGuestBin(t, w.dir, w.env)
	w.server = func() int {
		locks, _ := filepath.Glob(filepath.Join(run, "ccrun", "wasm-*.sock.lock"))
		for _, l := range locks {
			b, _ := os.ReadFile(l)
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && syscall.Kill(pid, 0) == nil {
				if _, err := os.Stat(strings.TrimSuffix(l, ".lock")); err == nil {
					return pid
				}
			}
		}
		return 0
	}
	t.Cleanup(func() {
		if pid := w.server(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	return w
}

// procState is the state letter of process pid (R, S, Z, ...), "" if gone.
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces and parentheses
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return string(b[i+2])
	}
	return ""
}

// TestWasmInterruptedServer: Ctrl-C to a ccrun whose @wasm guest runs in
// the warm server. exec installs no signal handling for a @wasm call (its
// threads are a tenth of a run), so the signal ends ccrun at once; the
// server, which cannot stop a guest running without interrupt checks
// otherwise, sees its client go away and ends, and the next run starts a
// new one. Nothing of the interrupted run is left.
func TestWasmInterruptedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ccrun and a guest")
	}
	w := newWarmCLI(t)
	dir, env, bin, ccrun, server := w.dir, w.env, w.bin, w.ccrun, w.server
	if stderr, code := ccrun("--", "x"); code != 3 {
		t.Fatalf("exit %d, want 3; stderr %q", code, stderr)
	}
	first := server()
	if first == 0 {
		t.Fatal("no warm server after a run")
	}
	cmd := exec.Command(bin, "--project-dir", dir, "exec", "--approve", "once", "--wasm", "loop.wasm")
	cmd.Dir, cmd.Env = dir, env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The guest runs once the server burns CPU: wait for a tenth of a
	// second of it.
	for deadline, cpu0 := time.Now().Add(30*time.Second), procCPU(first); procCPU(first) < cpu0+10; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			ps, _ := exec.Command("ps", "-eo", "pid,ppid,stat,time,args").Output()
			t.Fatalf("the server %d never ran the guest: cpu %d\n%s", first, procCPU(first), ps)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Fatalf("ccrun interrupted: %v, want ended by SIGINT; stderr:\n%s", err, errb.String())
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if state := procState(first); state == "Z" || state == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d still runs the guest of a client that went away", first)
		}
	}
	if stderr, code := ccrun("--", "x"); code != 3 {
		t.Fatalf("exit %d, want 3; stderr %q", code, stderr)
	}
	if next := server(); next == 0 || next == first {
		t.Errorf("server %d after the retired %d, want a new one", next, first)
	}
}

// procCPU is the CPU time of process pid, all threads, in clock ticks.
func procCPU(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // state is f[0]; utime and stime fields 14, 15 of stat
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}
