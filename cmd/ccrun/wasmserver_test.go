package main

import (
	"bytes"
	"os"
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
	dir := t.TempDir()
	run, err := os.MkdirTemp("", "ccrun-run-") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "CCRUN_SESSION_DIR="+filepath.Join(t.TempDir(), "s"),
		"XDG_RUNTIME_DIR="+run, "CCRUN_WASM_SERVER=")
	ccrun := loopGuest(t, dir, env)
	// server returns the pid of the server listening for dir, 0 if none.
	server := func() int {
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
		if pid := server(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	})
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
