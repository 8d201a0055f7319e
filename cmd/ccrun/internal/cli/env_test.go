package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/testimage"
)

// ccrunIn runs the CLI in dir, as a separate run each time (a fresh
// Runtime, the project allowlist read anew), and returns its output.
func ccrunIn(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"--project-dir", dir}, args...), stdio{strings.NewReader(""), &out, &errb})
	return out.String(), errb.String(), code
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A @docker capability through ccrun exec: a read-only mount, a project
// grant, and the grant counting in the next run.
func TestDockerCapability(t *testing.T) {
	testimage.Need(t)
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"data/in.txt": "from the host\n",
		".ccrun/capabilities/peek/capability.json": `{
  "name": "peek",
  "description": "Reads a mounted file and tries to write beside it",
  "environment": "@docker",
  "entry": {"image": "` + testimage.Name + `", "command": ["/bin/busybox", "sh", "-c", "cat /data/in.txt; echo x > /data/out.txt && echo wrote || echo read-only"]},
  "mounts": [{"host": "data", "guest": "/data"}],
  "limits": {"timeout": "60s", "memory": "64MiB"}
}`,
	})
	if err := os.Chmod(filepath.Join(dir, "data"), 0o777); err != nil { // writable for the container's user, were the mount rw
		t.Fatal(err)
	}
	if _, stderr, code := ccrunIn(t, dir, "exec", "peek"); code != exitDenied || !strings.Contains(stderr, "capability:peek") {
		t.Fatalf("unapproved: exit %d, stderr %q; want %d naming the key", code, stderr, exitDenied)
	}
	out, stderr, code := ccrunIn(t, dir, "exec", "--approve", "project", "peek")
	if code != 0 {
		t.Fatalf("approved: exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(out, "from the host") || !strings.Contains(out, "read-only") {
		t.Errorf("output %q: want the mounted file read and the write refused", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "out.txt")); err == nil {
		t.Error("the container wrote through a read-only mount")
	}
	// The next run is allowed by the project grant.
	if out, stderr, code := ccrunIn(t, dir, "exec", "peek"); code != 0 || !strings.Contains(out, "from the host") {
		t.Fatalf("second run: exit %d, out %q, stderr %q", code, out, stderr)
	}
	out, _, _ = ccrunIn(t, dir, "check", "--json", "peek")
	if !strings.Contains(out, `"layer": "project"`) || !strings.Contains(out, `"environment": "@docker"`) {
		t.Errorf("check: %s", out)
	}
}

// goEnv is the environment the test binary started with. The go command
// runs in it: a test that fakes HOME or XDG_CACHE_HOME (fakeHome) would
// otherwise send go build to an empty build and module cache.
var goEnv = os.Environ()

// goCommand is `go args...` in goEnv, with extra variables after it.
func goCommand(extra []string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Env = append(slices.Clip(goEnv), extra...)
	return cmd
}

// buildGuest compiles a Go program for wasip1.
func buildGuest(t *testing.T, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"main.go": src, "go.mod": "module guest\n\ngo 1.26\n"})
	out := filepath.Join(dir, "guest.wasm")
	cmd := goCommand([]string{"GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod"}, "build", "-o", out, ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build guest: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A @wasm capability through ccrun exec, as separate processes: a mount,
// a project grant, the grant surviving into the next process.
func TestWasmCapabilityWithMount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a guest")
	}
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	guest := buildGuest(t, `package main

import (
	"fmt"
	"os"
)

func main() {
	b, err := os.ReadFile("/data/in.txt")
	if err != nil {
		fmt.Println("read:", err)
		os.Exit(3)
	}
	fmt.Print(string(b))
	if err := os.WriteFile("/data/out.txt", []byte("x"), 0o644); err != nil {
		fmt.Println("write refused")
	}
	if _, err := os.ReadFile("/data/../../etc/passwd"); err == nil {
		fmt.Println("ESCAPED")
	}
}
`)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"data/in.txt": "mounted\n",
		".ccrun/capabilities/reader/capability.json": `{
  "name": "reader",
  "description": "Reads a mounted file",
  "environment": "@wasm",
  "entry": {"module": "reader.wasm"},
  "mounts": [{"host": "data", "guest": "/data"}]
}`,
	})
	if err := os.WriteFile(filepath.Join(dir, ".ccrun/capabilities/reader/reader.wasm"), guest, 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Real processes: the test binary runs as ccrun (TestMain's testscript
	// hook dispatches on argv[0]).
	bin := filepath.Join(t.TempDir(), "ccrun")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	runProc := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"--project-dir", dir}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	if out, code := runProc("exec", "reader"); code != exitDenied {
		t.Fatalf("unapproved: exit %d: %s", code, out)
	}
	out, code := runProc("exec", "--approve", "project", "reader")
	if code != 0 || !strings.Contains(out, "mounted") || !strings.Contains(out, "write refused") || strings.Contains(out, "ESCAPED") {
		t.Fatalf("approved: exit %d: %s", code, out)
	}
	if out, code := runProc("exec", "reader"); code != 0 || !strings.Contains(out, "mounted") {
		t.Fatalf("second process: exit %d: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "out.txt")); err == nil {
		t.Error("the guest wrote through a read-only mount")
	}
}

// --wasm-worker runs the guest in a killable process: an endless loop is
// stopped at the timeout, and the tool's exit is 124.
func TestWasmWorkerTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a guest")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	dir := t.TempDir()
	loop := buildGuest(t, "package main\n\nfunc main() {\n\tn := 0\n\tfor {\n\t\tn++\n\t}\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "loop.wasm"), loop, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, worker := range []bool{false, true} {
		args := []string{"exec", "--approve", "once", "--timeout", "1s", "--wasm", filepath.Join(dir, "loop.wasm")}
		if worker {
			args = append(args, "--wasm-worker")
		}
		_, stderr, code := ccrunIn(t, dir, args...)
		if code != exitTimeout {
			t.Errorf("worker=%v: exit %d, want %d; stderr %q", worker, code, exitTimeout, stderr)
		}
		// The words of @shell's timeout (testdata/script/output.txtar).
		if want := "ccrun: run_wasm stopped: it ran past its timeout and was killed\n"; !strings.HasSuffix(stderr, want) {
			t.Errorf("worker=%v: stderr %q, want it to end with %q", worker, stderr, want)
		}
	}
}

// CCRUN_WASM_SERVER=1: the first `ccrun exec --wasm` starts the warm server
// (a detached ccrun), later ones run in it; output and exit codes are the
// tool's, and a timeout still ends the guest.
func TestWasmServerThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a guest")
	}
	runtimeDir := t.TempDir()
	if err := os.Chmod(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ccrun")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	probeSrc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "wasm", "probe", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	mod := buildGuest(t, string(probeSrc))
	if err := os.WriteFile(filepath.Join(dir, "probe.wasm"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CCRUN_WASM_SERVER=1", "XDG_RUNTIME_DIR="+runtimeDir,
		"XDG_CACHE_HOME="+t.TempDir(), "CCRUN_SESSION_DIR="+filepath.Join(t.TempDir(), "s"))
	runProc := func(stdin string, args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"--project-dir", dir, "exec", "--approve", "once", "--wasm", filepath.Join(dir, "probe.wasm")}, args...)...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}
	t.Cleanup(func() { // stop the server this test started
		if pid, err := os.ReadFile(filepath.Join(runtimeDir, "ccrun", "wasm.sock.lock")); err == nil {
			_ = exec.Command("kill", strings.TrimSpace(string(pid))).Run()
		}
	})
	for i := 0; i < 3; i++ {
		if out, code := runProc("", "--", "exit", "3"); code != 3 {
			t.Fatalf("run %d: exit %d, want 3: %s", i, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(runtimeDir, "ccrun", "wasm.sock")); err != nil {
		t.Errorf("no server socket after three runs: %v", err)
	}
	if out, code := runProc("through the server\n", "--", "cat"); code != 0 || out != "through the server\n" {
		t.Errorf("cat: exit %d, out %q", code, out)
	}
	if out, code := runProc("", "--timeout", "1s", "--", "forever"); code != exitTimeout {
		t.Errorf("forever: exit %d, want %d: %s", code, exitTimeout, out)
	}
}

// Hostile and broken modules through the CLI, in process and in the
// worker: a module declaring four billion locals (which made wazero's
// decoder allocate until the process died) and a file that is not wasm are
// refused with exit 64 and a message; a guest growing a table by four
// billion elements is told no (table.grow returns -1) and exits 0; an
// endless recursion is a trap, exit 134.
func TestHostileModulesThroughCLI(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	dir := t.TempDir()
	section := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	head := []byte("\x00asm\x01\x00\x00\x00")
	start := func(tables []byte, code ...byte) []byte {
		out := cat(head, section(1, 1, 0x60, 0, 0), section(3, 1, 0))
		if tables != nil {
			out = append(out, tables...)
		}
		return cat(out, section(7, append([]byte{1, 6}, append([]byte("_start"), 0, 0)...)...),
			section(10, append([]byte{1, byte(len(code))}, code...)...))
	}
	files := map[string][]byte{
		// the code of _start, locals first: 1 group of 0xfffffff0 i32
		"locals.wasm": start(nil, 1, 0xf0, 0xff, 0xff, 0xff, 0x0f, 0x7f, 0x0b),
		// no locals; ref.null func; i32.const -16; table.grow 0;
		// i32.const -1; i32.ne; if unreachable end
		"grow.wasm": start(section(4, 1, 0x70, 0, 0), 0, 0xd0, 0x70, 0x41, 0x70, 0xfc, 0x0f, 0, 0x41, 0x7f, 0x47, 0x04, 0x40, 0x00, 0x0b, 0x0b),
		// no locals; call 0 (itself)
		"recurse.wasm": start(nil, 0, 0x10, 0, 0x0b),
		"text.wasm":    []byte("#!/bin/sh\necho not wasm\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file   string
		code   int
		stderr string
	}{
		{"locals.wasm", exitUsage, "4294967280 locals"},
		{"text.wasm", exitUsage, "not a wasm module"},
		{"grow.wasm", 0, ""},
		{"recurse.wasm", 134, "stack overflow"},
	} {
		for _, worker := range []bool{false, true} {
			args := []string{"exec", "--approve", "once", "--wasm", filepath.Join(dir, tc.file)}
			if worker {
				args = append(args, "--wasm-worker")
			}
			_, stderr, code := ccrunIn(t, dir, args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("%s (worker %v): exit %d, stderr %q; want %d and %q", tc.file, worker, code, stderr, tc.code, tc.stderr)
			}
		}
	}
}
